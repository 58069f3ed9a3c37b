package main

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/worker"
)

func TestWithPoolSize(t *testing.T) {
	for in, want := range map[string]string{
		"":                                       "",
		"postgres://u@h:5432/db?sslmode=disable": "postgres://u@h:5432/db?pool_max_conns=24&sslmode=disable",
		"postgres://u@h/db?pool_max_conns=5":     "postgres://u@h/db?pool_max_conns=5",
		"host=h dbname=db":                       "host=h dbname=db pool_max_conns=24",
		// A primary and its standbys: every host kept.
		"postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write": "postgres://u@h1:5432,h2:5433/db?pool_max_conns=24&target_session_attrs=read-write",
		"host=h1,h2 port=5432,5433 target_session_attrs=read-write":       "host=h1,h2 port=5432,5433 target_session_attrs=read-write pool_max_conns=24",
	} {
		require.Equal(t, want, withPoolSize(in, 24), "input %q", in)
	}
}

// The README's connection budget (three workers with the defaults: 3×25)
// counts on this.
func TestWorkerPoolWithTheDefaults(t *testing.T) {
	require.Equal(t, 24, workerPool(worker.DefaultConcurrency))
}

func TestDefaultWorkerID(t *testing.T) {
	a, b := defaultWorkerID(), defaultWorkerID()
	require.NotEqual(t, a, b, "a restarted worker must not reuse its predecessor's id")
	require.Regexp(t, regexp.MustCompile(`^.+-\d+-[0-9a-f]{6}$`), a)
}

func TestDevTokenFile(t *testing.T) {
	path, token, err := writeDevToken()
	require.NoError(t, err)
	defer os.Remove(path)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only this user reads the token")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dev, err := auth.ParseDevTokens(data, "trainyard-admins")
	require.NoError(t, err)
	p, err := dev.Authenticate(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, devTokenSubject, p.Subject)
}

// Every flag of worker and dev says what it does, its environment variable
// and (pflag adds it) its default; dev takes every flag of serve and worker.
func TestWorkerAndDevFlags(t *testing.T) {
	worker, dev, serve := newWorkerCmd(), newDevCmd(), newServeCmd()
	for _, cmd := range []*pflag.FlagSet{worker.Flags(), dev.Flags()} {
		cmd.VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			require.True(t, strings.Contains(f.Usage, "[$"+envName(f.Name)) || strings.Contains(f.Usage, "$DATABASE_URL"),
				"flag --%s documents its environment variable: %q", f.Name, f.Usage)
		})
	}
	for _, fs := range []*pflag.FlagSet{serve.Flags(), worker.Flags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			require.NotNil(t, dev.Flags().Lookup(f.Name), "dev takes --%s", f.Name)
		})
	}
	for _, name := range []string{"worker-id", "concurrency", "lease-ttl", "max-owned-jobs", "claim-interval", "log-tail-lines", "metrics-addr"} {
		require.NotNil(t, worker.Flags().Lookup(name), "worker has --%s", name)
	}
}

func TestWorkerFlagsFromEnvironment(t *testing.T) {
	t.Setenv("TRAINYARD_LEASE_TTL", "4s")
	t.Setenv("TRAINYARD_CONCURRENCY", "3")
	cmd := newWorkerCmd()
	require.NoError(t, bindEnv(cmd.Flags()))
	require.Equal(t, "4s", cmd.Flags().Lookup("lease-ttl").Value.String())
	require.Equal(t, "3", cmd.Flags().Lookup("concurrency").Value.String())
}

// --cluster is "default" unless set, and must be a cluster name; the
// timeout must be longer than the heartbeat. Errors name the flag.
func TestWorkerClusterFlags(t *testing.T) {
	parse := func(args ...string) (*workerFlags, error) {
		var wf workerFlags
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		wf.register(fs)
		require.NoError(t, fs.Parse(args))
		return &wf, wf.validate()
	}
	wf, err := parse()
	require.NoError(t, err)
	require.Equal(t, "default", wf.cluster)
	require.Equal(t, 10*time.Second, wf.clusterHeartbeat)
	require.Equal(t, time.Minute, wf.clusterTimeout)
	wf, err = parse("--cluster", "eu-1", "--cluster-heartbeat", "2s", "--cluster-timeout", "20s")
	require.NoError(t, err)
	require.Equal(t, "eu-1", wf.cluster)
	_, err = parse("--cluster", "EU_1")
	require.ErrorContains(t, err, "--cluster:")
	_, err = parse("--cluster-timeout", "5s")
	require.ErrorContains(t, err, "--cluster-timeout")
}

// Remote agent mode (issue 45): --control-plane needs the token file, and
// the other agent flags need --control-plane; it refuses DATABASE_URL.
func TestWorkerRemoteAgentFlags(t *testing.T) {
	parse := func(args ...string) error {
		var wf workerFlags
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		wf.register(fs)
		require.NoError(t, fs.Parse(args))
		return wf.validate()
	}
	require.NoError(t, parse("--cluster", "two", "--control-plane", "cp:9090", "--agent-token-file", "/t"))
	require.ErrorContains(t, parse("--control-plane", "cp:9090"), "--agent-token-file")
	require.ErrorContains(t, parse("--agent-token-file", "/t"), "need --control-plane")
	require.ErrorContains(t, parse("--control-plane", "cp:9090", "--agent-token-file", "/t", "--prometheus-url", "http://p:9090"), "--prometheus-url")

	cmd := newWorkerCmd()
	cmd.SetArgs([]string{"--cluster", "two", "--control-plane", "127.0.0.1:1", "--agent-token-file", "/nonexistent"})
	t.Setenv("DATABASE_URL", "postgres://u:secret@db/trainyard")
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.ExecuteContext(context.Background())
	require.ErrorContains(t, err, "holds no database credentials")
	require.NotContains(t, err.Error(), "secret")
}
