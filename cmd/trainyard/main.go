// Command trainyard is the Trainyard server binary:
//
//	trainyard serve    the API (gRPC + REST)
//	trainyard worker   runs queued jobs on Kubernetes
//	trainyard dev      both in one process, for local use
//	trainyard migrate  up | down | version
//	trainyard simulate compare scheduling policies on a workload, on virtual time
//
// Every flag can also be set by its environment variable, TRAINYARD_ and
// the flag's name in capitals with dashes as underscores
// (--oidc-issuer → TRAINYARD_OIDC_ISSUER); --database-url also reads
// DATABASE_URL. A flag given on the command line wins.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trainyard/trainyard/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "trainyard:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "trainyard",
		Short:         "Trainyard runs distributed TensorFlow training jobs on Kubernetes for many tenants",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, cmd := range []*cobra.Command{newServeCmd(), newWorkerCmd(), newWebhooksCmd(), newDevCmd(), newMigrateCmd(), newSimulateCmd()} {
		root.AddCommand(withPprof(cmd))
	}
	return root
}

// commonFlags are shared by serve, worker and dev.
type commonFlags struct {
	databaseURL string
	dbMaxConns  int
	logs        logFlags
	kube        kubeFlags
	webhooks    webhookFlags
}

func (c *commonFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&c.databaseURL, "database-url", "", "Postgres URL, e.g. postgres://user@host:5432/trainyard (required)")
	fs.IntVar(&c.dbMaxConns, "db-max-conns", 0, "most Postgres connections of this process's pool, besides its one LISTEN connection; 0: serve 16, worker --concurrency/2 + 8, dev --concurrency/2 + 16 (a pool_max_conns in --database-url wins)")
	c.logs.register(fs)
	c.kube.register(fs)
	c.webhooks.register(fs)
}

// workerPool is a worker's default Postgres pool for its reconcile
// goroutines: a pass holds a connection only for its load and its save,
// and spends most of its time on the API server's answers, so half of
// them at once in Postgres is plenty; the 8 more are the claimer, the
// scheduler and the tenant reconciler.
func workerPool(concurrency int) int { return concurrency/2 + 8 }

// poolSize is --db-max-conns, or def when it is not set.
func (c *commonFlags) poolSize(def int) int {
	if c.dbMaxConns > 0 {
		return c.dbMaxConns
	}
	return def
}

func newServeCmd() *cobra.Command {
	var (
		common commonFlags
		serve  serveFlags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Trainyard API over gRPC and REST",
		Long: `Serve the Trainyard API: gRPC on --grpc-addr, and on --http-addr REST
(grpc-gateway), /healthz, /readyz (checks Postgres and the OIDC issuer),
/metrics (Prometheus), /openapi.json and /docs.

The database must be migrated first (trainyard migrate up).`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd.Flags()); err != nil {
				return err
			}
			if _, err := common.webhooks.policy(); err != nil {
				return err
			}
			return serve.validate()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := common.logs.logger()
			if err != nil {
				return err
			}
			st, err := openStore(ctx, log, withPoolSize(common.databaseURL, common.poolSize(16)))
			if err != nil {
				return err
			}
			defer st.Close()
			listener, err := store.NewListener(common.databaseURL, store.ListenerConfig{Logger: log})
			if err != nil {
				return err
			}
			go listener.Run(ctx)
			_, kcfg, err := common.kube.clientIfConfigured(log)
			if err != nil {
				return err
			}
			return runAPI(ctx, log, &serve, apiDeps{store: st, listener: listener, kubeConfig: kcfg, nsPrefix: common.kube.namespacePrefix, webhooks: &common.webhooks})
		},
	}
	common.register(cmd)
	serve.register(cmd.Flags())
	serve.registerCluster(cmd.Flags())
	documentEnv(cmd)
	return cmd
}

func newMigrateCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate up|down|version",
		Short: "Migrate the Postgres schema (the SQL files are embedded in this binary)",
		Long: `Migrate the Postgres schema with golang-migrate.

  up       apply every migration not applied yet
  down     revert every migration (drops Trainyard's tables and data)
  version  print the schema version`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "version"},
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return bindEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if databaseURL == "" {
				return errors.New("no database: set --database-url or DATABASE_URL")
			}
			ctx := cmd.Context()
			switch args[0] {
			case "up", "down":
				if err := store.Migrate(ctx, databaseURL, args[0]); err != nil {
					return err
				}
				fallthrough
			case "version":
				v, dirty, err := store.MigrationVersion(ctx, databaseURL)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "schema version %d%s\n", v, map[bool]string{true: " (dirty)"}[dirty])
				return nil
			}
			return fmt.Errorf("unknown migrate command %q: want up, down or version", args[0])
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "Postgres URL (required)")
	documentEnv(cmd)
	return cmd
}
