package api

import (
	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Health probes between the wire and the domain (job/probes.go).

func probeFromPB(p *pb.Probe) *job.Probe {
	if p == nil {
		return nil
	}
	out := &job.Probe{
		InitialDelaySeconds: p.GetInitialDelaySeconds(), PeriodSeconds: p.GetPeriodSeconds(), TimeoutSeconds: p.GetTimeoutSeconds(),
		SuccessThreshold: p.GetSuccessThreshold(), FailureThreshold: p.GetFailureThreshold(),
	}
	switch h := p.GetHandler().(type) {
	case *pb.Probe_Exec:
		out.Exec = &job.ExecAction{Command: h.Exec.GetCommand()}
	case *pb.Probe_TcpSocket:
		out.TCPSocket = &job.TCPSocketAction{Port: h.TcpSocket.GetPort()}
	case *pb.Probe_HttpGet:
		g := &job.HTTPGetAction{Path: h.HttpGet.GetPath(), Port: h.HttpGet.GetPort(), Scheme: h.HttpGet.GetScheme()}
		for _, hd := range h.HttpGet.GetHeaders() {
			g.Headers = append(g.Headers, job.HTTPHeader{Name: hd.GetName(), Value: hd.GetValue()})
		}
		out.HTTPGet = g
	}
	return out
}

func probeToPB(p *job.Probe) *pb.Probe {
	if p == nil {
		return nil
	}
	out := &pb.Probe{
		InitialDelaySeconds: p.InitialDelaySeconds, PeriodSeconds: p.PeriodSeconds, TimeoutSeconds: p.TimeoutSeconds,
		SuccessThreshold: p.SuccessThreshold, FailureThreshold: p.FailureThreshold,
	}
	switch {
	case p.Exec != nil:
		out.Handler = &pb.Probe_Exec{Exec: &pb.ExecAction{Command: p.Exec.Command}}
	case p.TCPSocket != nil:
		out.Handler = &pb.Probe_TcpSocket{TcpSocket: &pb.TCPSocketAction{Port: p.TCPSocket.Port}}
	case p.HTTPGet != nil:
		g := &pb.HTTPGetAction{Path: p.HTTPGet.Path, Port: p.HTTPGet.Port, Scheme: p.HTTPGet.Scheme}
		for _, hd := range p.HTTPGet.Headers {
			g.Headers = append(g.Headers, &pb.HTTPHeader{Name: hd.Name, Value: hd.Value})
		}
		out.Handler = &pb.Probe_HttpGet{HttpGet: g}
	}
	return out
}
