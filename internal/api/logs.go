package api

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// GetJobLogs streams a replica's log from Kubernetes while its pod exists,
// and the tail the worker kept in Postgres once it is gone. The pod is read
// in the cluster that runs the job (status.cluster); a cluster this server
// has no credentials for is FAILED_PRECONDITION unless a tail was kept.
// Access is the tenant's, as for every job read: the job is looked up in
// the caller's tenant, and the pod in that tenant's namespace.
func (s *JobServer) GetJobLogs(req *pb.GetJobLogsRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	tenantID, name, err := parseJob("name", req.GetName())
	if err != nil {
		return err
	}
	if req.GetTailLines() < 0 {
		return invalid(violation("tailLines", "must not be negative"))
	}
	t, err := s.tenant(ctx, tenantID)
	if err != nil {
		return err
	}
	j, err := s.store.JobGet(ctx, tenantID, name)
	if err != nil {
		return err
	}
	rep, err := pickReplica(j, req.GetReplica())
	if err != nil {
		return err
	}
	send := func(b []byte) error {
		return stream.Send(&httpbody.HttpBody{ContentType: "text/plain; charset=utf-8", Data: b})
	}
	kept := rep.LastTermination != nil && rep.LastTermination.LogTail != ""
	if s.kube != nil && rep.Pod != "" {
		// From the cluster that runs the job, whichever it is.
		rc, err := s.kube.PodLogs(ctx, j.Status.Cluster, t.Namespace, rep.Pod, req.GetFollow(), int64(req.GetTailLines()))
		var noCluster *kubeerr.NoClusterError
		switch {
		case err == nil:
			defer rc.Close()
			if err := copyChunks(rc, send); err != nil {
				return s.logsError(ctx, tenantID, rep.Pod, "log stream ended", err)
			}
			return nil
		case errors.As(err, &noCluster):
			// No credentials for that cluster: what was kept, if anything,
			// else FAILED_PRECONDITION naming the cluster and the flag.
			if !kept {
				return status.Error(codes.FailedPrecondition, noCluster.Error())
			}
		case !errors.Is(err, kubeerr.ErrPodGone):
			return s.logsError(ctx, tenantID, rep.Pod, "reading the log failed", err)
		}
	}
	if !kept {
		return status.Errorf(codes.NotFound, "no log is available for %s: its pod is gone and no tail was kept", job.ReplicaName(rep.Type, rep.Index))
	}
	return send([]byte(tailLines(rep.LastTermination.LogTail, int(req.GetTailLines()))))
}

// logsError is what the caller of GetJobLogs learns when Kubernetes fails
// it: UNAVAILABLE, retry. The API server's error text can name its service
// account, RBAC rules or the cluster's addresses: it goes to the log only.
// A send that failed because the caller went away is passed on as it is.
func (s *JobServer) logsError(ctx context.Context, tenantID, pod, what string, err error) error {
	if _, ok := status.FromError(err); ok || ctx.Err() != nil {
		return err
	}
	s.log.WarnContext(ctx, "pod log read failed", "tenant", tenantID, "pod", pod, "error", err)
	return status.Errorf(codes.Unavailable, "%s for pod %s; retry", what, quote(pod))
}

// pickReplica finds the replica a logs request names; by default the chief,
// else worker 0.
func pickReplica(j job.Job, want string) (job.ReplicaStatus, error) {
	if want == "" {
		for _, r := range j.Status.Replicas {
			if r.Type == job.Chief {
				return r, nil
			}
		}
		want = job.ReplicaName(job.Worker, 0)
	}
	t, idx, err := job.ParseReplicaName(want)
	if err != nil {
		return job.ReplicaStatus{}, invalid(violation("replica", "must look like worker-0, chief-0, ps-1 or evaluator-0"))
	}
	for _, r := range j.Status.Replicas {
		if r.Type == t && r.Index == idx {
			return r, nil
		}
	}
	for _, r := range j.Spec.Replicas {
		if r.Type == t && idx < r.Count {
			// Declared but not started yet.
			return job.ReplicaStatus{Type: t, Index: idx}, nil
		}
	}
	return job.ReplicaStatus{}, status.Errorf(codes.NotFound, "job %s has no replica %s", quote(j.Name), quote(want))
}

func copyChunks(r io.Reader, send func([]byte) error) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if serr := send(append([]byte(nil), buf[:n]...)); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func tailLines(s string, n int) string {
	if n <= 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
