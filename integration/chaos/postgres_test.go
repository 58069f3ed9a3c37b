//go:build integration || chaos

package chaos

import (
	"context"
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

// postgres is a Postgres server of the suite's own, on a port of its own,
// so that it can be crashed and restarted; the machine's shared one on 5432
// is never touched. It runs Debian's binaries from
// /usr/lib/postgresql/<newest version>/bin, as the postgres user when the
// tests run as root (initdb and postgres refuse root).
type postgres struct {
	bin, dir string // dir holds data/, the socket and the log
	port     int
	cred     *syscall.Credential
	log      *os.File
	cmd      *exec.Cmd
	exited   chan struct{}
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
		p.crash()
		if p.log != nil {
			p.log.Close()
		}
		if t.Failed() {
			t.Logf("Postgres log kept: %s", filepath.Join(dir, "postgres.log"))
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
	if p.log, err = os.Create(filepath.Join(dir, "postgres.log")); err != nil {
		t.Fatal(err)
	}
	initdb := p.command("initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A port below the ephemeral range: restart binds it again.
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	p.port = ports[0]
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	return p
}

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

func (p *postgres) data() string { return filepath.Join(p.dir, "data") }

func (p *postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

// URL is the server's postgres database: the suite runs Trainyard in it.
func (p *postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// start runs the postmaster and waits until it accepts connections. It
// gets SIGQUIT (an immediate shutdown) if the test binary dies first.
func (p *postgres) start() error {
	cmd := p.command("postgres", "-D", p.data(), "-p", strconv.Itoa(p.port), "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1",
		// Trainyard's pools: two API servers, two workers, the suite.
		"-c", "max_connections=300",
		// fsync off loses data only when the machine dies, not the process;
		// synchronous_commit stays on, so an acknowledged commit is in the
		// WAL (the kernel's page cache) before the client hears of it, and
		// survives the crash this suite causes.
		"-c", "fsync=off", "-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(p.exited)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, p.URL())
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("postgres exited at start:\n%s", p.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres not accepting connections after a minute: %v\n%s", err, p.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// crash stops the server as a crash would: SIGQUIT is Postgres' immediate
// shutdown (every backend quits at once, no checkpoint; the next start
// replays the WAL).
func (p *postgres) crash() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	<-p.exited
	p.cmd = nil
}

// restart crashes the server and starts it again on the same port and data.
func (p *postgres) restart() error {
	p.crash()
	return p.start()
}

func (p *postgres) logTail() string {
	data, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}
