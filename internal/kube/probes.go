package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainyard/trainyard/internal/job"
)

// probe renders a replica's probe (job/probes.go) as Kubernetes takes it;
// nil for none. Zero numbers stay zero: the API server fills in its own
// defaults, as it does for a probe written by hand.
func probe(p *job.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	out := &corev1.Probe{
		InitialDelaySeconds: p.InitialDelaySeconds,
		PeriodSeconds:       p.PeriodSeconds,
		TimeoutSeconds:      p.TimeoutSeconds,
		SuccessThreshold:    p.SuccessThreshold,
		FailureThreshold:    p.FailureThreshold,
	}
	switch {
	case p.Exec != nil:
		out.Exec = &corev1.ExecAction{Command: slices.Clone(p.Exec.Command)}
	case p.TCPSocket != nil:
		out.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.TCPSocket.Port)}
	case p.HTTPGet != nil:
		h := &corev1.HTTPGetAction{Path: p.HTTPGet.Path, Port: intstr.FromInt32(p.HTTPGet.Port), Scheme: corev1.URIScheme(p.HTTPGet.Scheme)}
		for _, hd := range p.HTTPGet.Headers {
			h.HTTPHeaders = append(h.HTTPHeaders, corev1.HTTPHeader{Name: hd.Name, Value: hd.Value})
		}
		out.HTTPGet = h
	}
	return out
}

// ready reports whether the replica container is ready: its readiness
// probe passes (or it has none and is running), as the kubelet reports it.
func ready(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ContainerName {
			return cs.Ready
		}
	}
	return false
}
