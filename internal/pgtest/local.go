package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Local is a directory of PostgreSQL servers a test binary runs itself,
// from Debian's binaries (/usr/lib/postgresql/<newest>/bin), as the
// postgres user when the tests run as root (initdb and postgres refuse
// root). It holds each server's data directory, the sockets and the logs.
// The chaos suite runs a primary and a standby in one; make test gives the
// end-to-end package a server of its own (OwnServerEnv).
type Local struct {
	Bin, Dir string
	cred     *syscall.Credential
}

// NewLocal makes the directory (a temporary one named after prefix),
// owned by the user the servers run as.
func NewLocal(prefix string) (*Local, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	l := &Local{Bin: bin, Dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, Postgres must run as the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		l.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	return l, nil
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
	return "", errors.New("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (Debian's postgresql package)")
}

// Command runs one of the server's programs in the directory, as the
// servers' user.
func (l *Local) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(l.Bin, name), args...)
	cmd.Dir = l.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: l.cred}
	return cmd
}

// Node is one server of the directory: its data directory is
// Dir/<name>, its log Dir/<name>.log.
type Node struct {
	l      *Local
	Name   string
	Port   int
	log    *os.File
	cmd    *exec.Cmd
	exited chan struct{}
}

// Node returns the server called name, listening on port once started.
func (l *Local) Node(name string, port int) (*Node, error) {
	log, err := os.Create(filepath.Join(l.Dir, name+".log"))
	if err != nil {
		return nil, err
	}
	return &Node{l: l, Name: name, Port: port, log: log}, nil
}

// InitDB creates the node's data directory (trust authentication, user
// postgres) and appends conf to its postgresql.conf.
func (n *Node) InitDB(conf string) error {
	initdb := n.l.Command("initdb", "-D", n.Data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(n.Data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	return errors.Join(err, f.Close())
}

// Data is the node's data directory.
func (n *Node) Data() string { return filepath.Join(n.l.Dir, n.Name) }

// URL is this server's maintenance database.
func (n *Node) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", n.Port)
}

// Start runs the postmaster and waits until it accepts connections (a
// standby: read-only ones). It gets SIGQUIT (an immediate shutdown) if the
// test binary dies first.
func (n *Node) Start() error {
	cmd := n.l.Command("postgres", "-D", n.Data(), "-p", strconv.Itoa(n.Port), "-k", n.l.Dir)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres %s: %w", n.Name, err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(n.exited)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, n.URL())
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-n.exited:
			return fmt.Errorf("postgres %s exited at start:\n%s", n.Name, n.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres %s not accepting connections after a minute: %v\n%s", n.Name, err, n.LogTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Crash stops the server as a crash would: SIGQUIT is Postgres' immediate
// shutdown (every backend quits at once, no checkpoint; the next start
// replays the WAL).
func (n *Node) Crash() {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	<-n.exited
	n.cmd = nil
}

// Close crashes the server if it runs and closes its log.
func (n *Node) Close() {
	n.Crash()
	n.log.Close()
}

// Exec runs statements on this server alone, one by one.
func (n *Node) Exec(ctx context.Context, sqls ...string) error {
	conn, err := pgx.Connect(ctx, n.URL())
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

// QueryRow runs one query on this server alone.
func (n *Node) QueryRow(ctx context.Context, sql string, dest ...any) error {
	conn, err := pgx.Connect(ctx, n.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}

// LogTail is the last lines of the node's log.
func (n *Node) LogTail() string {
	data, _ := os.ReadFile(filepath.Join(n.l.Dir, n.Name+".log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// OwnServerEnv, set to 1, gives a test binary a PostgreSQL server of its
// own instead of DATABASE_URL's: make test sets it for the end-to-end
// package, which runs beside the other packages. Job events are delivered
// below the server's oldest running transaction (trainyard_event_watermark),
// across every database of the server, so on a shared server another
// package's long transaction would hold this package's events back.
const OwnServerEnv = "TRAINYARD_TEST_OWN_POSTGRES"

// ownConf is the own server's configuration: durable against a crashed
// process, not a crashed machine (a test server).
const ownConf = `
listen_addresses = '127.0.0.1'
max_connections = 200
fsync = off
`

var (
	ownOnce sync.Once
	ownNode *Node
	ownErr  error
)

// ownServer starts the test binary's own server once.
func ownServer() (string, error) {
	ownOnce.Do(func() {
		l, err := NewLocal("trainyard-test-pg-")
		if err != nil {
			ownErr = err
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			ownErr = err
			return
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		n, err := l.Node("pg", port)
		if err == nil {
			err = n.InitDB(ownConf)
		}
		if err == nil {
			err = n.Start()
		}
		if err != nil {
			ownErr = fmt.Errorf("the test binary's own PostgreSQL (%s=1): %w", OwnServerEnv, err)
			return
		}
		ownNode = n
	})
	if ownErr != nil {
		return "", ownErr
	}
	return ownNode.URL(), nil
}

// StopOwnServer stops the test binary's own server, if it started one,
// and removes its directory. TestMain calls it after the tests.
func StopOwnServer() {
	if ownNode == nil {
		return
	}
	ownNode.Close()
	os.RemoveAll(ownNode.l.Dir)
}
