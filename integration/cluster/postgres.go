package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
)

// PostgresImage is the image NewDatabase runs when DATABASE_URL is unset.
const PostgresImage = "postgres:16-alpine"

// NewDatabase returns the URL of a new, empty database that is dropped when
// the test ends. The server is DATABASE_URL's when set (CI and these
// machines: 127.0.0.1:5432); otherwise one Postgres container per test binary
// started through testcontainers (laptops with Docker; the container is
// reaped when the binary exits). When neither is available the test fails:
// it never skips.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	server := os.Getenv("DATABASE_URL")
	if server == "" {
		var err error
		if server, err = containerServer(ctx); err != nil {
			t.Fatalf("NewDatabase: DATABASE_URL is unset and no Postgres container could start: %v", err)
		}
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("NewDatabase: DATABASE_URL must be a postgres:// URL, got %q", redact(server))
	}

	name := databaseName(t.Name())
	if err := adminExec(ctx, server, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("NewDatabase: create database %s on %s: %v", name, redact(server), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE: a pool the test forgot to close must not keep the database alive.
		if err := adminExec(ctx, server, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("NewDatabase: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func adminExec(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// databaseName turns a test name into a unique Postgres identifier (at most 63 bytes).
func databaseName(test string) string {
	base := nonIdent.ReplaceAllString(strings.ToLower(test), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "ty_" + strings.Trim(base, "_") + "_" + hex.EncodeToString(b[:])
}

func redact(dsn string) string {
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
