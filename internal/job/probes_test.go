package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestValidateProbes(t *testing.T) {
	const p = "spec.replicas[1]"
	tcp := func() *Probe { return &Probe{TCPSocket: &TCPSocketAction{Port: 2222}} }
	for name, tc := range map[string]struct {
		mutate func(r *ReplicaSpec)
		want   []string
	}{
		"tcp readiness on the TF port": {func(r *ReplicaSpec) { r.ReadinessProbe = tcp() }, nil},
		"all three, every handler": {func(r *ReplicaSpec) {
			r.LivenessProbe = &Probe{HTTPGet: &HTTPGetAction{Path: "/healthz", Port: 8080, Scheme: "HTTPS", Headers: []HTTPHeader{{Name: "X-Probe", Value: "1"}}},
				InitialDelaySeconds: 30, PeriodSeconds: 10, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 5}
			r.ReadinessProbe = &Probe{TCPSocket: &TCPSocketAction{Port: 2222}, SuccessThreshold: 2}
			r.StartupProbe = &Probe{Exec: &ExecAction{Command: []string{"cat", "/tmp/started"}}, FailureThreshold: 60}
		}, nil},
		"no handler": {func(r *ReplicaSpec) { r.LivenessProbe = &Probe{PeriodSeconds: 5} }, []string{p + ".livenessProbe"}},
		"two handlers": {func(r *ReplicaSpec) {
			r.ReadinessProbe = &Probe{TCPSocket: &TCPSocketAction{Port: 1}, Exec: &ExecAction{Command: []string{"true"}}}
		}, []string{p + ".readinessProbe"}},
		"exec without command":  {func(r *ReplicaSpec) { r.StartupProbe = &Probe{Exec: &ExecAction{}} }, []string{p + ".startupProbe.exec.command"}},
		"tcp port out of range": {func(r *ReplicaSpec) { r.ReadinessProbe = &Probe{TCPSocket: &TCPSocketAction{Port: 70000}} }, []string{p + ".readinessProbe.tcpSocket.port"}},
		"http port missing":     {func(r *ReplicaSpec) { r.LivenessProbe = &Probe{HTTPGet: &HTTPGetAction{Path: "/"}} }, []string{p + ".livenessProbe.httpGet.port"}},
		"http path relative":    {func(r *ReplicaSpec) { r.LivenessProbe = &Probe{HTTPGet: &HTTPGetAction{Path: "healthz", Port: 80}} }, []string{p + ".livenessProbe.httpGet.path"}},
		"http scheme unknown":   {func(r *ReplicaSpec) { r.LivenessProbe = &Probe{HTTPGet: &HTTPGetAction{Port: 80, Scheme: "FTP"}} }, []string{p + ".livenessProbe.httpGet.scheme"}},
		"http header name bad": {func(r *ReplicaSpec) {
			r.LivenessProbe = &Probe{HTTPGet: &HTTPGetAction{Port: 80, Headers: []HTTPHeader{{Name: "ok"}, {Name: "bad name"}}}}
		}, []string{p + ".livenessProbe.httpGet.headers[1].name"}},
		"negative delay":                       {func(r *ReplicaSpec) { pr := tcp(); pr.InitialDelaySeconds = -1; r.ReadinessProbe = pr }, []string{p + ".readinessProbe.initialDelaySeconds"}},
		"period too long":                      {func(r *ReplicaSpec) { pr := tcp(); pr.PeriodSeconds = 3601; r.ReadinessProbe = pr }, []string{p + ".readinessProbe.periodSeconds"}},
		"failure threshold too high":           {func(r *ReplicaSpec) { pr := tcp(); pr.FailureThreshold = 101; r.StartupProbe = pr }, []string{p + ".startupProbe.failureThreshold"}},
		"liveness success threshold must be 1": {func(r *ReplicaSpec) { pr := tcp(); pr.SuccessThreshold = 2; r.LivenessProbe = pr }, []string{p + ".livenessProbe.successThreshold"}},
		"startup success threshold must be 1":  {func(r *ReplicaSpec) { pr := tcp(); pr.SuccessThreshold = 3; r.StartupProbe = pr }, []string{p + ".startupProbe.successThreshold"}},
	} {
		t.Run(name, func(t *testing.T) {
			j := valJob()
			tc.mutate(valWorker(j))
			var fields []string
			for _, v := range Validate(j) {
				fields = append(fields, v.Field)
				require.NotEmpty(t, v.Description, v.Field)
			}
			require.Empty(t, cmp.Diff(tc.want, fields))
		})
	}
}

func TestDefaultProbePort(t *testing.T) {
	s := Spec{Replicas: []ReplicaSpec{{Type: Worker, Image: "tf", Port: 3333, ReadinessProbe: &Probe{TCPSocket: &TCPSocketAction{}}},
		{Type: PS, Image: "tf", LivenessProbe: &Probe{TCPSocket: &TCPSocketAction{}}}}}
	s.Default()
	require.Equal(t, int32(3333), s.Replicas[0].ReadinessProbe.TCPSocket.Port, "a TCP probe without a port probes the replica's port")
	require.Equal(t, int32(DefaultPort), s.Replicas[1].LivenessProbe.TCPSocket.Port, "after the replica's port defaulted")
}
