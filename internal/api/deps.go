package api

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Store is the part of *store.Store the handlers use.
type Store interface {
	TenantCreate(ctx context.Context, t tenant.Tenant) (tenant.Tenant, error)
	TenantGet(ctx context.Context, id string) (tenant.Tenant, error)
	TenantList(ctx context.Context, p store.TenantListParams) ([]tenant.Tenant, error)
	TenantUpdate(ctx context.Context, id string, fn func(*tenant.Tenant) error) (tenant.Tenant, error)
	TenantUsage(ctx context.Context, id string) (job.Vector, error)
	UsageSharing(ctx context.Context, now time.Time, asks []store.SharingAsk) (map[string]store.SharingUsage, error)
	UsageQuery(ctx context.Context, p store.UsageQueryParams) ([]store.UsageRow, error)
	// ClusterList: the registered clusters a tenant may be allowed.
	ClusterList(ctx context.Context) ([]cluster.Cluster, error)
	QueueHistoryQuery(ctx context.Context, p store.QueueHistoryParams) ([]store.QueueHistoryRow, []store.CapacityRow, error)
	CohortPut(ctx context.Context, c tenant.Cohort) (tenant.Cohort, error)
	CohortGet(ctx context.Context, name string) (tenant.Cohort, error)
	CohortList(ctx context.Context) ([]tenant.Cohort, error)
	CohortDelete(ctx context.Context, name string) error

	JobCreate(ctx context.Context, p store.JobCreateParams) (job.Job, bool, error)
	JobCreateMany(ctx context.Context, tenant string, items []store.JobCreateParams) ([]store.JobCreated, error)
	JobGetByRequestIDs(ctx context.Context, tenant string, requestIDs []string) (map[string]store.RequestedJob, error)
	// JobUIDsByName resolves spec.dependsOn (dependencies.go).
	JobUIDsByName(ctx context.Context, tenant string, names []string) (map[string]string, error)
	JobGet(ctx context.Context, tenant, name string) (job.Job, error)
	JobGetMany(ctx context.Context, tenant string, uids []string) ([]job.Job, error)
	JobGetByRequestID(ctx context.Context, tenant, requestID string) (job.Job, bool, error)
	JobList(ctx context.Context, tenant string, p store.JobListParams) (store.JobPage, error)
	JobCancel(ctx context.Context, tenant, name string) (job.Job, error)
	JobSuspend(ctx context.Context, tenant, name string) (job.Job, error)
	JobResume(ctx context.Context, tenant, name string) (job.Job, error)
	JobDelete(ctx context.Context, tenant, name string) error
	QueueGet(ctx context.Context, tenant string) (map[string]job.QueueInfo, time.Time, error)
	// GPUFiguresGet: a job's measured GPU utilisation, by replica (GetJob).
	GPUFiguresGet(ctx context.Context, tenant, uid string) ([]job.GPUFigures, error)

	EventList(ctx context.Context, tenant, job string, afterID int64, limit int) ([]job.Event, error)
	EventListByJob(ctx context.Context, tenant, uid string, afterID int64, limit int) ([]job.Event, error)
	EventListTenant(ctx context.Context, tenant string, afterID int64, limit int) ([]job.Event, error)
	EventLastID(ctx context.Context, tenant string) (int64, error)
	EventHorizon(ctx context.Context, tenant string) (int64, error)

	SecretPut(ctx context.Context, s tenant.Secret) (tenant.Secret, error)
	SecretGet(ctx context.Context, tenant, name string) (tenant.Secret, error)
	SecretList(ctx context.Context, tenant string) ([]tenant.Secret, error)
	SecretDelete(ctx context.Context, tenant, name string) error

	AuditWrite(ctx context.Context, tenant string, action audit.Action, resource string, details map[string]any) error
	AuditList(ctx context.Context, p store.AuditListParams) ([]audit.Record, int64, error)
}

// Kube is the API server's narrow access to Kubernetes: tenant secret values
// (which never pass through Postgres) and pod logs, in every cluster it has
// credentials for. kube.Clusters implements it and classifies its own errors: the handlers act on kube's
// sentinels (kubeerr.ErrPodGone, kubeerr.ErrNamespaceNotReady,
// kubeerr.ErrSecretNotOurs, kubeerr.ErrConcurrentChange, *kubeerr.InvalidError,
// *kubeerr.NoClusterError) and
// never on apimachinery's error types.
type Kube interface {
	// PutSecret creates or replaces the Secret.
	PutSecret(ctx context.Context, tenantID, namespace, secretID string, data map[string]string) error
	// DeleteSecret deletes the Secret if it is Trainyard's; found is false
	// when there was none.
	DeleteSecret(ctx context.Context, namespace, secretID string) (found bool, err error)
	// PodLogs streams a pod's log from the cluster that runs it (a job's
	// status.cluster; "" is the API server's own); kubeerr.ErrPodGone when
	// the pod no longer exists, *kubeerr.NoClusterError when the server
	// has no credentials for that cluster.
	PodLogs(ctx context.Context, cluster, namespace, pod string, follow bool, tailLines int64) (io.ReadCloser, error)
}

// Notifications wakes watchers; *store.Listener implements it.
type Notifications = store.Subscriber

// tenant returns the tenant the authorizer already loaded for this request,
// or reads it when there is none (a handler called without the interceptor).
func (d *deps) tenant(ctx context.Context, id string) (tenant.Tenant, error) {
	if a, ok := auth.AccessFrom(ctx); ok && a.TenantID == id && a.Tenant.ID == id {
		return a.Tenant, nil
	}
	return d.store.TenantGet(ctx, id)
}

// deps are what the handlers share.
type deps struct {
	store     Store
	kube      Kube
	log       *slog.Logger
	now       func() time.Time
	pollEvery time.Duration
	// pollTimeout bounds one poll of a watch (watch.go, follow).
	pollTimeout time.Duration
	// bookmarkEvery is how long a watch that asked for bookmarks may go
	// without sending before its position is sent as one.
	bookmarkEvery time.Duration
	nsPrefix      string
	wakeups       *store.Wakeups
	// tfjobPriorities map PriorityClass names to priorities (ImportTFJob).
	tfjobPriorities map[string]int32
	gpuHistory      GPUHistory
}

// Deps configures the API servers.
type Deps struct {
	// Store is Postgres. Required.
	Store Store
	// Kube writes tenant secrets and reads pod logs. Optional: without it,
	// secret writes are UNAVAILABLE and logs come only from what was kept.
	Kube Kube
	// Events wakes watchers when events of their tenant are written (the
	// payload on store.ChannelEvents is the tenant id). Optional: watchers
	// then poll.
	Events Notifications
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// WatchPoll is how often watchers poll without a notification. Defaults to 2s.
	WatchPoll time.Duration
	// WatchPollTimeout bounds one poll of the database by a watch; a poll
	// that takes longer ends the watch UNAVAILABLE (clients reopen it).
	// Defaults to 30s.
	WatchPollTimeout time.Duration
	// WatchBookmark is how long a watch that asked for bookmarks goes
	// without sending anything before it sends its read position (when
	// events it did not send moved it: left out by a tenant watch's
	// filter, or other jobs' for a job's watch). Defaults to 30s.
	WatchBookmark time.Duration
	// NamespacePrefix is put before a tenant id to make its namespace
	// (tenant.NamespaceName). Defaults to tenant.DefaultNamespacePrefix.
	NamespacePrefix string
	// TFJobPriorityClasses map the Kubernetes PriorityClass names of
	// imported TFJobs to Trainyard priorities. Defaults to none: a TFJob
	// naming one cannot be honoured.
	TFJobPriorityClasses map[string]int32
	// GPUHistory reads jobs' GPU utilisation over time from Prometheus
	// (QueryJobUtilization). Optional: without it the answer says it is
	// not available.
	GPUHistory GPUHistory
}

func (d Deps) withDefaults() deps {
	out := deps{store: d.Store, kube: d.Kube, log: d.Logger, now: d.Now, pollEvery: d.WatchPoll, bookmarkEvery: d.WatchBookmark,
		nsPrefix: d.NamespacePrefix, tfjobPriorities: d.TFJobPriorityClasses, gpuHistory: d.GPUHistory}
	if out.log == nil {
		out.log = slog.Default()
	}
	if out.now == nil {
		out.now = time.Now
	}
	if out.pollTimeout = d.WatchPollTimeout; out.pollTimeout <= 0 {
		out.pollTimeout = 30 * time.Second
	}
	if out.pollEvery <= 0 {
		out.pollEvery = 2 * time.Second
	}
	if out.bookmarkEvery <= 0 {
		out.bookmarkEvery = 30 * time.Second
	}
	if out.nsPrefix == "" {
		out.nsPrefix = tenant.DefaultNamespacePrefix
	}
	out.wakeups = store.NewWakeups(d.Events, store.ChannelEvents)
	return out
}
