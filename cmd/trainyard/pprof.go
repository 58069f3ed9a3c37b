package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/spf13/cobra"
)

// withPprof gives cmd --pprof-addr: Go's profiler (net/http/pprof) on its
// own listener while the command runs, off by default. It is never on the
// API's or the metrics' listeners: profiles and goroutine dumps show the
// process's internals, and a CPU profile costs CPU while it is taken, so
// it is for an operator on localhost or a port-forward, not for scraping.
func withPprof(cmd *cobra.Command) *cobra.Command {
	var addr string
	cmd.Flags().StringVar(&addr, "pprof-addr", "", "address for Go's profiler, /debug/pprof/ (e.g. localhost:6060); off when empty [$"+envName("pprof-addr")+"]")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if addr != "" {
			stop, err := servePprof(addr, c.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stop()
		}
		return run(c, args)
	}
	return cmd
}

// servePprof serves the profiler on addr until stop is called.
func servePprof(addr string, log io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(log, "pprof listening on http://%s/debug/pprof/\n", ln.Addr())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(log, "pprof: %v\n", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
