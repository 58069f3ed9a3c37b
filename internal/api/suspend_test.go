package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// suspendStore answers JobSuspend and JobResume as the store would for a
// running job.
type suspendStore struct {
	*fakeStore
	got []string
}

func (s *suspendStore) JobSuspend(_ context.Context, tenantID, name string) (job.Job, error) {
	s.got = append(s.got, "suspend "+tenantID+"/"+name)
	return job.Job{Tenant: tenantID, Name: name, Status: job.Status{State: job.Running, SuspendRequested: true, Restarts: 2}}, nil
}

func (s *suspendStore) JobResume(_ context.Context, tenantID, name string) (job.Job, error) {
	s.got = append(s.got, "resume "+tenantID+"/"+name)
	return job.Job{Tenant: tenantID, Name: name, Status: job.Status{State: job.Queued, Restarts: 2}}, nil
}

func TestSuspendResumeJob(t *testing.T) {
	st := &suspendStore{fakeStore: newFakeStore()}
	srv := NewJobServer(Deps{Store: st})
	ctx := context.Background()

	j, err := srv.SuspendJob(ctx, &pb.SuspendJobRequest{Name: "tenants/a/jobs/train"})
	require.NoError(t, err)
	require.True(t, j.GetStatus().GetSuspendRequested())
	require.Equal(t, pb.JobState_JOB_STATE_RUNNING, j.GetStatus().GetState())
	require.EqualValues(t, 2, j.GetStatus().GetRestarts())

	j, err = srv.ResumeJob(ctx, &pb.ResumeJobRequest{Name: "tenants/a/jobs/train"})
	require.NoError(t, err)
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	require.False(t, j.GetStatus().GetSuspendRequested())
	require.Equal(t, []string{"suspend a/train", "resume a/train"}, st.got)

	for _, call := range []func() error{
		func() error {
			_, err := srv.SuspendJob(ctx, &pb.SuspendJobRequest{Name: "tenants/a/train"})
			return err
		},
		func() error { _, err := srv.ResumeJob(ctx, &pb.ResumeJobRequest{}); return err },
	} {
		err := call()
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		require.Contains(t, err.Error(), "name")
	}
	require.Len(t, st.got, 2, "a bad name reaches no store")
}

func TestSuspendedStateToPB(t *testing.T) {
	require.Equal(t, pb.JobState_JOB_STATE_SUSPENDED, stateToPB[job.Suspended])
	for _, s := range job.States {
		require.NotZero(t, stateToPB[s], "state %s has a proto value", s)
	}
}
