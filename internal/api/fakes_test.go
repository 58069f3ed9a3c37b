package api

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube/kubeerr"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeStore holds just what the handler tests need. Methods not defined
// here panic on the nil embedded interface: a test that reaches one does
// something it did not mean to.
type fakeStore struct {
	Store

	mu         sync.Mutex
	tenants    map[string]tenant.Tenant
	jobs       []job.Job // by uid; deleted ones kept with their name
	deleted    map[string]bool
	requests   map[string]string // tenant/request id → uid
	events     []job.Event
	secrets    map[string]tenant.Secret // tenant/name
	calls      map[string]int
	createdID  string
	watchAfter int64 // JobList's
	horizon    int64 // EventHorizon's
	lastID     int64 // EventLastID's, when above the horizon
	clusters   []cluster.Cluster
}

func (f *fakeStore) ClusterList(context.Context) ([]cluster.Cluster, error) { return f.clusters, nil }

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

func (f *fakeStore) TenantUsage(context.Context, string) (job.Vector, error) {
	f.called("TenantUsage")
	return job.Vector{}, nil
}

func (f *fakeStore) UsageSharing(context.Context, time.Time, []store.SharingAsk) (map[string]store.SharingUsage, error) {
	f.called("UsageSharing")
	return nil, nil
}

func (f *fakeStore) UsageQuery(context.Context, store.UsageQueryParams) ([]store.UsageRow, error) {
	f.called("UsageQuery")
	return nil, nil
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
	if j.UID == "" { // the API sets it for a dependency earlier in a batch
		j.UID = fmt.Sprintf("uid-%d", len(f.jobs)+1)
	}
	j.Status.State = job.Queued
	f.jobs = append(f.jobs, j)
	if p.RequestID != "" {
		f.requests[j.Tenant+"/"+p.RequestID] = j.UID
	}
	f.createdID = j.UID
	return j, true, nil
}

func (f *fakeStore) JobGetByRequestIDs(_ context.Context, tenantID string, rids []string) (map[string]store.RequestedJob, error) {
	f.called("JobGetByRequestIDs")
	out := map[string]store.RequestedJob{}
	for _, rid := range rids {
		uid, ok := f.requests[tenantID+"/"+rid]
		if !ok {
			continue
		}
		for _, j := range f.jobs {
			if j.UID == uid {
				out[rid] = store.RequestedJob{Job: j, Deleted: f.deleted[uid]}
			}
		}
	}
	return out, nil
}

// JobCreateMany creates every item (the fake knows no names in use).
func (f *fakeStore) JobCreateMany(ctx context.Context, _ string, items []store.JobCreateParams) ([]store.JobCreated, error) {
	f.called("JobCreateMany")
	out := make([]store.JobCreated, len(items))
	for i, it := range items {
		j, _, _ := f.JobCreate(ctx, it)
		out[i] = store.JobCreated{Job: j, Created: true}
	}
	return out, nil
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

// GPUFiguresGet: no GPU was measured.
func (f *fakeStore) GPUFiguresGet(context.Context, string, string) ([]job.GPUFigures, error) {
	f.called("GPUFiguresGet")
	return nil, nil
}

// QueueGet: no job waits in the scheduler's queue.
func (f *fakeStore) QueueGet(context.Context, string) (map[string]job.QueueInfo, time.Time, error) {
	f.called("QueueGet")
	return nil, time.Time{}, nil
}

func (f *fakeStore) JobList(context.Context, string, store.JobListParams) (store.JobPage, error) {
	f.called("JobList")
	return store.JobPage{Jobs: f.jobs, WatchAfter: f.watchAfter}, nil
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
	return out, f.expired(out, after)
}

// expired is what the store's watch reads say when the events they found
// are after a position below the horizon.
func (f *fakeStore) expired(found []job.Event, after int64) error {
	if len(found) > 0 && f.horizon > after {
		return &store.EventsExpiredError{After: after, Horizon: f.horizon}
	}
	return nil
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
	return out, f.expired(out, after)
}

// EventLastID is the horizon (0 without one): a watch that starts now
// gets every event of the fake above it, and, as with the store's, never
// starts below the horizon.
func (f *fakeStore) EventLastID(context.Context, string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.horizon, f.lastID), nil
}

func (f *fakeStore) EventHorizon(context.Context, string) (int64, error) {
	f.called("EventHorizon")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.horizon, nil
}

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

func withTail(j job.Job) job.Job {
	j.Status.Replicas = []job.ReplicaStatus{{Type: job.Worker, Index: 0, Pod: j.Name + "-worker-0",
		LastTermination: &job.Termination{ExitCode: 1, Reason: "Error", LogTail: "Traceback\nboom\n"}}}
	return j
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

// fakeKube records what the handlers ask of Kubernetes.
type fakeKube struct {
	secrets map[string]bool // namespace/name
	putErr  error
	logsNS  string
	// logsCluster is the cluster of the last PodLogs; noCluster, when set,
	// is the one cluster it has no credentials for.
	logsCluster string
	noCluster   string
	logsBody    string
	logsErr     error
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

func (k *fakeKube) PodLogs(_ context.Context, cluster, ns, pod string, _ bool, _ int64) (io.ReadCloser, error) {
	k.logsNS, k.logsCluster = ns, cluster
	if k.noCluster != "" && cluster == k.noCluster {
		return nil, &kubeerr.NoClusterError{Cluster: cluster}
	}
	if k.logsErr != nil {
		return nil, k.logsErr
	}
	if k.logsBody == "" {
		return nil, fmt.Errorf("%w: %s", kubeerr.ErrPodGone, pod)
	}
	return io.NopCloser(strings.NewReader(k.logsBody)), nil
}

func (f *fakeStore) AuditWrite(_ context.Context, tenantID string, action audit.Action, resource string, _ map[string]any) error {
	f.called("AuditWrite " + string(action) + " " + resource)
	return nil
}

func (f *fakeStore) JobUIDsByName(_ context.Context, tenantID string, names []string) (map[string]string, error) {
	f.called("JobUIDsByName")
	out := map[string]string{}
	for _, j := range f.jobs {
		if j.Tenant == tenantID && !f.deleted[j.UID] && slices.Contains(names, j.Name) {
			out[j.Name] = j.UID
		}
	}
	return out, nil
}
