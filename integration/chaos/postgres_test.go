//go:build integration || chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/internal/pgtest"
)

// postgres is the suite's own Postgres: a primary and a synchronous
// streaming standby, each on a port of its own, so that either can be
// crashed, restarted, promoted or rewound; the machine's shared server on
// 5432 is never touched. Trainyard is given both hosts with
// target_session_attrs=read-write (URL), as it would be given a
// Patroni-managed pair; the suite is the fail-over manager. The servers
// run from Debian's binaries (pgtest.Local).
type postgres struct {
	*pgtest.Local
	nodes   [2]*pgtest.Node
	primary int // index in nodes
}

func startPostgres(t testing.TB) *postgres {
	t.Helper()
	l, err := pgtest.NewLocal("trainyard-chaos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &postgres{Local: l}
	t.Cleanup(func() {
		for _, n := range p.nodes {
			if n != nil {
				n.Close()
			}
		}
		if t.Failed() {
			t.Logf("Postgres logs kept: %s", filepath.Join(l.Dir, "pg*.log"))
			return
		}
		os.RemoveAll(l.Dir)
	})
	// Ports below the ephemeral range: a restart binds them again.
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.nodes {
		if p.nodes[i], err = l.Node(fmt.Sprintf("pg%d", i+1), ports[i]); err != nil {
			t.Fatal(err)
		}
	}
	primary, standby := p.nodes[0], p.nodes[1]
	// In postgresql.conf, not on the command line: pg_basebackup copies it
	// to the standby, and pg_rewind's crash recovery reads it.
	if err := primary.InitDB(pgConf); err != nil {
		t.Fatal(err)
	}
	if err := primary.Start(); err != nil {
		t.Fatal(err)
	}
	// The standby: a copy of the primary that streams its WAL from it
	// (-R writes standby.signal and primary_conninfo).
	backup := p.Command("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", "postgres",
		"-D", standby.Data(), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	if out, err := backup.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	if err := standby.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.synchronous(); err != nil {
		t.Fatal(err)
	}
	return p
}

// pgConf is both servers' configuration, after initdb's.
const pgConf = `
listen_addresses = '127.0.0.1'
# Trainyard's pools: two API servers, two workers, the suite.
max_connections = 300
# fsync off loses data only when the machine dies, not the process;
# synchronous_commit stays on, so an acknowledged commit is in the WAL (the
# kernel's page cache) of both servers before the client hears of it, and
# survives the crashes this suite causes.
fsync = off
synchronous_commit = on
# pg_rewind needs hint-bit changes WAL-logged, full-page writes, and the
# WAL back to the last checkpoint the two servers share (an immediate
# shutdown's crash recovery would recycle it).
wal_log_hints = on
full_page_writes = on
wal_keep_size = 1GB
# A standby whose primary restarted streams again within 0.2 s (the
# default waits 5 s, and every commit waits meanwhile).
wal_retrieve_retry_interval = 200ms
`

// URL is what Trainyard and the suite's checks connect to: both servers,
// the writable one whichever it is (target_session_attrs=read-write; pgx
// tries the hosts in order and skips a standby).
func (p *postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		p.nodes[0].Port, p.nodes[1].Port)
}

// standbyIndex is the index of the standby in nodes.
func (p *postgres) standbyIndex() int { return 1 - p.primary }

// restart crashes the primary and starts it again on the same port and
// data (the standby reconnects to it).
func (p *postgres) restart() error {
	n := p.nodes[p.primary]
	n.Crash()
	return n.Start()
}

// failover is what a fail-over manager (Patroni, CloudNativePG) does when
// the primary dies, with the death included: the primary is killed
// (immediate shutdown: every backend quits at once, no checkpoint; died is
// when its postmaster had exited), and the
// standby, which has every commit a client was told of (synchronous_commit
// on, the standby synchronous), is promoted. Until the old primary rejoins
// (rejoin) the new one has no standby, and waits for none: like Patroni's
// synchronous_mode without synchronous_mode_strict, it trades durability
// against a second failure for availability meanwhile. It returns when the
// new primary accepts writes.
func (p *postgres) failover() (killed, promoted string, died time.Time, err error) {
	old, next := p.nodes[p.primary], p.nodes[p.standbyIndex()]
	old.Crash()
	died = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := next.Exec(ctx, `ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`); err != nil {
		return old.Name, next.Name, died, fmt.Errorf("standby %s: %w", next.Name, err)
	}
	if out, err := p.Command("pg_ctl", "promote", "-w", "-t", "30", "-D", next.Data()).CombinedOutput(); err != nil {
		return old.Name, next.Name, died, fmt.Errorf("pg_ctl promote %s: %v\n%s", next.Name, err, out)
	}
	p.primary = p.standbyIndex()
	return old.Name, next.Name, died, nil
}

// rejoin makes the old primary, dead since failover, a synchronous standby
// of the new one: pg_rewind takes its data back to where the two diverged
// (it ran ahead by whatever it wrote and had not replicated when it died:
// nothing a client was told committed) and points it at the new primary;
// once it streams, the primary waits for it on every commit again.
func (p *postgres) rejoin() error {
	primary, old := p.nodes[p.primary], p.nodes[p.standbyIndex()]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// pg_rewind reads the new timeline from the primary's control file,
	// which the checkpoint after a promotion writes: do not wait for it.
	if err := primary.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("checkpoint on %s: %w", primary.Name, err)
	}
	rewind := p.Command("pg_rewind", "-D", old.Data(), "-R", "--no-sync",
		fmt.Sprintf("--source-server=host=127.0.0.1 port=%d user=postgres dbname=postgres", primary.Port))
	if out, err := rewind.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_rewind %s from %s: %v\n%s", old.Name, primary.Name, err, out)
	}
	if err := old.Start(); err != nil {
		return err
	}
	return p.synchronous()
}

// synchronous makes the primary wait, on every commit, for the standby to
// have the commit's WAL on disk (synchronous_commit is on by default),
// once the standby streams; it returns when the standby is synchronous.
func (p *postgres) synchronous() error {
	primary := p.nodes[p.primary]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := primary.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`); err != nil {
		return fmt.Errorf("synchronous_standby_names on %s: %w", primary.Name, err)
	}
	for {
		var n int
		err := primary.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'sync'`, &n)
		if err == nil && n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no synchronous standby streaming from %s after a minute (%v):\n%s", primary.Name, err,
				p.nodes[p.standbyIndex()].LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
