package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/internal/audit"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
)

// Clusters (issue 45): the Kubernetes clusters one Trainyard drives. The
// operator writes names, labels and the admin state through the API
// (audited under no tenant, as platform-wide changes); each cluster's agent
// writes its heartbeat, capacity and nodes (ClusterHeartbeat); the sweep on
// the scheduler lease's holder is the only writer of health
// (ClusterSweep). The scheduler reads the READY clusters' nodes
// (ClusterNodesReady).

const sqlClusterCols = `c.name, c.display_name, c.labels, c.admin_state, c.reachable, c.heartbeat_time, c.agent,
	c.capacity, c.usage, c.node_count, c.create_time, c.update_time, c.agent_identity`

func scanCluster(row pgx.Row) (cluster.Cluster, error) {
	var (
		c               cluster.Cluster
		admin           string
		heartbeat       *time.Time
		capacity, usage cluster.Resources
		identity        *cluster.AgentIdentity
	)
	err := row.Scan(&c.Name, &c.DisplayName, &c.Labels, &admin, &c.Reachable, &heartbeat, &c.Agent,
		&capacity, &usage, &c.Nodes, &c.CreateTime, &c.UpdateTime, &identity)
	if identity != nil {
		c.AgentIdentity = *identity
	}
	c.Admin = cluster.AdminState(admin)
	c.Capacity, c.Usage = job.Vector(capacity), job.Vector(usage)
	if heartbeat != nil {
		c.HeartbeatTime = *heartbeat
	}
	return c, err
}

func clusterWhat(name string) string { return fmt.Sprintf("cluster %q", name) }

// clusterResource is a cluster's resource name in audit records.
func clusterResource(name string) string { return "clusters/" + name }

// ClusterCreate registers a cluster: ACTIVE, and unreachable until its
// agent's first heartbeat has been swept. ErrAlreadyExists when the name
// is taken.
func (s *Store) ClusterCreate(ctx context.Context, c cluster.Cluster) (cluster.Cluster, error) {
	err := s.inTx(ctx, func(tx *txn) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO clusters (name, display_name, labels, create_time, update_time, agent_identity) VALUES ($1, $2, $3, $4, $4, $5)`,
			c.Name, c.DisplayName, nonNilMap(c.Labels), s.timestamp(), identityColumn(c.AgentIdentity))
		if err != nil {
			return err
		}
		details := map[string]any{"displayName": c.DisplayName, "labels": nonNilMap(c.Labels)}
		if !c.AgentIdentity.IsZero() {
			details["agentIdentity"] = identityAudit(c.AgentIdentity)
		}
		return auditInsert(ctx, tx, "", audit.ClusterCreate, clusterResource(c.Name), details)
	})
	if err != nil {
		return cluster.Cluster{}, translate(err, clusterWhat(c.Name))
	}
	return s.ClusterGet(ctx, c.Name)
}

// ClusterGet returns a cluster; ErrNotFound when there is none.
func (s *Store) ClusterGet(ctx context.Context, name string) (cluster.Cluster, error) {
	c, err := scanCluster(s.pool.QueryRow(ctx, `SELECT `+sqlClusterCols+` FROM clusters c WHERE c.name = $1`, name))
	return c, translate(err, clusterWhat(name))
}

// ClusterList returns every cluster, by name.
func (s *Store) ClusterList(ctx context.Context) ([]cluster.Cluster, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sqlClusterCols+` FROM clusters c ORDER BY c.name`)
	if err != nil {
		return nil, translate(err, "clusters")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cluster.Cluster, error) { return scanCluster(r) })
	return list, translate(err, "clusters")
}

// ClusterUpdate changes what an operator describes a cluster with (display
// name, labels): fn edits the cluster as read, under a row lock. The
// change is audited with the fields before and after.
func (s *Store) ClusterUpdate(ctx context.Context, name string, fn func(*cluster.Cluster) error) (cluster.Cluster, error) {
	err := s.inTx(ctx, func(tx *txn) error {
		c, err := scanCluster(tx.QueryRow(ctx, `SELECT `+sqlClusterCols+` FROM clusters c WHERE c.name = $1 FOR NO KEY UPDATE`, name))
		if err != nil {
			return err
		}
		before := c
		before.Labels = maps.Clone(c.Labels)
		if err := fn(&c); err != nil {
			return errFromCallback{err}
		}
		changes := map[string]any{}
		if c.DisplayName != before.DisplayName {
			changes["displayName"] = map[string]any{"before": before.DisplayName, "after": c.DisplayName}
		}
		if !maps.Equal(c.Labels, before.Labels) {
			changes["labels"] = map[string]any{"before": nonNilMap(before.Labels), "after": nonNilMap(c.Labels)}
		}
		if c.AgentIdentity != before.AgentIdentity {
			changes["agentIdentity"] = map[string]any{"before": identityAudit(before.AgentIdentity), "after": identityAudit(c.AgentIdentity)}
		}
		if len(changes) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE clusters SET display_name = $2, labels = $3, update_time = $4, agent_identity = $5 WHERE name = $1`,
			name, c.DisplayName, nonNilMap(c.Labels), s.timestamp(), identityColumn(c.AgentIdentity)); err != nil {
			return err
		}
		// Labels decide which jobs' selectors a cluster matches.
		tx.notify(ChannelFreed, "")
		return auditInsert(ctx, tx, "", audit.ClusterUpdate, clusterResource(name), changes)
	})
	var cbErr errFromCallback
	if errors.As(err, &cbErr) {
		return cluster.Cluster{}, cbErr.err
	}
	if err != nil {
		return cluster.Cluster{}, translate(err, clusterWhat(name))
	}
	return s.ClusterGet(ctx, name)
}

// identityColumn is the agent_identity column's value: NULL for none.
func identityColumn(a cluster.AgentIdentity) *cluster.AgentIdentity {
	if a.IsZero() {
		return nil
	}
	return &a
}

// identityAudit is what the audit log keeps of an identity: who, and
// where its keys are; the key set itself (public, but long) by its
// digest.
func identityAudit(a cluster.AgentIdentity) map[string]any {
	if a.IsZero() {
		return nil
	}
	m := map[string]any{"issuer": a.Issuer, "subject": a.Subject}
	if a.JWKSURI != "" {
		m["jwksUri"] = a.JWKSURI
	}
	if a.JWKS != "" {
		sum := sha256.Sum256([]byte(a.JWKS))
		m["jwksSha256"] = hex.EncodeToString(sum[:])
	}
	return m
}

// ClusterIdentities returns the agent identities of every cluster that
// has one, by cluster name: what the control plane verifies remote
// agents' tokens against.
func (s *Store) ClusterIdentities(ctx context.Context) (map[string]cluster.AgentIdentity, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, agent_identity FROM clusters WHERE agent_identity IS NOT NULL`)
	if err != nil {
		return nil, translate(err, "clusters")
	}
	out := map[string]cluster.AgentIdentity{}
	var (
		name string
		id   cluster.AgentIdentity
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &id}, func() error {
		out[name] = id
		return nil
	})
	return out, translate(err, "clusters")
}

// adminActions are the audit actions of the operator's states.
var adminActions = map[cluster.AdminState]audit.Action{
	cluster.Active:        audit.ClusterUncordon,
	cluster.AdminDraining: audit.ClusterDrain,
	cluster.AdminCordoned: audit.ClusterCordon,
}

// ClusterSetAdmin sets the operator's state of a cluster: DRAINING,
// CORDONED, or ACTIVE again. Heartbeats never change it. Setting the
// state a cluster already has changes nothing and records nothing.
func (s *Store) ClusterSetAdmin(ctx context.Context, name string, state cluster.AdminState) (cluster.Cluster, error) {
	action, ok := adminActions[state]
	if !ok {
		return cluster.Cluster{}, fmt.Errorf("%w: %q is not an admin state of a cluster", ErrFailedPrecondition, state)
	}
	err := s.inTx(ctx, func(tx *txn) error {
		var before string
		if err := tx.QueryRow(ctx, `SELECT admin_state FROM clusters WHERE name = $1 FOR NO KEY UPDATE`, name).Scan(&before); err != nil {
			return err
		}
		if cluster.AdminState(before) == state {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE clusters SET admin_state = $2, update_time = $3 WHERE name = $1`,
			name, string(state), s.timestamp()); err != nil {
			return err
		}
		// Uncordoning frees capacity; draining and cordoning change what
		// the next cycle may place.
		tx.notify(ChannelFreed, "")
		return auditInsert(ctx, tx, "", action, clusterResource(name), map[string]any{"before": before, "after": string(state)})
	})
	if err != nil {
		return cluster.Cluster{}, translate(err, clusterWhat(name))
	}
	return s.ClusterGet(ctx, name)
}

// ClusterDelete removes a cluster and its published nodes. The default
// cluster is never removed (FAILED_PRECONDITION). Without force, neither
// is a cluster where jobs are admitted and unfinished (jobs.cluster), nor
// one whose agent still reports (reachable, with a heartbeat): drain it,
// let its jobs end, stop its agent (the sweep then marks it unreachable),
// or force. Forcing leaves those jobs' rows naming a cluster that no
// longer exists; moving them is the lost-cluster requeue's (issue 45).
func (s *Store) ClusterDelete(ctx context.Context, name string, force bool) error {
	if name == cluster.Default {
		return fmt.Errorf("%w: the default cluster cannot be deleted", ErrFailedPrecondition)
	}
	err := s.inTx(ctx, func(tx *txn) error {
		var (
			reporting bool
			jobs      int64
		)
		err := tx.QueryRow(ctx, `
			SELECT c.reachable AND c.heartbeat_time IS NOT NULL,
			       (SELECT count(*) FROM jobs j WHERE j.cluster = c.name AND j.admitted AND NOT j.deleted AND j.`+sqlUnfinished+`)
			FROM clusters c WHERE c.name = $1 FOR UPDATE`, name).Scan(&reporting, &jobs)
		if err != nil {
			return err
		}
		switch {
		case force:
		case jobs > 0:
			return fmt.Errorf("%w: %d unfinished jobs are admitted to cluster %q; drain it and let them end, or force", ErrFailedPrecondition, jobs, name)
		case reporting:
			return fmt.Errorf("%w: cluster %q is reachable and its agent reports; stop its agent first, or force", ErrFailedPrecondition, name)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM clusters WHERE name = $1`, name); err != nil {
			return err
		}
		tx.notify(ChannelFreed, "")
		return auditInsert(ctx, tx, "", audit.ClusterDelete, clusterResource(name), map[string]any{"force": force, "unfinishedJobs": jobs})
	})
	return translate(err, clusterWhat(name))
}

// ClusterHeartbeatParams are what an agent reports of its cluster.
type ClusterHeartbeatParams struct {
	Cluster string
	// Agent is the reporting worker's id.
	Agent           string
	Capacity, Usage job.Vector
	NodeCount       int
	// Nodes are written when NodesDigest differs from the digest stored
	// (the agent tells its changes by it); an empty digest leaves the
	// published nodes alone.
	Nodes       []cluster.Node
	NodesDigest string
}

// ClusterHeartbeat records an agent's heartbeat: the time (the store's
// clock), capacity, usage and node count, and the nodes when their digest
// changed. It never changes the operator's state nor health (the sweep
// does). ErrNotFound when the cluster is not registered. nodesWritten
// reports whether the nodes were rewritten.
func (s *Store) ClusterHeartbeat(ctx context.Context, p ClusterHeartbeatParams) (nodesWritten bool, err error) {
	err = s.inTx(ctx, func(tx *txn) error {
		now := s.timestamp()
		tag, err := tx.Exec(ctx, `
			UPDATE clusters SET heartbeat_time = $2, agent = $3, capacity = $4, usage = $5, node_count = $6
			WHERE name = $1`,
			p.Cluster, now, p.Agent, cluster.Resources(p.Capacity), cluster.Resources(p.Usage), p.NodeCount)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s is not registered", ErrNotFound, clusterWhat(p.Cluster))
		}
		if p.NodesDigest == "" {
			return nil
		}
		nodes := p.Nodes
		if nodes == nil {
			nodes = []cluster.Node{}
		}
		tag, err = tx.Exec(ctx, `
			INSERT INTO cluster_nodes (cluster, nodes, digest, update_time) VALUES ($1, $2, $3, $4)
			ON CONFLICT (cluster) DO UPDATE SET nodes = $2, digest = $3, update_time = $4
			WHERE cluster_nodes.digest <> $3`,
			p.Cluster, nodes, p.NodesDigest, now)
		if err != nil {
			return err
		}
		nodesWritten = tag.RowsAffected() > 0
		if nodesWritten {
			// Nodes came, went or freed capacity: a waiting job may fit.
			tx.notify(ChannelFreed, "")
		}
		return nil
	})
	return nodesWritten, translate(err, clusterWhat(p.Cluster))
}

// ClusterHealth is a cluster's health after a sweep.
type ClusterHealth struct {
	Cluster       string
	State         cluster.State
	HeartbeatTime time.Time // zero: no heartbeat yet
	// Changed: this sweep flipped its reachability.
	Changed bool
}

// ClusterSweep marks clusters whose last heartbeat is older than timeout
// UNREACHABLE, and those heard from again within it reachable again, and
// returns every cluster's health. It is the only writer of health; run it
// in one process (the scheduler lease's holder), though two at once only
// write the same verdict. A cluster never heard from is unreachable,
// except the default cluster right after the migration created it: it
// keeps the reachability it had for one timeout, for its agent to report.
func (s *Store) ClusterSweep(ctx context.Context, timeout time.Duration) ([]ClusterHealth, error) {
	var out []ClusterHealth
	err := s.inTx(ctx, func(tx *txn) error {
		now := s.timestamp()
		rows, err := tx.Query(ctx, `
			WITH flipped AS (
				UPDATE clusters SET reachable = NOT reachable, update_time = $2
				WHERE reachable <> coalesce(coalesce(heartbeat_time, CASE WHEN reachable THEN create_time END) > $1, false)
				RETURNING name
			)
			SELECT c.name, c.admin_state, c.reachable <> (f.name IS NOT NULL), c.heartbeat_time, f.name IS NOT NULL
			FROM clusters c LEFT JOIN flipped f ON f.name = c.name
			ORDER BY c.name`, now.Add(-timeout), now)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClusterHealth, error) {
			var (
				h         ClusterHealth
				admin     string
				reachable bool
				heartbeat *time.Time
			)
			err := r.Scan(&h.Cluster, &admin, &reachable, &heartbeat, &h.Changed)
			h.State = cluster.Cluster{Admin: cluster.AdminState(admin), Reachable: reachable}.State()
			if heartbeat != nil {
				h.HeartbeatTime = *heartbeat
			}
			return h, err
		})
		if err != nil {
			return err
		}
		for _, h := range out {
			if h.Changed && h.State != cluster.Unreachable {
				// A cluster back: its capacity may let waiting jobs in.
				tx.notify(ChannelFreed, "")
			}
		}
		return nil
	})
	return out, translate(err, "clusters")
}

// ClusterNodesReady returns the published nodes of every READY cluster
// (reachable, neither draining nor cordoned), by cluster name: where the
// scheduler may place new gangs. A cluster whose agent has published no
// nodes yet is left out.
func (s *Store) ClusterNodesReady(ctx context.Context) ([]cluster.Nodes, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.name, c.labels, n.nodes FROM clusters c JOIN cluster_nodes n ON n.cluster = c.name
		WHERE c.reachable AND c.admin_state = 'ACTIVE'
		ORDER BY c.name`)
	if err != nil {
		return nil, translate(err, "cluster nodes")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cluster.Nodes, error) {
		var n cluster.Nodes
		err := r.Scan(&n.Cluster, &n.Labels, &n.Nodes)
		return n, err
	})
	return list, translate(err, "cluster nodes")
}

// ClusterRequeueLost takes back the unfinished jobs admitted to a lost
// cluster (issue 45): holder (the scheduler lease's holder) takes over
// those whose worker's lease has run out — the cluster's workers are
// silent too, or they would still own them — and saves each as its new
// owner, fenced like any worker's save: QUEUED, unadmitted, in no cluster
// (job.ClusterLost: a restart), its usage span closed. Back in the
// scheduler's queue, it runs wherever there is room. A job in no cluster
// has no pods anywhere Trainyard looks: the lost cluster's workers, if it
// comes back, delete what is left of it there (their orphan sweep). It
// returns the jobs sent back.
func (s *Store) ClusterRequeueLost(ctx context.Context, holder, name string, unreachableFor time.Duration) ([]JobKey, error) {
	var taken []WorkerJob
	b := &pgx.Batch{}
	b.Queue(sqlLeaseUpsert, holder, microseconds(time.Minute))
	b.Queue(`
		UPDATE jobs j SET worker_id = $1, version = j.version + 1
		WHERE j.cluster = $2 AND j.active AND j.admitted AND j.`+sqlUnfinished+`
		  AND (j.worker_id IS NULL OR j.worker_id IN (SELECT worker_id FROM worker_leases WHERE expires_at < now()))
		RETURNING `+jobCols, holder, name).Query(func(rows pgx.Rows) error {
		var err error
		taken, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkerJob, error) {
			w, _, err := scanJob(row)
			return w, err
		})
		return err
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err, clusterWhat(name))
	}
	var (
		out  []JobKey
		errs []error
	)
	for _, w := range taken {
		st, drafts := job.ClusterLost(w.Job.Status, name, unreachableFor, s.timestamp())
		_, err := s.JobSave(ctx, JobSaveParams{WorkerID: holder, Tenant: w.Job.Tenant, UID: w.Job.UID, Version: w.Version,
			Status: st, Events: eventsOf(drafts), Requeue: &Requeue{}})
		if err != nil {
			// Left owned by holder: its lease runs out with the next
			// sweep's, and that sweep takes the job over again.
			errs = append(errs, err)
			continue
		}
		out = append(out, w.Key())
	}
	return out, errors.Join(errs...)
}
