package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/trainyard/trainyard/internal/store"
)

// devTokenSubject is the platform admin the generated dev token stands for.
const devTokenSubject = "dev"

func newDevCmd() *cobra.Command {
	var (
		common  commonFlags
		serve   serveFlags
		wf      workerFlags
		migrate bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "API server and worker in one process, for local use",
		Long: `Run the API server and the worker in one process against a local
Postgres and Kubernetes cluster (--kubeconfig, or $KUBECONFIG).

Unless --oidc-issuer or --dev-auth is given, dev authentication is on: a
fresh token for the platform admin "dev" is written to a temporary token
file and printed as "export TOKEN=...". With --migrate (the default) the
database is migrated first.

Takes every flag of "serve", "worker" and "webhooks".`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd.Flags()); err != nil {
				return err
			}
			serve.cluster = wf.cluster // one process: one cluster
			if err := serve.validate(); err != nil {
				return err
			}
			if err := common.webhooks.validateDeliverer(); err != nil {
				return err
			}
			wf.prometheusURL = serve.prometheusURL
			return wf.validate()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := common.logs.logger()
			if err != nil {
				return err
			}
			if common.databaseURL == "" {
				return errors.New("no database: set --database-url or DATABASE_URL")
			}
			if !common.kube.configured() {
				return errors.New("no Kubernetes cluster: set --kubeconfig or KUBECONFIG (go run ./integration/cluster/cmd/localcluster up prints one)")
			}
			if serve.oidcIssuer == "" && serve.devAuth == "" {
				path, token, err := writeDevToken()
				if err != nil {
					return err
				}
				defer os.Remove(path)
				serve.devAuth = path
				fmt.Fprintf(cmd.OutOrStdout(), "dev auth: token for platform admin %q in %s\nexport TOKEN=%s\n", devTokenSubject, path, token)
			}
			if migrate {
				if err := store.Migrate(ctx, common.databaseURL, "up"); err != nil {
					return fmt.Errorf("--migrate: %w", err)
				}
			}
			st, err := openStore(ctx, log, withPoolSize(common.databaseURL, common.poolSize(workerPool(wf.concurrency)+8)))
			if err != nil {
				return err
			}
			defer st.Close()
			listener, err := store.NewListener(common.databaseURL, store.ListenerConfig{Logger: log})
			if err != nil {
				return err
			}
			go listener.Run(ctx)
			kc, kcfg, err := common.kube.clientIfConfigured(log)
			if err != nil {
				return err
			}

			// Either half ending ends both.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var (
				wg         sync.WaitGroup
				apiErr     error
				workerErr  error
				webhookErr error
			)
			wg.Go(func() {
				defer cancel()
				apiErr = runAPI(ctx, log, &serve, apiDeps{store: st, listener: listener, kubeConfig: kcfg, nsPrefix: common.kube.namespacePrefix, webhooks: &common.webhooks})
			})
			wg.Go(func() {
				defer cancel()
				workerErr = runWorker(ctx, log, &common, &wf, st, listener)
			})
			// The webhook deliverer too, with the dev cluster's identity.
			wg.Go(func() {
				if webhookErr = runDeliverer(ctx, log, &common.webhooks, "dev", st, listener, kc, nil); webhookErr != nil {
					cancel()
				}
			})
			wg.Wait()
			return errors.Join(apiErr, workerErr, webhookErr)
		},
	}
	common.register(cmd)
	serve.register(cmd.Flags())
	common.webhooks.registerDeliverer(cmd.Flags())
	wf.register(cmd.Flags())
	cmd.Flags().Lookup("prometheus-url").Usage = "Prometheus that scrapes NVIDIA's DCGM exporter: the worker reads running jobs' GPU utilisation there (GetJob, IdleGPUs) and the API the utilisation chart of a job; empty: off"
	cmd.Flags().Lookup("dev-auth").Usage = "FILE of static tokens; without it and without --oidc-issuer, a fresh admin token is generated and printed"
	cmd.Flags().Lookup("oidc-issuer").Usage = "OIDC issuer URL whose ID tokens are accepted (discovery and JWKS are fetched from it); without it, dev authentication"
	cmd.Flags().BoolVar(&migrate, "migrate", true, "migrate the database (up) before starting")
	documentEnv(cmd)
	return cmd
}

// writeDevToken writes a dev token file with one fresh token for the
// platform admin devTokenSubject, readable only by this user.
func writeDevToken() (path, token string, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = "dev-" + hex.EncodeToString(b)
	f, err := os.CreateTemp("", "trainyard-dev-auth-*.yaml")
	if err != nil {
		return "", "", fmt.Errorf("dev token file: %w", err)
	}
	defer f.Close()
	content := fmt.Sprintf("tokens:\n  - token: %s\n    subject: %s\n    platformAdmin: true\n", token, devTokenSubject)
	if _, err := f.WriteString(content); err != nil {
		return "", "", fmt.Errorf("dev token file: %w", err)
	}
	return f.Name(), token, nil
}
