package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
	"github.com/trainyard/trainyard/internal/tenant"
)

// TenantListParams selects tenants for TenantList.
type TenantListParams struct {
	// Subject and Groups select the tenants where the subject, or one of the
	// groups, is a member. Ignored when All is set.
	Subject string
	Groups  []string
	// All lists every tenant (platform admins).
	All bool
	// PageSize defaults to DefaultPageSize and is capped at MaxPageSize.
	PageSize int
	// After is the cursor: the last tenant id of the previous page.
	After string
}

const tenantCols = `t.id, t.display_name, t.labels, t.quota, t.scheduling, t.sharing, t.pod_reader_groups, t.namespace, t.state,
	t.create_time, t.update_time, t.clusters,
	coalesce((SELECT jsonb_agg(jsonb_build_object('kind', m.kind, 'principal', m.principal, 'role', m.role)
	                           ORDER BY m.position)
	          FROM tenant_members m WHERE m.tenant_id = t.id), '[]')`

type memberRow struct {
	Kind      string `json:"kind"`
	Principal string `json:"principal"`
	Role      string `json:"role"`
}

func scanTenant(row pgx.Row) (tenant.Tenant, error) {
	var (
		t       tenant.Tenant
		state   string
		members []memberRow
	)
	err := row.Scan(&t.ID, &t.DisplayName, &t.Labels, &t.Quota, &t.Scheduling, &t.Sharing, &t.PodReaderGroups, &t.Namespace, &state,
		&t.CreateTime, &t.UpdateTime, &t.Clusters, &members)
	if err != nil {
		return tenant.Tenant{}, err
	}
	t.State = tenant.State(state)
	for _, m := range members {
		role, _ := tenant.ParseRole(m.Role)
		mem := tenant.Member{Role: role}
		if m.Kind == "group" {
			mem.Group = m.Principal
		} else {
			mem.Subject = m.Principal
		}
		t.Members = append(t.Members, mem)
	}
	if len(t.Labels) == 0 {
		t.Labels = nil
	}
	if len(t.PodReaderGroups) == 0 {
		t.PodReaderGroups = nil
	}
	if len(t.Clusters) == 0 {
		t.Clusters = nil
	}
	return t, nil
}

func tenantWhat(id string) string { return fmt.Sprintf("tenant %q", id) }

// TenantCreate stores a new tenant; State defaults to ACTIVE.
func (s *Store) TenantCreate(ctx context.Context, t tenant.Tenant) (tenant.Tenant, error) {
	if t.State == "" {
		t.State = tenant.Active
	}
	now := s.timestamp()
	err := s.inTx(ctx, func(tx *txn) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO tenants (id, display_name, labels, quota, pod_reader_groups, namespace, state,
			                     create_time, update_time, scheduling, sharing, clusters)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11)`,
			t.ID, t.DisplayName, nonNilMap(t.Labels), t.Quota, nonNilSlice(t.PodReaderGroups), t.Namespace,
			string(t.State), now, t.Scheduling, t.Sharing, nonNilSlice(t.Clusters))
		if err != nil {
			return err
		}
		if err := membersWrite(ctx, tx, t.ID, t.Members); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, t.ID, audit.TenantCreate, resname.Tenant.Format(t.ID), audit.TenantCreated(t)); err != nil {
			return err
		}
		tx.notify(ChannelTenants, t.ID)
		return nil
	})
	if err != nil {
		return tenant.Tenant{}, translate(err, tenantWhat(t.ID))
	}
	return s.TenantGet(ctx, t.ID)
}

// TenantGet returns a tenant with its members.
func (s *Store) TenantGet(ctx context.Context, id string) (tenant.Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants t WHERE t.id = $1`, id))
	return t, translate(err, tenantWhat(id))
}

// TenantList returns up to PageSize tenants ordered by id, after p.After.
// The next page starts after the last id returned; ask for one more than you
// show to know whether there is one.
func (s *Store) TenantList(ctx context.Context, p TenantListParams) ([]tenant.Tenant, error) {
	size := clampPageSize(p.PageSize)
	var rows pgx.Rows
	var err error
	if p.All {
		rows, err = s.pool.Query(ctx, `SELECT `+tenantCols+` FROM tenants t
			WHERE t.id > $1 ORDER BY t.id LIMIT $2`, p.After, size)
	} else {
		rows, err = s.pool.Query(ctx, `SELECT `+tenantCols+` FROM tenants t
			WHERE t.id > $1
			  AND t.id IN (SELECT m.tenant_id FROM tenant_members m
			               WHERE (m.kind = 'subject' AND m.principal = $3 AND $3 <> '')
			                  OR (m.kind = 'group' AND m.principal = ANY($4::text[])))
			ORDER BY t.id LIMIT $2`, p.After, size, p.Subject, nonNilSlice(p.Groups))
	}
	if err != nil {
		return nil, translate(err, "tenants")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tenant.Tenant, error) { return scanTenant(r) })
	return list, translate(err, "tenants")
}

// TenantListAll returns every tenant, for the worker's tenant reconciler.
func (s *Store) TenantListAll(ctx context.Context) ([]tenant.Tenant, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tenantCols+` FROM tenants t ORDER BY t.id`)
	if err != nil {
		return nil, translate(err, "tenants")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tenant.Tenant, error) { return scanTenant(r) })
	return list, translate(err, "tenants")
}

// sqlTenantUsage reads through jobs_unfinished_idx (explain_test.go).
const sqlTenantUsage = `SELECT spec FROM jobs
	WHERE tenant_id = $1 AND active AND NOT deleted AND admitted
	  AND ` + sqlUnfinished

// TenantUsage is what a tenant's admitted jobs that have not finished
// request together: the jobs the scheduler counts against the tenant's
// quota (sqlSchedulerJobs' admitted rows), summed by job.Spec.Demand.
func (s *Store) TenantUsage(ctx context.Context, id string) (job.Vector, error) {
	rows, err := s.pool.Query(ctx, sqlTenantUsage, id)
	if err != nil {
		return job.Vector{}, translate(err, "jobs")
	}
	specs, err := pgx.CollectRows(rows, pgx.RowTo[job.Spec])
	if err != nil {
		return job.Vector{}, translate(err, "jobs")
	}
	var sum job.Vector
	for _, spec := range specs {
		d, err := spec.Demand()
		if err != nil {
			return job.Vector{}, fmt.Errorf("tenant %q usage: %w", id, err)
		}
		sum = sum.Add(d)
	}
	return sum, nil
}

// TenantUpdate reads the tenant under a row lock, lets fn change it and
// writes it back (members rewritten as a whole). fn must not change the id
// or the create time; returning an error from fn aborts the update and
// returns that error.
func (s *Store) TenantUpdate(ctx context.Context, id string, fn func(*tenant.Tenant) error) (tenant.Tenant, error) {
	err := s.inTx(ctx, func(tx *txn) error {
		// NO KEY UPDATE: conflicts with JobCreate's FOR SHARE, so a create
		// waits for this update (and then sees the new state) and this update
		// waits for creates in flight; it does not conflict with the key-share
		// locks other tables' foreign keys take on the row.
		t, err := scanTenant(tx.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants t
			WHERE t.id = $1 FOR NO KEY UPDATE OF t`, id))
		if err != nil {
			return err
		}
		before := t
		before.Labels, before.Members = maps.Clone(t.Labels), slices.Clone(t.Members)
		before.PodReaderGroups = slices.Clone(t.PodReaderGroups)
		before.Clusters = slices.Clone(t.Clusters)
		if err := fn(&t); err != nil {
			return errFromCallback{err}
		}
		if t.ID != id {
			return errFromCallback{fmt.Errorf("%w: a tenant's id cannot change", ErrFailedPrecondition)}
		}
		if err := tenantClustersInUse(ctx, tx, id, before.Clusters, t.Clusters); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE tenants SET display_name = $2, labels = $3, quota = $4, pod_reader_groups = $5,
			                   namespace = $6, state = $7, update_time = $8, scheduling = $9, sharing = $10, clusters = $11
			WHERE id = $1`,
			id, t.DisplayName, nonNilMap(t.Labels), t.Quota, nonNilSlice(t.PodReaderGroups), t.Namespace,
			string(t.State), s.timestamp(), t.Scheduling, t.Sharing, nonNilSlice(t.Clusters))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tenant_members WHERE tenant_id = $1`, id); err != nil {
			return err
		}
		if err := membersWrite(ctx, tx, id, t.Members); err != nil {
			return err
		}
		if action, details, changed := audit.TenantChanged(before, t); changed {
			if err := auditInsert(ctx, tx, id, action, resname.Tenant.Format(id), details); err != nil {
				return err
			}
		}
		if before.Quota != t.Quota {
			// In this transaction, as a job's events are (the outbox).
			if err := outboxTenantQuota(ctx, tx, t); err != nil {
				return err
			}
		}
		// A quota or policy change can let waiting jobs in.
		tx.notify(ChannelFreed, id)
		tx.notify(ChannelTenants, id)
		return nil
	})
	var cbErr errFromCallback
	if errors.As(err, &cbErr) {
		return tenant.Tenant{}, cbErr.err
	}
	if err != nil {
		return tenant.Tenant{}, translate(err, tenantWhat(id))
	}
	return s.TenantGet(ctx, id)
}

// TenantSetState changes a tenant's lifecycle state.
func (s *Store) TenantSetState(ctx context.Context, id string, state tenant.State) (tenant.Tenant, error) {
	return s.TenantUpdate(ctx, id, func(t *tenant.Tenant) error {
		t.State = state
		return nil
	})
}

// errFromCallback carries a caller's own error through the transaction
// untranslated.
type errFromCallback struct{ err error }

func (e errFromCallback) Error() string { return e.err.Error() }

func membersWrite(ctx context.Context, tx pgx.Tx, tenantID string, members []tenant.Member) error {
	if len(members) == 0 {
		return nil
	}
	kinds := make([]string, 0, len(members))
	principals := make([]string, 0, len(members))
	roles := make([]string, 0, len(members))
	for _, m := range members {
		switch {
		case m.Subject != "" && m.Group == "":
			kinds, principals = append(kinds, "subject"), append(principals, m.Subject)
		case m.Group != "" && m.Subject == "":
			kinds, principals = append(kinds, "group"), append(principals, m.Group)
		default:
			return fmt.Errorf("%w: a member needs exactly one of subject and group", ErrFailedPrecondition)
		}
		if m.Role == tenant.RoleNone {
			return fmt.Errorf("%w: member %s%s has no role", ErrFailedPrecondition, m.Subject, m.Group)
		}
		roles = append(roles, m.Role.String())
	}
	// A principal listed twice keeps its highest role.
	_, err := tx.Exec(ctx, `
		INSERT INTO tenant_members (tenant_id, kind, principal, role, position)
		SELECT $1, k, p, r, o FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(k, p, r, o)
		ON CONFLICT (tenant_id, kind, principal) DO UPDATE SET role =
			CASE WHEN array_position(ARRAY['viewer','editor','admin'], excluded.role)
			        > array_position(ARRAY['viewer','editor','admin'], tenant_members.role)
			     THEN excluded.role ELSE tenant_members.role END`,
		tenantID, kinds, principals, roles)
	return err
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// maxJobsNamed is how many jobs an error names before it counts the rest.
const maxJobsNamed = 10

// tenantClustersInUse refuses to narrow a tenant's allowed clusters
// (from before to after; empty is every cluster) while unfinished jobs of
// the tenant are admitted to a cluster it takes away: their pods run in
// the namespace the cluster's workers would then remove. The error names
// the first such cluster and its jobs. It runs under the tenant row's
// lock, which job creates wait for; the scheduler's admissions do not, so
// a job admitted there in the same instant is caught by the tenant
// reconciler instead, which keeps the namespace until the job has ended
// (internal/tenantctl, "Clusters").
func tenantClustersInUse(ctx context.Context, tx *txn, id string, before, after []string) error {
	if len(after) == 0 || (len(before) > 0 && !slices.ContainsFunc(before, func(c string) bool { return !slices.Contains(after, c) })) {
		return nil // every cluster allowed, or none taken away
	}
	var (
		cluster string
		names   []string
		count   int64
	)
	err := tx.QueryRow(ctx, `
		SELECT j.cluster, (array_agg(j.name ORDER BY j.name))[1:$3], count(*)
		FROM jobs j
		WHERE j.tenant_id = $1 AND j.admitted AND NOT j.deleted AND j.`+sqlUnfinished+` AND NOT (j.cluster = ANY($2::text[]))
		GROUP BY j.cluster ORDER BY j.cluster LIMIT 1`, id, after, maxJobsNamed).Scan(&cluster, &names, &count)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	list := strings.Join(names, ", ")
	if count > int64(len(names)) {
		list += fmt.Sprintf(" and %d more", count-int64(len(names)))
	}
	return errFromCallback{fmt.Errorf("%w: tenant %q has unfinished jobs admitted to cluster %q (%s); cancel them or let them finish before taking %q from its clusters",
		ErrFailedPrecondition, id, cluster, list, cluster)}
}
