package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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
		bursty      bool
		aging       time.Duration
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
(internal/sim.File). --bursty generates instead the trace on which sharing
idle GPUs matters (internal/sim.GenerateBursty: tenants whose nominal
quotas add up to 70 % of the GPUs, idle for hours, then a burst) and
compares every policy, cohort and cohort-history included, with the
figures of issue 42 and its targets.`,
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
				if bursty {
					tr = sim.GenerateBursty(seed, nodes, jobs, load)
				} else {
					tr = sim.Generate(seed, nodes, jobs, load)
				}
			}
			policies := []string{sim.PolicyScheduler, sim.PolicyQuotaFIFO}
			switch {
			case policy == "all" || (policy == "both" && bursty):
				policies = sim.Policies
			case policy != "both":
				policies = strings.Split(policy, ",")
			}
			var results []sim.Result
			for _, p := range policies {
				res, err := sim.RunWith(tr, p, sim.Options{Horizon: horizon, BorrowAging: aging})
				if err != nil {
					return err
				}
				results = append(results, res)
			}
			if err := printResults(cmd.OutOrStdout(), len(tr.Jobs), len(tr.Nodes), results); err != nil {
				return err
			}
			if bursty || slices.Contains(policies, sim.PolicyCohort) || slices.Contains(policies, sim.PolicyCohortHistory) {
				return printSharing(cmd.OutOrStdout(), results)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&traceFile, "trace", "", "a JSON trace to replay instead of a generated one")
	fs.IntVar(&nodes, "nodes", 16, "generated trace: nodes of 8 GPUs")
	fs.IntVar(&jobs, "jobs", 1000, "generated trace: jobs submitted")
	fs.Uint64Var(&seed, "seed", 1, "generated trace: random seed (the same seed gives the same trace)")
	fs.Float64Var(&load, "load", 1, "generated trace: GPU demand over capacity across the submissions' span")
	fs.StringVar(&policy, "policy", "both", "scheduler, quota-fifo, cohort, cohort-history, a comma-separated list of them, both (scheduler and quota-fifo; with --bursty: all) or all")
	fs.BoolVar(&bursty, "bursty", false, "generate the bursty multi-tenant trace of issue 42 (sim.GenerateBursty) instead of the default one")
	fs.DurationVar(&aging, "borrow-aging", 0, "the scheduler's --borrow-aging: a borrower that has waited this long goes first among its cohort's borrowers and holds the cohort's unused quota (0: off)")
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

// printSharing prints the figures of issue 42 per policy, and its
// targets against the scheduler without cohorts.
func printSharing(out io.Writer, results []sim.Result) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "POLICY\tGPU BUSY\tSHARE JAIN\tTO NOMINAL P50\tP99\tMAX\tPREEMPTIONS\tGPU-H LOST\tLOST %\tLONGEST WAIT")
	for _, r := range results {
		s := r.Sharing
		fmt.Fprintf(w, "%s\t%.1f%%\t%.3f\t%s\t%s\t%s\t%d\t%.1f\t%.2f%%\t%s\n", r.Policy, 100*r.GPUUtilization, s.ShareFairness,
			s.ToNominal.P50.Round(time.Second), s.ToNominal.P99.Round(time.Second), s.ToNominal.Max.Round(time.Second),
			r.Preemptions, s.LostGPUHours, 100*lostShare(s), s.LongestWait.Round(time.Minute))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TENANT\tPOLICY\tNOMINAL\tHOURS WITH DEMAND\tENTITLED GPU-H\tRECEIVED GPU-H\tRECEIVED/ENTITLED")
	if len(results) > 0 {
		var ids []string
		for id := range results[0].Sharing.Tenants {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			for _, r := range results {
				t := r.Sharing.Tenants[id]
				fmt.Fprintf(w, "%s\t%s\t%d\t%.1f\t%.0f\t%.0f\t%.2f\n", id, r.Policy, t.Nominal, t.DemandHours, t.Entitled, t.Received, t.Ratio)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "SIZE\tPOLICY\tSTARTED\tWAIT P50\tP99\tMAX\tMAX/P50")
	for _, c := range sim.SizeClasses {
		for _, r := range results {
			s, ok := r.Sharing.WaitBySize[c]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c, r.Policy, s.N, s.P50.Round(time.Minute), s.P99.Round(time.Minute), s.Max.Round(time.Minute), ratioOf(s.Max, s.P50))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var base *sim.Result
	for i := range results {
		if results[i].Policy == sim.PolicyScheduler {
			base = &results[i]
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "TARGETS (issue 42)")
	for _, r := range results {
		if r.Policy != sim.PolicyCohort && r.Policy != sim.PolicyCohortHistory {
			continue
		}
		s := r.Sharing
		if base != nil {
			gain := 100 * (r.GPUUtilization - base.GPUUtilization)
			fmt.Fprintf(out, "%-15s utilisation %+.1f points over scheduler (target +20): %s\n", r.Policy, gain, met(gain >= 20))
		}
		fmt.Fprintf(out, "%-15s time to nominal share, max %s (target: one cycle plus the victims' grace period; the simulation's cycle is instant and victims stop at once, so 0): %s\n",
			r.Policy, s.ToNominal.Max.Round(time.Second), met(s.ToNominal.Max == 0))
		fmt.Fprintf(out, "%-15s GPU-hours lost to preemption %.2f%% (target < 2%%): %s\n", r.Policy, 100*lostShare(s), met(lostShare(s) < 0.02))
		worst, class := 0.0, ""
		for _, c := range sim.SizeClasses {
			if st, ok := s.WaitBySize[c]; ok && st.P50 > 0 {
				if x := float64(st.Max) / float64(st.P50); x > worst {
					worst, class = x, c
				}
			}
		}
		fmt.Fprintf(out, "%-15s longest wait over its size class's median, at most %.1fx (%s; target <= 4x): %s\n", r.Policy, worst, class, met(worst <= 4))
		fmt.Fprintf(out, "%-15s   the longest wait %s; the work waiting peaked at %s of the whole cluster (at %s): under any order that keeps the GPUs busy, some job of it waits about that long\n",
			r.Policy, s.LongestWait.Round(time.Minute), s.PeakBacklog.Round(time.Minute), s.PeakBacklogAt.Round(time.Minute))
	}
	return nil
}

func lostShare(s sim.SharingStats) float64 {
	if s.BusyGPUHours == 0 {
		return 0
	}
	return s.LostGPUHours / s.BusyGPUHours
}

func ratioOf(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", float64(a)/float64(b))
}

func met(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}
