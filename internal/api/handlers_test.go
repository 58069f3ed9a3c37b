package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeStore holds just what the handler tests need. Methods not defined
// here panic on the nil embedded interface: a test that reaches one does
// something it did not mean to.
type fakeStore struct {
	Store

	mu        sync.Mutex
	tenants   map[string]tenant.Tenant
	jobs      []job.Job // by uid; deleted ones kept with their name
	deleted   map[string]bool
	requests  map[string]string // tenant/request id → uid
	events    []job.Event
	secrets   map[string]tenant.Secret // tenant/name
	calls     map[string]int
	createdID string
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		tenants:  map[string]tenant.Tenant{},
		deleted:  map[string]bool{},
		requests: map[string]string{},
		secrets:  map[string]tenant.Secret{},
		calls:    map[string]int{},
	}
}

func (f *fakeStore) called(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[name]++
}

func (f *fakeStore) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeStore) TenantGet(_ context.Context, id string) (tenant.Tenant, error) {
	f.called("TenantGet")
	t, ok := f.tenants[id]
	if !ok {
		return t, fmt.Errorf("%w: tenant %q", store.ErrNotFound, id)
	}
	return t, nil
}

func (f *fakeStore) JobGetByRequestID(_ context.Context, tenantID, rid string) (job.Job, bool, error) {
	f.called("JobGetByRequestID")
	uid, ok := f.requests[tenantID+"/"+rid]
	if !ok {
		return job.Job{}, false, nil
	}
	if f.deleted[uid] {
		return job.Job{}, false, fmt.Errorf("%w: job of request id %q has been deleted", store.ErrNotFound, rid)
	}
	for _, j := range f.jobs {
		if j.UID == uid {
			return j, true, nil
		}
	}
	return job.Job{}, false, nil
}

func (f *fakeStore) JobCreate(_ context.Context, p store.JobCreateParams) (job.Job, bool, error) {
	f.called("JobCreate")
	j := p.Job
	j.UID = fmt.Sprintf("uid-%d", len(f.jobs)+1)
	j.Status.State = job.Queued
	f.jobs = append(f.jobs, j)
	if p.RequestID != "" {
		f.requests[j.Tenant+"/"+p.RequestID] = j.UID
	}
	f.createdID = j.UID
	return j, true, nil
}

func (f *fakeStore) JobGet(_ context.Context, tenantID, name string) (job.Job, error) {
	f.called("JobGet")
	for _, j := range f.jobs {
		if j.Tenant == tenantID && j.Name == name && !f.deleted[j.UID] {
			return j, nil
		}
	}
	return job.Job{}, fmt.Errorf("%w: job %q", store.ErrNotFound, name)
}

func (f *fakeStore) JobGetMany(_ context.Context, tenantID string, uids []string) ([]job.Job, error) {
	f.called("JobGetMany")
	var out []job.Job
	for _, j := range f.jobs {
		for _, u := range uids {
			if j.Tenant == tenantID && j.UID == u {
				out = append(out, j)
			}
		}
	}
	return out, nil
}

func (f *fakeStore) JobList(context.Context, string, store.JobListParams) ([]job.Job, int64, error) {
	f.called("JobList")
	return f.jobs, 0, nil
}

func (f *fakeStore) EventList(_ context.Context, tenantID, name string, after int64, limit int) ([]job.Event, error) {
	f.called("EventList")
	var out []job.Event
	for _, e := range f.events {
		if e.Tenant == tenantID && e.Job == name && e.ID > after {
			out = append(out, e)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%w: job %q", store.ErrNotFound, name)
	}
	return out, nil
}

func (f *fakeStore) EventListTenant(_ context.Context, tenantID string, after int64, limit int) ([]job.Event, error) {
	f.called("EventListTenant")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []job.Event
	for _, e := range f.events {
		if e.Tenant == tenantID && e.ID > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeStore) EventListByJob(_ context.Context, tenantID, uid string, after int64, limit int) ([]job.Event, error) {
	f.called("EventListByJob")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []job.Event
	for _, e := range f.events {
		if e.Tenant == tenantID && e.JobUID == uid && e.ID > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeStore) EventLastID(context.Context, string) (int64, error) { return 0, nil }

func (f *fakeStore) SecretList(_ context.Context, tenantID string) ([]tenant.Secret, error) {
	f.called("SecretList")
	var out []tenant.Secret
	for _, s := range f.secrets {
		if s.Tenant == tenantID {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeStore) SecretGet(_ context.Context, tenantID, name string) (tenant.Secret, error) {
	f.called("SecretGet")
	s, ok := f.secrets[tenantID+"/"+name]
	if !ok {
		return s, fmt.Errorf("%w: secret %q", store.ErrNotFound, name)
	}
	return s, nil
}

func (f *fakeStore) SecretDelete(_ context.Context, tenantID, name string) error {
	f.called("SecretDelete")
	if _, ok := f.secrets[tenantID+"/"+name]; !ok {
		return fmt.Errorf("%w: secret %q", store.ErrNotFound, name)
	}
	delete(f.secrets, tenantID+"/"+name)
	return nil
}

func (f *fakeStore) SecretPut(_ context.Context, s tenant.Secret) (tenant.Secret, error) {
	f.called("SecretPut")
	f.secrets[s.Tenant+"/"+s.Name] = s
	return s, nil
}

func oneWorker(gpu int32) *pb.Job {
	return &pb.Job{Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{
		Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 1, Image: "tensorflow/tensorflow:2.16.1",
		Resources: &pb.Resources{Gpu: gpu},
	}}}}
}

// A retried create finds its first job before anything is validated: not
// the quota that shrank since, not even a body that is no longer valid.
func TestCreateJobReplayReturnsFirstJob(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active, Quota: tenant.Quota{GPU: 8}}
	srv := NewJobServer(Deps{Store: st})
	ctx := context.Background()

	first, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", RequestId: "r1", Job: oneWorker(4)})
	require.NoError(t, err)

	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active, Quota: tenant.Quota{GPU: 1}}
	again, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", RequestId: "r1", Job: oneWorker(4)})
	require.NoError(t, err)
	require.Equal(t, first.GetUid(), again.GetUid())
	again, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", RequestId: "r1"})
	require.NoError(t, err, "no body at all: still the first job")
	require.Equal(t, first.GetUid(), again.GetUid())
	require.Equal(t, 1, st.count("JobCreate"))

	// A new request is checked against the new quota.
	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", RequestId: "r2", Job: oneWorker(4)})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))

	// The first job deleted: NOT_FOUND, and no second job.
	st.deleted[first.GetUid()] = true
	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", JobId: "j1", RequestId: "r1", Job: oneWorker(1)})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 1, st.count("JobCreate"))

	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", RequestId: "bad id!", Job: oneWorker(1)})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, 5, st.count("JobGetByRequestID"), "a malformed request id is not looked up")
}

// The authorizer loaded the tenant already: CreateJob uses that one.
func TestCreateJobUsesTheAuthorizedTenant(t *testing.T) {
	st := newFakeStore()
	srv := NewJobServer(Deps{Store: st})
	ctx := auth.WithAccess(context.Background(), auth.Access{TenantID: "a",
		Tenant: tenant.Tenant{ID: "a", State: tenant.Active, Quota: tenant.Quota{GPU: 2}}})
	_, err := srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", Job: oneWorker(1)})
	require.NoError(t, err)
	_, err = srv.CreateJob(ctx, &pb.CreateJobRequest{Parent: "tenants/a", Job: oneWorker(3)})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "the quota of the authorized tenant applies")
	require.Zero(t, st.count("TenantGet"))
	require.Zero(t, st.count("SecretList"), "no secret referenced, no secret read")
	require.Zero(t, st.count("JobGetByRequestID"), "no request id, no lookup")
}

func TestCreateJobChecksSecretsAndKeysInOneRead(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active}
	st.secrets["a/hf"] = tenant.Secret{Tenant: "a", Name: "hf", Keys: []string{"token", "user"}}
	srv := NewJobServer(Deps{Store: st})
	j := oneWorker(0)
	j.Spec.Replicas[0].Env = []*pb.EnvVar{
		{Name: "OK", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "hf", Key: "token"}}},
		{Name: "NOKEY", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "hf", Key: "password"}}},
		{Name: "NOSECRET", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "aws", Key: "id"}}},
	}
	j.Spec.Replicas[0].SecretVolumes = []*pb.SecretVolume{{Secret: "hf", MountPath: "/hf"}, {Secret: "gcs", MountPath: "/gcs"}}
	_, err := srv.CreateJob(context.Background(), &pb.CreateJobRequest{Parent: "tenants/a", Job: j})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	got := map[string]string{}
	for _, v := range badRequest(t, err).GetFieldViolations() {
		got[v.GetField()] = v.GetDescription()
	}
	require.Len(t, got, 3, "%v", got)
	require.Contains(t, got["spec.replicas[0].env[1].secret.key"], `has no key "password" (it has: token, user)`)
	require.Contains(t, got["spec.replicas[0].env[2].secret.secret"], `secret "aws" does not exist`)
	require.Contains(t, got["spec.replicas[0].secretVolumes[1].secret"], `secret "gcs" does not exist`)
	require.Equal(t, 1, st.count("SecretList"))
	require.Zero(t, st.count("SecretGet"))
	require.Zero(t, st.count("JobCreate"))
}

func withTail(j job.Job) job.Job {
	j.Status.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, Pod: j.Name + "-worker-0",
		LastTermination: &job.Termination{ExitCode: 1, Reason: "Error", LogTail: "Traceback\nboom\n"}}}
	return j
}

func TestListJobsAndWatchLeaveLogTailsOut(t *testing.T) {
	j := withTail(job.Job{Tenant: "a", Name: "j", UID: "u1"})
	require.Equal(t, "Traceback\nboom\n", jobToPB(j).GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	sum := jobSummaryToPB(j)
	require.Empty(t, sum.GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	require.EqualValues(t, 1, sum.GetStatus().GetReplicas()[0].GetLastTermination().GetExitCode(), "the rest stays")
	require.NotEmpty(t, j.Status.Replicas[0].LastTermination.LogTail, "the job itself is untouched")

	st := newFakeStore()
	st.jobs = []job.Job{j}
	resp, err := NewJobServer(Deps{Store: st}).ListJobs(context.Background(), &pb.ListJobsRequest{Parent: "tenants/a"})
	require.NoError(t, err)
	require.Empty(t, resp.GetJobs()[0].GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail())
	got, err := NewJobServer(Deps{Store: st}).GetJob(context.Background(), &pb.GetJobRequest{Name: "tenants/a/jobs/j"})
	require.NoError(t, err)
	require.NotEmpty(t, got.GetStatus().GetReplicas()[0].GetLastTermination().GetLogTail(), "GetJob keeps it")
}

func TestListJobEventsIsOneRead(t *testing.T) {
	st := newFakeStore()
	st.events = []job.Event{{ID: 1, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Queued"}}
	srv := NewJobServer(Deps{Store: st})
	resp, err := srv.ListJobEvents(context.Background(), &pb.ListJobEventsRequest{Parent: "tenants/a/jobs/j"})
	require.NoError(t, err)
	require.Len(t, resp.GetEvents(), 1)
	_, err = srv.ListJobEvents(context.Background(), &pb.ListJobEventsRequest{Parent: "tenants/a/jobs/nope"})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Zero(t, st.count("JobGet"))
}

// fakeStream is a server stream that records what is sent.
type fakeStream[T any] struct {
	grpc.ServerStream
	ctx  context.Context
	mu   sync.Mutex
	sent []*T
}

func (s *fakeStream[T]) Context() context.Context { return s.ctx }

func (s *fakeStream[T]) SendHeader(metadata.MD) error { return nil }

func (s *fakeStream[T]) Send(m *T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
	return nil
}

func (s *fakeStream[T]) got() []*T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*T(nil), s.sent...)
}

// WatchJobs reads the jobs of a batch of events in one query, matches
// events to jobs by uid (a name is reused after a delete), and sends the
// events of deleted and purged jobs instead of dropping them.
func TestWatchJobsBatchesByUID(t *testing.T) {
	st := newFakeStore()
	old := job.Job{Tenant: "a", Name: "train", UID: "u-old", Labels: map[string]string{"team": "nlp"}, Status: job.Status{State: job.Failed}}
	cur := job.Job{Tenant: "a", Name: "train", UID: "u-new", Labels: map[string]string{"team": "nlp"}, Status: job.Status{State: job.Running}}
	other := job.Job{Tenant: "a", Name: "eval", UID: "u-other", Labels: map[string]string{"team": "cv"}, Status: job.Status{State: job.Running}}
	st.jobs = []job.Job{withTail(old), cur, other}
	st.deleted["u-old"] = true
	ev := func(id int64, name, uid, reason string) job.Event {
		return job.Event{ID: id, Tenant: "a", Job: name, JobUID: uid, Reason: reason}
	}
	st.events = []job.Event{
		ev(1, "train", "u-old", "Failed"),
		ev(2, "train", "u-old", "Deleted"),
		ev(3, "train", "u-new", "Queued"),
		ev(4, "eval", "u-other", "Queued"),
		ev(5, "gone", "u-purged", "Deleted"),
		{ID: 6, Tenant: "b", Job: "x", JobUID: "u-b", Reason: "Queued"},
	}
	srv := NewJobServer(Deps{Store: st, WatchPoll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
	done := make(chan error, 1)
	go func() {
		done <- srv.WatchJobs(&pb.WatchJobsRequest{Parent: "tenants/a", Filter: "labels.team = nlp"}, stream)
	}()
	require.Eventually(t, func() bool { return len(stream.got()) == 4 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.Equal(t, codes.Canceled, status.Code(<-done))

	var got []string
	for _, m := range stream.got() {
		got = append(got, fmt.Sprintf("%d %s %s %s", m.GetEvent().GetId(), m.GetEvent().GetReason(), m.GetJob().GetName(), m.GetJob().GetUid()))
		for _, r := range m.GetJob().GetStatus().GetReplicas() {
			require.Empty(t, r.GetLastTermination().GetLogTail())
		}
	}
	require.Equal(t, []string{
		"1 Failed tenants/a/jobs/train u-old",
		"2 Deleted tenants/a/jobs/train u-old",
		"3 Queued tenants/a/jobs/train u-new",
		"5 Deleted tenants/a/jobs/gone u-purged",
	}, got)
	require.Equal(t, 1, st.count("JobGetMany"), "one query for the jobs of the batch")
	require.Zero(t, st.count("JobGet"))
}

// The Notifications a *store.Listener would be: payloads are tenant ids.
type fakeNotifications struct {
	mu   sync.Mutex
	subs map[chan string]bool
	n    int // Subscribe calls
}

func (f *fakeNotifications) Subscribe(channel string) (<-chan string, func()) {
	ch := make(chan string, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[chan string]bool{}
	}
	f.subs[ch] = true
	f.n++
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs, ch)
			close(ch)
		})
	}
}

func (f *fakeNotifications) notify(payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		ch <- payload
	}
}

func (f *fakeNotifications) open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// A watcher is woken by its own tenant's events, not by another's.
func TestWatchJobWakesOnItsTenantOnly(t *testing.T) {
	st := newFakeStore()
	st.jobs = []job.Job{{Tenant: "a", Name: "j", UID: "u1", Status: job.Status{State: job.Running}}}
	src := &fakeNotifications{}
	srv := NewJobServer(Deps{Store: st, Events: src, WatchPoll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := &fakeStream[pb.WatchJobResponse]{ctx: ctx}
	done := make(chan error, 1)
	go func() { done <- srv.WatchJob(&pb.WatchJobRequest{Name: "tenants/a/jobs/j"}, stream) }()
	require.Eventually(t, func() bool { return len(stream.got()) == 1 && src.open() == 1 }, 5*time.Second, time.Millisecond)
	polls := st.count("EventListByJob")

	for range 20 {
		src.notify("b")
	}
	time.Sleep(50 * time.Millisecond) // nothing must happen; there is no signal to wait for
	require.Equal(t, polls, st.count("EventListByJob"), "another tenant's events do not wake the watch")

	st.mu.Lock()
	st.events = append(st.events, job.Event{ID: 7, Tenant: "a", Job: "j", JobUID: "u1", Reason: "Succeeded", State: job.Succeeded})
	st.jobs[0].Status.State = job.Succeeded
	st.mu.Unlock()
	src.notify("a")
	require.NoError(t, <-done, "the job is final: the watch ends")
	got := stream.got()
	require.Len(t, got, 2)
	require.EqualValues(t, 7, got[1].GetEvent().GetId())
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, got[1].GetJob().GetStatus().GetState())
}

func TestTenantUpdateFields(t *testing.T) {
	for name, tc := range map[string]struct {
		paths []string
		want  []string
		bad   string
	}{
		"empty: resolved later": {paths: nil, want: nil},
		"star: all":             {paths: []string{"*"}, want: updatableTenantFields},
		"json names":            {paths: []string{"displayName", "podReaderGroups"}, want: []string{"display_name", "pod_reader_groups"}},
		"quota sub-fields":      {paths: []string{"quota.gpu", "quota.memory"}, want: []string{"quota.gpu", "quota.memory"}},
		"gateway body mask":     {paths: []string{"display_name", "quota.cpu", "quota.gpu", "quota.pods"}, want: []string{"display_name", "quota.cpu", "quota.gpu", "quota.pods"}},
		"output only ignored":   {paths: []string{"name", "namespace", "state", "createTime", "update_time", "labels"}, want: []string{"labels"}},
		"unknown":               {paths: []string{"owner"}, bad: `"owner" cannot be updated`},
		"unknown quota field":   {paths: []string{"quota.tpu"}, bad: `"quota.tpu" cannot be updated`},
		"no label sub-path":     {paths: []string{"labels.team"}, bad: "cannot be updated"},
		"members sub-path bad":  {paths: []string{"members.role"}, bad: "cannot be updated"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tenantUpdateFields(tc.paths)
			if tc.bad != "" {
				require.Equal(t, codes.InvalidArgument, status.Code(err))
				require.Contains(t, status.Convert(err).Message(), tc.bad)
				return
			}
			require.NoError(t, err)
			want := map[string]bool{}
			for _, f := range tc.want {
				want[f] = true
			}
			require.Equal(t, want, got)
		})
	}
}

type fakeTenantStore struct {
	*fakeStore
}

func (f fakeTenantStore) TenantUpdate(_ context.Context, id string, fn func(*tenant.Tenant) error) (tenant.Tenant, error) {
	t := f.tenants[id]
	if err := fn(&t); err != nil {
		return tenant.Tenant{}, err
	}
	f.tenants[id] = t
	return t, nil
}

func TestUpdateTenantMergesQuotaFields(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", State: tenant.Active, DisplayName: "A",
		Quota:   tenant.Quota{GPU: 4, CPU: "64", Memory: "256Gi", Pods: 20},
		Members: []tenant.Member{{Group: "ml", Role: tenant.RoleEditor}}}
	srv := NewTenantServer(Deps{Store: fakeTenantStore{st}})
	update := func(mask []string, in *pb.Tenant) (*pb.Tenant, error) {
		in.Name = "tenants/a"
		req := &pb.UpdateTenantRequest{Tenant: in}
		if mask != nil {
			req.UpdateMask = &fieldmaskpb.FieldMask{Paths: mask}
		}
		return srv.UpdateTenant(context.Background(), req)
	}

	// What the gateway makes of PATCH {"quota":{"gpu":8}}.
	got, err := update([]string{"quota.gpu"}, &pb.Tenant{Quota: &pb.Quota{Gpu: 8}})
	require.NoError(t, err)
	require.True(t, proto.Equal(&pb.Quota{Gpu: 8, Cpu: "64", Memory: "256Gi", Pods: 20}, got.GetQuota()), "%v", got.GetQuota())
	require.Equal(t, "A", got.GetDisplayName())
	require.Len(t, got.GetMembers(), 1)

	got, err = update([]string{"quota"}, &pb.Tenant{Quota: &pb.Quota{Gpu: 2}})
	require.NoError(t, err)
	require.True(t, proto.Equal(&pb.Quota{Gpu: 2}, got.GetQuota()), "the whole quota is replaced: %v", got.GetQuota())

	_, err = update([]string{"quota.gpu"}, &pb.Tenant{Quota: &pb.Quota{Gpu: -1}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "tenant.quota.gpu", badRequest(t, err).GetFieldViolations()[0].GetField())
}

// fakeKube records what the handlers ask of Kubernetes.
type fakeKube struct {
	secrets  map[string]bool // namespace/name
	putErr   error
	logsNS   string
	logsBody string
	logsErr  error
}

func (k *fakeKube) PutSecret(_ context.Context, _, ns, id string, _ map[string]string) error {
	if k.putErr != nil {
		return k.putErr
	}
	k.secrets[ns+"/"+id] = true
	return nil
}

func (k *fakeKube) DeleteSecret(_ context.Context, ns, id string) (bool, error) {
	found := k.secrets[ns+"/"+id]
	delete(k.secrets, ns+"/"+id)
	return found, nil
}

func (k *fakeKube) PodLogs(_ context.Context, ns, pod string, _ bool, _ int64) (io.ReadCloser, error) {
	k.logsNS = ns
	if k.logsErr != nil {
		return nil, k.logsErr
	}
	if k.logsBody == "" {
		return nil, fmt.Errorf("%w: %s", kube.ErrPodGone, pod)
	}
	return io.NopCloser(strings.NewReader(k.logsBody)), nil
}

func TestDeleteSecretRemovesOrphans(t *testing.T) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "team-a", State: tenant.Active}
	st.secrets["a/both"] = tenant.Secret{Tenant: "a", Name: "both"}
	st.secrets["a/meta-only"] = tenant.Secret{Tenant: "a", Name: "meta-only"}
	k := &fakeKube{secrets: map[string]bool{"team-a/both": true, "team-a/orphan": true}}
	srv := NewTenantServer(Deps{Store: st, Kube: k})
	del := func(id string) error {
		_, err := srv.DeleteSecret(context.Background(), &pb.DeleteSecretRequest{Name: "tenants/a/secrets/" + id})
		return err
	}
	require.NoError(t, del("both"))
	require.NoError(t, del("orphan"), "a Kubernetes Secret without metadata is deleted")
	require.NoError(t, del("meta-only"), "metadata without a Kubernetes Secret is deleted")
	require.Equal(t, codes.NotFound, status.Code(del("neither")))
	require.Empty(t, k.secrets)
	require.Empty(t, st.secrets)
}

func TestSecretWriteErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		err   error
		code  codes.Code
		field string
	}{
		"invalid": {
			err:  &kube.InvalidError{Causes: []string{`data[a b]: a valid config key must consist of alphanumeric characters`}},
			code: codes.InvalidArgument, field: "secret.data",
		},
		"conflict":     {err: fmt.Errorf("%w: secret ty-a/s", kube.ErrConcurrentChange), code: codes.Aborted},
		"forbidden":    {err: fmt.Errorf("%w: %s", kube.ErrSecretNotOurs, `User "system:serviceaccount:trainyard:trainyard-api" cannot update`), code: codes.FailedPrecondition},
		"no namespace": {err: fmt.Errorf("%w: ty-a", kube.ErrNamespaceNotReady), code: codes.Unavailable},
		"other":        {err: errors.New("connection refused"), code: codes.Unknown},
	} {
		t.Run(name, func(t *testing.T) {
			st := newFakeStore()
			st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active}
			srv := NewTenantServer(Deps{Store: st, Kube: &fakeKube{secrets: map[string]bool{}, putErr: tc.err}})
			_, err := srv.PutSecret(context.Background(), &pb.PutSecretRequest{Secret: &pb.Secret{
				Name: "tenants/a/secrets/s", Data: map[string]string{"k": "v"}}})
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			if tc.code == codes.Unknown {
				_, isStatus := status.FromError(err)
				require.False(t, isStatus, "an unexpected error stays internal (masked by the interceptor)")
			}
			require.NotContains(t, status.Convert(err).Message(), "serviceaccount", "RBAC details go to the log only")
			if tc.field != "" {
				v := badRequest(t, err).GetFieldViolations()[0]
				require.Equal(t, tc.field, v.GetField())
				require.Contains(t, v.GetDescription(), "a valid config key")
			}
			require.Zero(t, st.count("SecretPut"), "no metadata without the values")
		})
	}
}

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

func TestUpdateTenantWithoutMaskKeepsWhatIsNotSet(t *testing.T) {
	require.Empty(t, populatedTenantFields(&pb.Tenant{}), "an empty body changes nothing")
	got := populatedTenantFields(&pb.Tenant{DisplayName: "x", Quota: &pb.Quota{}, PodReaderGroups: []string{"g"}})
	require.Equal(t, map[string]bool{"display_name": true, "quota": true, "pod_reader_groups": true}, got)
}
