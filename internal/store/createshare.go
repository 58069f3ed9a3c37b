package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Concurrent JobCreate calls share statements (shared.go).
//
// A job's INSERT statement (createStatement) costs Postgres about ten times
// what a plain one-row INSERT does — four tables, eleven indexes on jobs,
// the tenant's share lock — and most of that is per statement. A statement
// takes jobs of any tenant and any caller; two jobs of one tenant with the
// same name or request id never share one (createKeys). A statement that
// fails as a whole is run again without the jobs that made it fail
// (insertShared).
const createBatchMax = 256

// createQueue shares statements between concurrent JobCreates.
type createQueue = sharedQueue[createItem, JobCreated]

func newCreateQueue(insert func(context.Context, []createItem) ([]JobCreated, []error)) *createQueue {
	return &createQueue{run: insert, max: createBatchMax, keys: createKeys}
}

// createKeys are a job's name and request id in its tenant.
func createKeys(it createItem) []string {
	j := it.p.Job
	keys := []string{j.Tenant + "\x00name\x00" + j.Name}
	if it.p.RequestID != "" {
		keys = append(keys, j.Tenant+"\x00request\x00"+it.p.RequestID)
	}
	return keys
}

// insertShared runs items — of several tenants and callers, no two of one
// tenant with the same name or request id — as one statement and says
// what became of each. A statement fails as a whole when a name is taken
// (the unique violation rolls every item back): the items whose names a
// live job has get ErrAlreadyExists and the rest go again. A statement
// that fails otherwise is retried one job at a time, so that one caller's
// job is never another's error.
func (s *Store) insertShared(ctx context.Context, items []createItem) ([]JobCreated, []error) {
	out, errs, err := s.insertJobs(ctx, items)
	if err == nil {
		return out, errs
	}
	out, errs = make([]JobCreated, len(items)), make([]error, len(items))
	if len(items) == 1 {
		errs[0] = s.createError(ctx, items[0], err)
		return out, errs
	}
	var taken map[int]bool
	if isUniqueViolation(err, "jobs_tenant_name_key") {
		taken, _ = s.takenNames(ctx, items) // on an error, one at a time below
	}
	if len(taken) > 0 {
		var again []int // indexes into items
		for i, it := range items {
			if taken[i] {
				errs[i] = fmt.Errorf("%w: %s", ErrAlreadyExists, jobWhat(it.p.Job.Tenant, it.p.Job.Name))
			} else {
				again = append(again, i)
			}
		}
		rest := make([]createItem, len(again))
		for k, i := range again {
			rest[k] = items[i]
		}
		o, e := s.insertShared(ctx, rest)
		for k, i := range again {
			out[i], errs[i] = o[k], e[k]
		}
		return out, errs
	}
	for i, it := range items {
		o, e := s.insertShared(ctx, []createItem{it})
		out[i], errs[i] = o[0], e[0]
	}
	return out, errs
}

// takenNames says which items' names a live job of their tenant has.
func (s *Store) takenNames(ctx context.Context, items []createItem) (map[int]bool, error) {
	tenants, names := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		tenants[i], names[i] = it.p.Job.Tenant, it.p.Job.Name
	}
	rows, err := s.pool.Query(ctx, `SELECT u.ord - 1 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(tenant_id, name, ord)
		WHERE EXISTS (SELECT FROM jobs j WHERE j.tenant_id = u.tenant_id AND j.name = u.name AND NOT j.deleted)`, tenants, names)
	if err != nil {
		return nil, err
	}
	idx, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, err
	}
	taken := make(map[int]bool, len(idx))
	for _, i := range idx {
		taken[i] = true
	}
	return taken, nil
}

// createError is what a failed one-job statement means for its caller.
func (s *Store) createError(ctx context.Context, it createItem, err error) error {
	tenantID, name := it.p.Job.Tenant, it.p.Job.Name
	if isUniqueViolation(err, "jobs_tenant_name_key") {
		err = s.nameConflicts(ctx, tenantID, []JobCreateParams{it.p}, err)
		var be *BatchError
		if errors.As(err, &be) && len(be.Items) == 1 {
			return be.Items[0].Err
		}
	}
	return translate(err, jobWhat(tenantID, name))
}
