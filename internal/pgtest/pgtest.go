// Package pgtest gives tests real Postgres: a fresh database per test
// package and a fresh schema per test, as river's riverdbtest does, so that
// tests never see each other's rows and a package's queries across tenants
// (the claim, the scheduler's snapshot) see only the test's own.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, "store", nil)) }
//
//	func TestX(t *testing.T) {
//		pool, url := pgtest.Schema(t)   // every up migration applied, dropped at the end
//		...
//	}
//
// The server is DATABASE_URL's when set (CI and these machines:
// 127.0.0.1:5432); otherwise one Postgres container per test binary, started
// through testcontainers (laptops with Docker; reaped when the binary
// exits). With TRAINYARD_TEST_OWN_POSTGRES=1 it is a server the test binary
// runs itself from Debian's binaries (Local). When none is available the
// test fails: it never skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/trainyard/trainyard/migrations"
)

// PostgresImage is the image run when DATABASE_URL is unset.
const PostgresImage = "postgres:16-alpine"

var (
	serverURL  string // the server's maintenance database
	packageURL string // the package's database, set by Run
)

// Server returns the URL of the server's maintenance database: DATABASE_URL,
// or a container's.
func Server(ctx context.Context) (string, error) {
	if serverURL != "" {
		return serverURL, nil
	}
	s := os.Getenv("DATABASE_URL")
	if os.Getenv(OwnServerEnv) == "1" {
		var err error
		if s, err = ownServer(); err != nil {
			return "", err
		}
	} else if s == "" {
		var err error
		if s, err = containerServer(ctx); err != nil {
			return "", fmt.Errorf("DATABASE_URL is unset and no Postgres container could start: %w", err)
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("DATABASE_URL must be a postgres:// URL, got %q", Redact(s))
	}
	serverURL = s
	return s, nil
}

// Run is a package's TestMain: it creates the package's database
// (trainyard_<name>_<random>), calls setup with its URL if setup is not
// nil, runs the tests and drops the database. It returns the exit code.
func Run(m *testing.M, name string, setup func(ctx context.Context, url string) error) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	server, err := Server(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s tests need Postgres: %v\n", name, err)
		return 1
	}
	defer StopOwnServer()
	db := "trainyard_" + name + "_" + randomHex(6)
	if err := Exec(ctx, server, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		fmt.Fprintf(os.Stderr, "%s tests need Postgres at %s: %v\n", name, Redact(server), err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropDatabase(ctx, server, db); err != nil {
			fmt.Fprintf(os.Stderr, "drop test database %s: %v\n", db, err)
		}
	}()
	packageURL = URLFor(server, db)
	if setup != nil {
		if err := setup(ctx, packageURL); err != nil {
			fmt.Fprintf(os.Stderr, "set up test database %s: %v\n", db, err)
			return 1
		}
	}
	return m.Run()
}

// PackageURL is the package's database, made by Run.
func PackageURL() string { return packageURL }

// Schema creates a schema in the package's database holding every up
// migration's tables, and returns a pool (of at most 8 connections) and a
// URL whose connections use it (search_path). Both go when the test ends.
func Schema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	if packageURL == "" {
		t.Fatal("pgtest.Schema needs pgtest.Run in the package's TestMain")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schema := fmt.Sprintf("t_%s", randomHex(6))
	conn, err := pgx.Connect(ctx, packageURL)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema+"; SET search_path TO "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	for _, sql := range UpMigrations(t) {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("pgtest: migrate schema %s: %v", schema, err)
		}
	}
	u, _ := url.Parse(packageURL)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = Exec(ctx, packageURL, "DROP SCHEMA "+schema+" CASCADE")
	})
	return pool, u.String()
}

// UpMigrations are the SQL of every up migration, in order.
func UpMigrations(t testing.TB) []string {
	t.Helper()
	names, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// NewDatabase returns the URL of a new, empty database on the server that
// is dropped when the test ends (for tests that run migrations or whole
// processes against a database of their own).
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	server, err := Server(ctx)
	if err != nil {
		t.Fatalf("pgtest.NewDatabase: %v", err)
	}
	name := databaseName(t.Name())
	if err := Exec(ctx, server, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest.NewDatabase: create database %s on %s: %v", name, Redact(server), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropDatabase(ctx, server, name); err != nil {
			t.Errorf("pgtest.NewDatabase: drop database %s: %v", name, err)
		}
	})
	return URLFor(server, name)
}

// dropDatabase drops name, FORCE: a pool a test forgot to close must not
// keep the database alive.
func dropDatabase(ctx context.Context, server, name string) error {
	return Exec(ctx, server, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// Exec runs one statement on its own connection to databaseURL.
func Exec(ctx context.Context, databaseURL, sql string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// URLFor returns base with its database replaced by name.
func URLFor(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// databaseName turns a test name into a unique Postgres identifier (at most 63 bytes).
func databaseName(test string) string {
	base := nonIdent.ReplaceAllString(strings.ToLower(test), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	return "ty_" + strings.Trim(base, "_") + "_" + randomHex(6)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Redact hides a URL's password, for messages.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

var (
	containerOnce sync.Once
	containerURL  string
	containerErr  error
)

// containerServer starts (once per process) a Postgres container and returns
// the URL of its maintenance database.
func containerServer(ctx context.Context) (string, error) {
	containerOnce.Do(func() {
		ctr, err := postgres.Run(ctx, PostgresImage,
			postgres.WithDatabase("postgres"),
			postgres.BasicWaitStrategies(),
		)
		if err != nil {
			if ctr != nil {
				_ = testcontainers.TerminateContainer(ctr)
			}
			containerErr = fmt.Errorf("postgres container: %w", err)
			return
		}
		containerURL, containerErr = ctr.ConnectionString(ctx, "sslmode=disable")
	})
	return containerURL, containerErr
}
