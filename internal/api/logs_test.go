package api

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestGetJobLogsReadsTheTenantsNamespace(t *testing.T) {
	st := newFakeStore()
	j := withTail(job.Job{Tenant: "a", Name: "j", UID: "u1"})
	st.jobs = []job.Job{j}
	k := &fakeKube{logsBody: "step 1\n"}
	srv := NewJobServer(Deps{Store: st, Kube: k, NamespacePrefix: "ty-"})
	ctx := auth.WithAccess(context.Background(), auth.Access{TenantID: "a", Tenant: tenant.Tenant{ID: "a", Namespace: "legacy-a"}})
	stream := &fakeStream[httpbody.HttpBody]{ctx: ctx}
	require.NoError(t, srv.GetJobLogs(&pb.GetJobLogsRequest{Name: "tenants/a/jobs/j", Replica: "worker-0"}, stream))
	require.Equal(t, "legacy-a", k.logsNS, "the tenant's namespace, not prefix+id")
	require.Equal(t, "step 1\n", string(stream.got()[0].GetData()))

	// The pod gone: the kept tail.
	k.logsBody = ""
	stream = &fakeStream[httpbody.HttpBody]{ctx: ctx}
	require.NoError(t, srv.GetJobLogs(&pb.GetJobLogsRequest{Name: "tenants/a/jobs/j", Replica: "worker-0"}, stream))
	require.Equal(t, "Traceback\nboom\n", string(stream.got()[0].GetData()))
}

// A job's log is read in the cluster that runs it; a cluster the server
// has no credentials for is FAILED_PRECONDITION naming it and the flag,
// unless a tail was kept. Another tenant's job is not found, whichever
// cluster it runs in.
func TestGetJobLogsFromTheJobsCluster(t *testing.T) {
	st := newFakeStore()
	inB := job.Job{Tenant: "a", Name: "in-b", UID: "u1"}
	inB.Status.Cluster = "b"
	inB.Status.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, Pod: "in-b-worker-0", State: job.ReplicaRunning}}
	inC := inB
	inC.Name, inC.UID, inC.Status.Cluster = "in-c", "u2", "c"
	inC.Status.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, Pod: "in-c-worker-0", State: job.ReplicaRunning}}
	keptC := withTail(job.Job{Tenant: "a", Name: "kept-c", UID: "u3"})
	keptC.Status.Cluster = "c"
	other := inB
	other.Tenant, other.Name, other.UID = "z", "theirs", "u4"
	st.jobs = []job.Job{inB, inC, keptC, other}
	k := &fakeKube{logsBody: "step 1\n", noCluster: "c"}
	srv := NewJobServer(Deps{Store: st, Kube: k})
	ctx := auth.WithAccess(context.Background(), auth.Access{TenantID: "a", Tenant: tenant.Tenant{ID: "a", Namespace: "ty-a"}})
	logs := func(name string) (string, error) {
		stream := &fakeStream[httpbody.HttpBody]{ctx: ctx}
		err := srv.GetJobLogs(&pb.GetJobLogsRequest{Name: name, Replica: "worker-0"}, stream)
		var out string
		for _, b := range stream.got() {
			out += string(b.GetData())
		}
		return out, err
	}

	got, err := logs("tenants/a/jobs/in-b")
	require.NoError(t, err)
	require.Equal(t, "step 1\n", got)
	require.Equal(t, "b", k.logsCluster, "read in the job's cluster")
	require.Equal(t, "ty-a", k.logsNS)

	_, err = logs("tenants/a/jobs/in-c")
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), `cluster "c"`)
	require.Contains(t, status.Convert(err).Message(), "--cluster-kubeconfig c=")

	got, err = logs("tenants/a/jobs/kept-c")
	require.NoError(t, err, "the kept tail needs no cluster")
	require.Equal(t, "Traceback\nboom\n", got)

	_, err = logs("tenants/a/jobs/theirs")
	require.Equal(t, codes.NotFound, Code(err), "another tenant's job, though it runs in b too")
}

// A Kubernetes failure reading a log is UNAVAILABLE, and what the API
// server said (its identity, its RBAC, the cluster's address) stays in the
// server's log.
func TestGetJobLogsHidesKubernetesErrors(t *testing.T) {
	st := newFakeStore()
	st.jobs = []job.Job{withTail(job.Job{Tenant: "a", Name: "j", UID: "u1"})}
	k := &fakeKube{logsErr: errors.New(`pods "j-worker-0" is forbidden: User "system:serviceaccount:trainyard:trainyard-api" cannot get resource "pods/log" at https://10.0.0.1:6443`)}
	srv := NewJobServer(Deps{Store: st, Kube: k})
	ctx := auth.WithAccess(context.Background(), auth.Access{TenantID: "a", Tenant: tenant.Tenant{ID: "a", Namespace: "ty-a"}})
	err := srv.GetJobLogs(&pb.GetJobLogsRequest{Name: "tenants/a/jobs/j", Replica: "worker-0"}, &fakeStream[httpbody.HttpBody]{ctx: ctx})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	msg := status.Convert(err).Message()
	require.Contains(t, msg, "j-worker-0")
	for _, leak := range []string{"serviceaccount", "10.0.0.1", "forbidden"} {
		require.NotContains(t, strings.ToLower(msg), leak)
	}
}

func TestTailLines(t *testing.T) {
	log := "a\nb\nc\n"
	require.Equal(t, log, tailLines(log, 0))
	require.Equal(t, "c\n", tailLines(log, 1))
	require.Equal(t, "b\nc\n", tailLines(log, 2))
	require.Equal(t, log, tailLines(log, 10))
	require.Equal(t, "c", tailLines("a\nb\nc", 1))
}

func TestCopyChunks(t *testing.T) {
	var got []string
	err := copyChunks(strings.NewReader("hello"), func(b []byte) error { got = append(got, string(b)); return nil })
	require.NoError(t, err)
	require.Equal(t, []string{"hello"}, got)
	err = copyChunks(io.MultiReader(strings.NewReader("x"), errReader{}), func([]byte) error { return nil })
	require.EqualError(t, err, "connection reset", "GetJobLogs turns it into UNAVAILABLE (logsError)")

	srv := NewJobServer(Deps{})
	err = srv.logsError(context.Background(), "a", "j-worker-0", "log stream ended", err)
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.NotContains(t, status.Convert(err).Message(), "connection reset")
	gone := status.Error(codes.Canceled, "client went away")
	require.Equal(t, gone, srv.logsError(context.Background(), "a", "j-worker-0", "log stream ended", gone), "a failed send passes as it is")
}

func TestPickReplica(t *testing.T) {
	j := job.Job{
		Name: "mnist",
		Spec: job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Chief, Count: 1}, {Type: job.Worker, Count: 2}}},
		Status: job.Status{Replicas: []job.ReplicaStatus{
			{Type: job.Chief, Index: 0, Pod: "mnist-chief-0"},
			{Type: job.Worker, Index: 0, Pod: "mnist-worker-0"},
		}},
	}
	r, err := pickReplica(j, "")
	require.NoError(t, err)
	require.Equal(t, "mnist-chief-0", r.Pod, "the chief by default")
	r, err = pickReplica(j, "worker-1")
	require.NoError(t, err)
	require.Equal(t, job.ReplicaStatus{Type: job.Worker, Index: 1}, r, "declared, not started")
	_, err = pickReplica(j, "worker-2")
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = pickReplica(j, "gpu-0")
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
