package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trainyard/trainyard/internal/sim"
)

func newSimulateCmd() *cobra.Command {
	var (
		traceFile   string
		nodes, jobs int
		seed        uint64
		load        float64
		policy      string
		horizon     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a workload on virtual time under Trainyard's scheduler and under quota-only FIFO admission, and compare",
		Long: `simulate runs a trace of job submissions, without a cluster, under two
policies: Trainyard's scheduler (gang admission, fair sharing, preemption;
the scheduler's own code) and the quota-only FIFO admission that leaves
pod placement to a kube-scheduler that knows nothing of gangs. It prints
jobs finished and stuck, the makespan, GPU utilization, the GPU time held
by partial gangs, Jain's fairness index over the tenants' slowdowns, and
each tenant's waits.

Without --trace it generates a day-scale trace of a shared cluster of
8-GPU nodes (see internal/sim.Generate); --trace reads a JSON trace
(internal/sim.File).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var tr sim.Trace
			if traceFile != "" {
				f, err := os.Open(traceFile)
				if err != nil {
					return err
				}
				defer f.Close()
				if tr, err = sim.ReadTrace(f); err != nil {
					return fmt.Errorf("%s: %w", traceFile, err)
				}
			} else {
				if nodes < 4 || jobs < 1 || load <= 0 {
					return fmt.Errorf("--nodes must be at least 4 (the largest generated gang spans 4), --jobs at least 1, --load above 0")
				}
				tr = sim.Generate(seed, nodes, jobs, load)
			}
			policies := []string{sim.PolicyScheduler, sim.PolicyQuotaFIFO}
			if policy != "both" {
				policies = []string{policy}
			}
			var results []sim.Result
			for _, p := range policies {
				res, err := sim.Run(tr, p, horizon)
				if err != nil {
					return err
				}
				results = append(results, res)
			}
			return printResults(cmd.OutOrStdout(), len(tr.Jobs), len(tr.Nodes), results)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&traceFile, "trace", "", "a JSON trace to replay instead of a generated one")
	fs.IntVar(&nodes, "nodes", 16, "generated trace: nodes of 8 GPUs")
	fs.IntVar(&jobs, "jobs", 1000, "generated trace: jobs submitted")
	fs.Uint64Var(&seed, "seed", 1, "generated trace: random seed (the same seed gives the same trace)")
	fs.Float64Var(&load, "load", 1, "generated trace: GPU demand over capacity across the submissions' span")
	fs.StringVar(&policy, "policy", "both", "scheduler, quota-fifo or both")
	fs.DurationVar(&horizon, "horizon", 90*24*time.Hour, "stop at this virtual time; jobs not finished by then count as stuck")
	return cmd
}

func printResults(out io.Writer, jobs, nodes int, results []sim.Result) error {
	fmt.Fprintf(out, "%d jobs on %d nodes\n\n", jobs, nodes)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POLICY\tFINISHED\tSTUCK\tMAKESPAN\tGPU BUSY\tGPU HELD IDLE\tFAIRNESS\tPREEMPTIONS")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%.1f%%\t%.1f%%\t%.3f\t%d\n", r.Policy, r.Finished, r.Stuck,
			r.Makespan.Round(time.Minute), 100*r.GPUUtilization, 100*r.Held, r.Fairness, r.Preemptions)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TENANT\tPOLICY\tSTARTED\tWAIT P50\tWAIT P95\tWAIT MAX")
	var tenants []string
	for _, r := range results {
		for t := range r.Wait {
			if !slices.Contains(tenants, t) {
				tenants = append(tenants, t)
			}
		}
	}
	slices.Sort(tenants)
	for _, t := range tenants {
		for _, r := range results {
			s := r.Wait[t]
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", t, r.Policy, s.N,
				s.P50.Round(time.Minute), s.P95.Round(time.Minute), s.Max.Round(time.Minute))
		}
	}
	return w.Flush()
}
