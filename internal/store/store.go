package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors returned by the store. Callers test them with errors.Is; the text
// after the sentinel's own says which object and why, and is safe to show
// to the user who asked (it never contains SQL).
var (
	ErrNotFound           = errors.New("not found")
	ErrAlreadyExists      = errors.New("already exists")
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrConflict: the row's version is not the one the caller read. Re-read
	// and decide again.
	ErrConflict = errors.New("conflict: the job changed since it was read")
	// ErrLeaseLost: the caller no longer owns the job (lease expired, taken
	// over or released). Stop acting on it.
	ErrLeaseLost = errors.New("lease lost")
	// ErrUnavailable: Postgres could not be reached or could not serve the
	// query right now (connection refused or lost, shutting down, too many
	// connections, a statement timeout). Nothing was changed that the
	// caller can see; retry later. The text after the sentinel is for logs:
	// it may name addresses.
	ErrUnavailable = errors.New("database unavailable")
)

// Page sizes (AIP-158).
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// Store is Trainyard's Postgres storage. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// now stamps times kept in rows and JSON. Leases use the database's
	// clock instead, so that all workers agree on expiry.
	now func() time.Time
	// notifier sends the NOTIFYs of committed transactions (notifier.go).
	notifier *notifier
	// creates shares statements between concurrent JobCreates (createshare.go).
	creates *createQueue
	// saves shares statements between concurrent JobSaves (queue.go).
	saves *sharedQueue[saveItem, int64]
	// cluster is where this process's workers run jobs: JobClaim claims
	// only jobs admitted there.
	cluster string
}

// Option configures a Store.
type Option func(*Store)

// WithClock stamps rows and JSON with now instead of time.Now: tests that
// drive a worker's clock give the store the same one, so that a start time
// written at admission and the deadline a worker plans agree.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithCluster says which cluster this process's workers run jobs in
// (`trainyard worker --cluster`): JobClaim claims only jobs admitted
// there. Defaults to DefaultCluster.
func WithCluster(name string) Option { return func(s *Store) { s.cluster = name } }

// New returns a Store using pool. The caller keeps ownership of pool.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool, now: time.Now, notifier: newNotifier(pool), cluster: DefaultCluster}
	for _, o := range opts {
		o(s)
	}
	s.creates = newCreateQueue(s.insertShared)
	s.saves = newSaveQueue(s.saveShared)
	return s
}

// Open connects a pool to databaseURL (a postgres:// URL or key=value DSN,
// with pgxpool's pool_* parameters) and checks that Postgres answers.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %v", err)
	}
	applyTimeouts(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %v", err)
	}
	s := New(pool, opts...)
	if err := s.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Timeouts the store sets unless the database URL does (issue 41, finding
// 3: a stalled database must not hang a call for ever). Each call's
// context deadline still applies within them: pgx cancels a query whose
// context ends.
const (
	// DefaultConnectTimeout bounds dialing and the startup handshake
	// (connect_timeout in the URL).
	DefaultConnectTimeout = 5 * time.Second
	// DefaultStatementTimeout bounds one statement on the server
	// (statement_timeout).
	DefaultStatementTimeout = 30 * time.Second
	// DefaultLockTimeout bounds the wait for a row or table lock
	// (lock_timeout), well inside a call's deadline.
	DefaultLockTimeout = 10 * time.Second
	// DefaultIdleInTransactionTimeout cuts off a session stopped inside a
	// write transaction, which would hold back the delivery of every
	// event (doc.go, "Events") (idle_in_transaction_session_timeout).
	DefaultIdleInTransactionTimeout = time.Minute
)

func applyTimeouts(cfg *pgxpool.Config) {
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	for param, d := range map[string]time.Duration{
		"statement_timeout":                   DefaultStatementTimeout,
		"lock_timeout":                        DefaultLockTimeout,
		"idle_in_transaction_session_timeout": DefaultIdleInTransactionTimeout,
	} {
		if _, ok := cfg.ConnConfig.RuntimeParams[param]; !ok {
			cfg.ConnConfig.RuntimeParams[param] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that Postgres answers (for readiness probes).
func (s *Store) Ping(ctx context.Context) error {
	return translate(s.pool.Ping(ctx), "database")
}

// timestamp is the store's clock, at the precision Postgres keeps.
func (s *Store) timestamp() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// translate is the one place where database errors become the store's
// errors. what names the object for messages ("job \"x\"").
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrAlreadyExists) ||
		errors.Is(err, ErrFailedPrecondition) || errors.Is(err, ErrConflict) ||
		errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrUnavailable) {
		return err
	}
	if expired := (*EventsExpiredError)(nil); errors.As(err, &expired) {
		return err
	}
	if role := (*RoleError)(nil); errors.As(err, &role) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("store: %s: %w", what, context.Canceled)
	}
	// A connection that could not be made is an outage whatever Postgres
	// said while refusing it: the database does not accept connections
	// (55000), does not exist yet or any more (3D000), refuses the role
	// (28xxx), is shutting down or starting (57P01-57P03), or does not
	// answer within the connect timeout (a deadline of the pool's own).
	// Checked before the codes, which mean something else at query time,
	// and before the deadline (issue 41, findings 2 and 3).
	if connectErr := (*pgconn.ConnectError)(nil); errors.As(err, &connectErr) {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store: %s: %w", what, context.DeadlineExceeded)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrAlreadyExists, what)
		case "23503": // foreign_key_violation: the parent is missing
			return fmt.Errorf("%w: %s (%s)", ErrNotFound, what, parentOf(pgErr.ConstraintName))
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return fmt.Errorf("%w: %s: concurrent update, retry", ErrConflict, what)
		}
		if unavailableState(pgErr.Code) {
			return fmt.Errorf("%w: %s: postgres error %s: %s", ErrUnavailable, what, pgErr.Code, pgErr.Message)
		}
		// The message is for logs; pgx types stay inside this package.
		return fmt.Errorf("store: %s: postgres error %s: %s", what, pgErr.Code, pgErr.Message)
	}
	if connectionLost(err) {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
	}
	return fmt.Errorf("store: %s: %v", what, err)
}

// unavailableState reports whether a SQLSTATE says the server cannot serve
// the query now, though it may in a moment: connection exceptions (class
// 08), insufficient resources (53: too many connections, out of memory or
// disk), operator intervention (57P01-57P03: shutdown, crash, starting up;
// 57P05: idle session timeout; 57014: a statement timeout or cancel), a
// lock not obtained within lock_timeout (55P03), and a read-only
// transaction (25006: a primary that became a standby in a failover).
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
		return true
	}
	switch code {
	case "57P01", "57P02", "57P03", "57P05", "57014", "55P03", "25006":
		return true
	}
	return false
}

// connectionLost reports whether err is the connection failing rather than
// the query: it could not be made, it broke, or it timed out. A scan into a
// wrong type and other programming errors are none of these and stay
// internal.
func connectionLost(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

func parentOf(constraint string) string {
	switch constraint {
	case "jobs_tenant_id_fkey", "secrets_tenant_id_fkey", "tenant_members_tenant_id_fkey":
		return "tenant does not exist"
	case "idempotency_keys_tenant_id_job_uid_fkey":
		return "job does not exist"
	}
	return "referenced row does not exist"
}

// inTx runs fn in a transaction and commits when fn returns nil; then it
// hands the NOTIFYs fn asked for (tx.notify) to the notifier.
func (s *Store) inTx(ctx context.Context, fn func(*txn) error) error {
	var t *txn
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t = &txn{Tx: tx} // afresh on every call: nothing of a failed attempt is sent
		return fn(t)
	})
	if err == nil {
		s.notifier.add(t.notes)
	}
	return err
}

// pipelined runs a transaction in two round trips where inTx takes one per
// statement and two more, for the writers on a job's way to its pods (the
// scheduler's commit): BEGIN and reads in one batch, then the writes that
// writes queues on b once every read's callback has run, and COMMIT, in
// another. An error from writes rolls back; so does any statement's. Once
// committed, the NOTIFYs writes asked for (tx.notify; tx has no Tx) go to
// the notifier.
func (s *Store) pipelined(ctx context.Context, reads *pgx.Batch, writes func(b *pgx.Batch, tx *txn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection released inside a transaction (a rollback that failed
	// too) is closed by the pool, not reused.
	defer conn.Release()
	first := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: "BEGIN"}}, reads.QueuedQueries...)}
	err = conn.SendBatch(ctx, first).Close()
	tx := &txn{}
	var second pgx.Batch
	if err == nil {
		err = writes(&second, tx)
	}
	if err == nil {
		second.Queue("COMMIT")
		err = conn.SendBatch(ctx, &second).Close()
	}
	if err != nil {
		rollback, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, _ = conn.Exec(rollback, "ROLLBACK")
		return err
	}
	s.notifier.add(tx.notes)
	return nil
}

func clampPageSize(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}
