package store

import (
	"context"

	"github.com/trainyard/trainyard/internal/job"
)

// Dependencies between jobs (spec.dependsOn, job/deps.go): the API
// resolves a dependency's name to its uid at submission (JobUIDsByName),
// the scheduler looks at the dependencies of its pending jobs every cycle
// (DependencyObserve), its commit ends the jobs whose dependencies can
// never be met and copies the dependencies' results into the jobs it
// admits (SchedulerCommit). A dependent is woken by the NOTIFYs the
// scheduler already listens to: ChannelFreed when a job ends, enters
// RUNNING (for STARTED) or is deleted. No table of its own: the edges are
// in the dependent's spec, by uid.

// JobUIDsByName returns the uids of the tenant's live (not deleted) jobs
// of the given names, by name; names without such a job are left out.
func (s *Store) JobUIDsByName(ctx context.Context, tenantID string, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT name, uid::text FROM jobs
		WHERE tenant_id = $1 AND name = ANY($2) AND NOT deleted`, tenantID, names)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	defer rows.Close()
	for rows.Next() {
		var name, uid string
		if err := rows.Scan(&name, &uid); err != nil {
			return nil, translate(err, "jobs")
		}
		out[name] = uid
	}
	return out, translate(rows.Err(), "jobs")
}

// DependencyObserve returns what the scheduler needs of the given jobs
// (dependencies of pending jobs): state, whether they were ever admitted
// (a start time), whether deleted. A key without a row (purged) is
// returned Gone. It spans tenants, as the scheduler's reads do; the keys
// come from the jobs' own specs, of their own tenant.
func (s *Store) DependencyObserve(ctx context.Context, keys []JobKey) (map[JobKey]job.DependencyObserved, error) {
	out := make(map[JobKey]job.DependencyObserved, len(keys))
	for _, k := range keys {
		out[k] = job.DependencyObserved{Gone: true}
	}
	tenants, uids := keyArrays(keys)
	if len(uids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT j.tenant_id, j.uid::text, j.state, j.start_time IS NOT NULL, j.deleted
		FROM unnest($1::text[], $2::uuid[]) AS k(tenant_id, uid)
		JOIN jobs j ON j.tenant_id = k.tenant_id AND j.uid = k.uid`, tenants, uids)
	if err != nil {
		return nil, translate(err, "jobs")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k     JobKey
			state string
			o     job.DependencyObserved
		)
		if err := rows.Scan(&k.Tenant, &k.UID, &state, &o.Started, &o.Gone); err != nil {
			return nil, translate(err, "jobs")
		}
		o.State = job.State(state)
		out[k] = o
	}
	return out, translate(rows.Err(), "jobs")
}
