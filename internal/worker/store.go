package worker

import (
	"context"
	"time"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Store is what the worker needs of storage, and all of it: the Postgres
// implementation is *store.Store (internal/store, whose doc.go describes
// the claim/lease/fence protocol), and the in-memory one of the tests is
// workertest.Store. It is also the seam a worker that reaches storage
// through the API, not through Postgres, would implement.
//
// Every write of one job is fenced: it succeeds only for the job's owner
// under a live lease (else store.ErrLeaseLost) and, for JobSave and
// JobPark, at the version the worker read (else store.ErrConflict).
type Store interface {
	// JobLoad reads one job, deleted or not (store.ErrNotFound: purged).
	JobLoad(ctx context.Context, tenantID, uid string) (store.WorkerJob, error)
	// JobSave writes status and events (fenced), and may end, requeue or
	// park the job in the same write; it returns the new version.
	JobSave(ctx context.Context, p store.JobSaveParams) (int64, error)
	// JobPark lets a finished job go until after has passed (fenced).
	JobPark(ctx context.Context, workerID, tenantID, uid string, version int64, after time.Duration) error
	// JobPurge removes a deleted job's row once its objects are gone
	// (fenced by the lease).
	JobPurge(ctx context.Context, workerID, tenantID, uid string) error
	// JobListByKeys says what is known of keys (the orphan sweep).
	JobListByKeys(ctx context.Context, keys []store.JobKey) ([]store.JobBrief, error)
	// TenantGet reads a tenant: its state and its namespace.
	TenantGet(ctx context.Context, id string) (tenant.Tenant, error)

	// JobClaim takes up to limit jobs with no live owner and starts or
	// extends workerID's lease by ttl.
	JobClaim(ctx context.Context, workerID string, limit int, ttl time.Duration) ([]store.WorkerJob, error)
	// JobLeaseExtend extends a lease that is still live, and says whether
	// it was.
	JobLeaseExtend(ctx context.Context, workerID string, ttl time.Duration) (bool, error)
	// JobLeaseRenew extends the lease and lists the jobs still owned.
	JobLeaseRenew(ctx context.Context, workerID string, ttl time.Duration) ([]store.JobKey, error)
	// JobRelease gives jobs up, claimable at once.
	JobRelease(ctx context.Context, workerID string, keys ...store.JobKey) error
	// JobReleaseAll gives up every job and the lease (at shutdown).
	JobReleaseAll(ctx context.Context, workerID string) error

	// JobCounts counts unfinished jobs by state, for the metrics.
	JobCounts(ctx context.Context) (byState map[job.State]int64, waitingForQuota int64, err error)
}

var _ Store = (*store.Store)(nil)
