//go:build integration || chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/integration/cluster"
)

// postgres is the suite's own Postgres: a primary and a synchronous
// streaming standby, each on a port of its own, so that either can be
// crashed, restarted, promoted or rewound; the machine's shared server on
// 5432 is never touched. Trainyard is given both hosts with
// target_session_attrs=read-write (URL), as it would be given a
// Patroni-managed pair; the suite is the fail-over manager.
//
// It runs Debian's binaries from /usr/lib/postgresql/<newest version>/bin,
// as the postgres user when the tests run as root (initdb and postgres
// refuse root).
type postgres struct {
	bin, dir string // dir holds each node's data directory, the sockets and the logs
	cred     *syscall.Credential
	nodes    [2]*pgNode
	primary  int // index in nodes
}

// pgNode is one server of the pair.
type pgNode struct {
	pg     *postgres
	name   string // pg1, pg2: the data directory's and the log's name
	port   int
	log    *os.File
	cmd    *exec.Cmd
	exited chan struct{}
}

func startPostgres(t testing.TB) *postgres {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "trainyard-chaos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &postgres{bin: bin, dir: dir}
	t.Cleanup(func() {
		for _, n := range p.nodes {
			if n != nil {
				n.crash()
				if n.log != nil {
					n.log.Close()
				}
			}
		}
		if t.Failed() {
			t.Logf("Postgres logs kept: %s", filepath.Join(dir, "pg*.log"))
			return
		}
		os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, Postgres must run as the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	// Ports below the ephemeral range: a restart binds them again.
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.nodes {
		n := &pgNode{pg: p, name: fmt.Sprintf("pg%d", i+1), port: ports[i]}
		if n.log, err = os.Create(filepath.Join(dir, n.name+".log")); err != nil {
			t.Fatal(err)
		}
		p.nodes[i] = n
	}
	primary, standby := p.nodes[0], p.nodes[1]
	initdb := p.command("initdb", "-D", primary.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// In postgresql.conf, not on the command line: pg_basebackup copies it
	// to the standby, and pg_rewind's crash recovery reads it.
	conf, err := os.OpenFile(filepath.Join(primary.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = conf.WriteString(pgConf)
		err = errors.Join(err, conf.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := primary.start(); err != nil {
		t.Fatal(err)
	}
	// The standby: a copy of the primary that streams its WAL from it
	// (-R writes standby.signal and primary_conninfo).
	backup := p.command("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres",
		"-D", standby.data(), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	if out, err := backup.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	if err := standby.start(); err != nil {
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

// postgresBin is the bin directory of the newest PostgreSQL installed.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(a)), 64)
		vb, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(b)), 64)
		return int(va - vb)
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (Debian's postgresql package)")
}

func (p *postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

// URL is what Trainyard and the suite's checks connect to: both servers,
// the writable one whichever it is (target_session_attrs=read-write; pgx
// tries the hosts in order and skips a standby).
func (p *postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		p.nodes[0].port, p.nodes[1].port)
}

// standbyIndex is the index of the standby in nodes.
func (p *postgres) standbyIndex() int { return 1 - p.primary }

// restart crashes the primary and starts it again on the same port and
// data (the standby reconnects to it).
func (p *postgres) restart() error {
	n := p.nodes[p.primary]
	n.crash()
	return n.start()
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
	old.crash()
	died = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := next.exec(ctx, `ALTER SYSTEM RESET synchronous_standby_names`, `SELECT pg_reload_conf()`); err != nil {
		return old.name, next.name, died, fmt.Errorf("standby %s: %w", next.name, err)
	}
	if out, err := p.command("pg_ctl", "promote", "-w", "-t", "30", "-D", next.data()).CombinedOutput(); err != nil {
		return old.name, next.name, died, fmt.Errorf("pg_ctl promote %s: %v\n%s", next.name, err, out)
	}
	p.primary = p.standbyIndex()
	return old.name, next.name, died, nil
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
	if err := primary.exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("checkpoint on %s: %w", primary.name, err)
	}
	rewind := p.command("pg_rewind", "-D", old.data(), "-R", "--no-sync",
		fmt.Sprintf("--source-server=host=127.0.0.1 port=%d user=postgres dbname=postgres", primary.port))
	if out, err := rewind.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_rewind %s from %s: %v\n%s", old.name, primary.name, err, out)
	}
	if err := old.start(); err != nil {
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
	if err := primary.exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`); err != nil {
		return fmt.Errorf("synchronous_standby_names on %s: %w", primary.name, err)
	}
	for {
		var n int
		err := primary.queryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'sync'`, &n)
		if err == nil && n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no synchronous standby streaming from %s after a minute (%v):\n%s", primary.name, err,
				p.nodes[p.standbyIndex()].logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *pgNode) data() string { return filepath.Join(n.pg.dir, n.name) }

// url is this server alone.
func (n *pgNode) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", n.port)
}

// start runs the postmaster and waits until it accepts connections (a
// standby: read-only ones). It gets SIGQUIT (an immediate shutdown) if the
// test binary dies first.
func (n *pgNode) start() error {
	cmd := n.pg.command("postgres", "-D", n.data(), "-p", strconv.Itoa(n.port), "-k", n.pg.dir)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres %s: %w", n.name, err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(n.exited)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, n.url())
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-n.exited:
			return fmt.Errorf("postgres %s exited at start:\n%s", n.name, n.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres %s not accepting connections after a minute: %v\n%s", n.name, err, n.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// crash stops the server as a crash would: SIGQUIT is Postgres' immediate
// shutdown (every backend quits at once, no checkpoint; the next start
// replays the WAL).
func (n *pgNode) crash() {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	<-n.exited
	n.cmd = nil
}

// exec runs statements on this server alone, one by one.
func (n *pgNode) exec(ctx context.Context, sqls ...string) error {
	conn, err := pgx.Connect(ctx, n.url())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, sql := range sqls {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}

func (n *pgNode) queryRow(ctx context.Context, sql string, dest ...any) error {
	conn, err := pgx.Connect(ctx, n.url())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}

func (n *pgNode) logTail() string {
	data, _ := os.ReadFile(filepath.Join(n.pg.dir, n.name+".log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}
