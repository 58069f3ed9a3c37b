// Command localcluster starts, stops and reports the local Kubernetes control
// plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)
// that Trainyard's end-to-end tests and demo use. It only wires flags to
// package cluster, where Start and Stop live; see its doc.go.
//
//	localcluster up      # prints the admin kubeconfig path as its last line
//	localcluster status
//	localcluster down
//	localcluster audit --since 2026-12-02T08:00:00Z   # with TRAINYARD_CLUSTER_PROFILING=1
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trainyard/trainyard/integration/cluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	var name, runDir, binDir string
	root := &cobra.Command{
		Use:           "localcluster",
		Short:         "Run the local Kubernetes control plane for Trainyard's tests and demo",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&name, "name", "dev", "cluster name; its state lives in <run-dir>/<name>")
	root.PersistentFlags().StringVar(&runDir, "run-dir", "", "directory of cluster states (default $TRAINYARD_CACHE/cluster/run, TRAINYARD_CACHE defaulting to ~/.cache/trainyard)")
	root.PersistentFlags().StringVar(&binDir, "bin-dir", "", "run the binaries in this directory instead of the ones build.sh builds and caches")
	dir := func() string {
		if runDir != "" {
			return filepath.Join(runDir, name)
		}
		return cluster.RunDir(name)
	}

	up := &cobra.Command{
		Use:   "up",
		Short: "Start the cluster (or report the running one) and print its kubeconfig path",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			began := time.Now()
			c, started, err := cluster.Up(cmd.Context(), dir(), cluster.Options{Progress: os.Stderr, BinDir: binDir})
			if err != nil {
				return err
			}
			if started {
				fmt.Fprintf(os.Stderr, "localcluster: %q up in %s (state %s)\n", name, time.Since(began).Round(time.Millisecond), c.StateDir)
			} else {
				fmt.Fprintf(os.Stderr, "localcluster: %q is already up (state %s)\n", name, c.StateDir)
			}
			fmt.Println(c.Kubeconfig)
			return nil
		},
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop exactly the processes up started and remove the cluster's state",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := cluster.Down(dir()); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "localcluster: %q is down\n", name)
			return nil
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Report the recorded processes and whether the API server answers; exit 1 unless up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := cluster.ReadState(dir())
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%q is down (no state in %s)", name, dir())
			}
			if err != nil {
				return err
			}
			fmt.Printf("state:      %s\nkubeconfig: %s\nserver:     %s\nstarted:    %s\n", s.Dir, s.Kubeconfig, s.Server, s.Started.Format(time.RFC3339))
			healthy := s.Ready
			for _, p := range s.Processes {
				st := "running"
				if !p.Alive() {
					st, healthy = "GONE", false
				}
				fmt.Printf("  %-24s pid %-7d %-8s log %s\n", p.Name, p.PID, st, p.Log)
			}
			if healthy {
				ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
				defer cancel()
				if _, err := cluster.Attach(ctx, s.Kubeconfig); err != nil {
					fmt.Printf("api server: %v\n", err)
					healthy = false
				}
			}
			if !healthy {
				return fmt.Errorf("%q is not healthy: run `localcluster up` to restart it", name)
			}
			fmt.Println("status:     up")
			return nil
		},
	}
	var since, until string
	audit := &cobra.Command{
		Use:   "audit",
		Short: "Summarize the API server's audit log by client: writes of pods, Services and EndpointSlices and the API server's time over each (a cluster started with " + cluster.EnvProfiling + "=1)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			var from, to time.Time
			for _, b := range []struct {
				flag, v string
				t       *time.Time
			}{{"since", since, &from}, {"until", until, &to}} {
				if b.v == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339Nano, b.v)
				if err != nil {
					return fmt.Errorf("--%s: %w", b.flag, err)
				}
				*b.t = t
			}
			f, err := os.Open(filepath.Join(dir(), "logs", "audit.log"))
			if err != nil {
				return fmt.Errorf("%w (the API server writes it when the cluster was started with %s=1)", err, cluster.EnvProfiling)
			}
			defer f.Close()
			rows, err := cluster.SummarizeAudit(f, from, to)
			if err != nil {
				return err
			}
			ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
			fmt.Printf("%-22s %-8s %-16s %8s %9s %9s %9s\n", "CLIENT", "VERB", "RESOURCE", "COUNT", "MEAN ms", "P50 ms", "P99 ms")
			for _, r := range rows {
				fmt.Printf("%-22s %-8s %-16s %8d %9s %9s %9s\n", r.Client, r.Verb, r.Resource, r.Count, ms(r.Mean), ms(r.P50), ms(r.P99))
			}
			return nil
		},
	}
	audit.Flags().StringVar(&since, "since", "", "only requests received at or after this time (RFC 3339)")
	audit.Flags().StringVar(&until, "until", "", "only requests received before this time (RFC 3339)")
	root.AddCommand(up, down, status, audit)
	return root
}
