package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/resname"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// tyctl usage queue and tyctl jobs utilization: the queue's history and a
// job's GPU utilisation per replica, read through UsageService.

func newUsageQueueCmd(a *app) *cobra.Command {
	var (
		all  bool
		win  window
		step string
	)
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Show how many jobs waited and how long, by 5 minutes, hour or day (platform admins: --all, with the cluster's GPUs)",
		Long: `Show the queue over time: per bucket and tenant, the jobs waiting for
admission (mean and most), the GPUs they asked for (most) and the longest
wait (mean and most). The scheduler samples the queue every minute and keeps
35 days. Buckets in which no job waited are left out, except with --all,
where the cluster's GPUs are shown for every bucket sampled (tenant "-":
nothing waited).`,
		Example: `  tyctl usage queue --since 24h
  tyctl usage queue --all --since 168h --step 1d
  tyctl usage queue --start 2026-12-01 --end 2026-12-02 --step 5m -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &pb.QueryQueueHistoryRequest{Parent: "tenants/-", Step: step}
			if !all {
				parent, err := a.tenantParent()
				if err != nil {
					return err
				}
				req.Parent = parent
			}
			var err error
			if req.Start, req.End, err = win.times(a.now()); err != nil {
				return err
			}
			conn, err := a.connect()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := pb.NewUsageServiceClient(conn).QueryQueueHistory(ctx, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { writeQueueTable(w, resp) })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every tenant's queue and the cluster's GPUs (platform admins)")
	win.register(cmd, "24 hours before --end", "now")
	cmd.Flags().StringVar(&step, "step", "1h", "bucket: 5m, 1h or 1d (UTC days)")
	return cmd
}

// writeQueueTable prints a line per bucket and tenant; with capacity
// (--all), a bucket sampled with nothing waiting gets a line of its own.
func writeQueueTable(w io.Writer, resp *pb.QueryQueueHistoryResponse) {
	capacity := map[int64]int64{}
	for _, c := range resp.GetCapacity() {
		capacity[c.GetStart().GetSeconds()] = c.GetGpus()
	}
	withCapacity := len(capacity) > 0
	rows := resp.GetRows()
	if withCapacity {
		seen := map[int64]bool{}
		for _, r := range rows {
			seen[r.GetStart().GetSeconds()] = true
		}
		rows = slices.Clone(rows)
		for _, c := range resp.GetCapacity() {
			if !seen[c.GetStart().GetSeconds()] {
				rows = append(rows, &pb.QueueHistoryRow{Start: c.GetStart()})
			}
		}
		slices.SortStableFunc(rows, func(x, y *pb.QueueHistoryRow) int {
			return x.GetStart().AsTime().Compare(y.GetStart().AsTime())
		})
	}
	tw := newTabWriter(w)
	head := "START\tTENANT\tPENDING\tPENDING MAX\tGPUS ASKED MAX\tOLDEST WAIT\tOLDEST WAIT MAX"
	if withCapacity {
		head += "\tCLUSTER GPUS"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%.1f\t%d\t%d\t%s\t%s", r.GetStart().AsTime().UTC().Format("2006-01-02 15:04Z"), dash(r.GetTenant()),
			r.GetPendingJobsMean(), r.GetPendingJobsMax(), r.GetPendingGpusMax(),
			waitSeconds(r.GetOldestWaitSecondsMean()), waitSeconds(r.GetOldestWaitSecondsMax()))
		if withCapacity {
			gpus := "-"
			if n, ok := capacity[r.GetStart().GetSeconds()]; ok {
				gpus = fmt.Sprint(n)
			}
			line += "\t" + gpus
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	if len(rows) == 0 {
		fmt.Fprintln(w, "(no job waited in the window)")
	}
}

func waitSeconds(s float64) string {
	if s <= 0 {
		return "-"
	}
	return humanDuration(time.Duration(s * float64(time.Second)))
}

func newJobsUtilizationCmd(a *app) *cobra.Command {
	var (
		win  window
		step time.Duration
	)
	cmd := &cobra.Command{
		Use:   "utilization NAME",
		Short: "Show a job's GPU utilisation per replica and GPU over its life",
		Long: `Show the GPU utilisation (percent) and framebuffer memory of each GPU of
each replica, as NVIDIA's DCGM exporter measured it, read from Prometheus
(the server's --prometheus-url). The table has a line per GPU: mean, most,
the last sample, the most memory, and a sparkline over the window. Once
Prometheus has forgotten the samples, tyctl jobs get still shows the
job's kept mean and p95.`,
		Example: `  tyctl jobs utilization mnist-1
  tyctl jobs utilization mnist-1 --since 1h --step 15s
  tyctl jobs utilization tenants/ml/jobs/mnist-1 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Job, args[0])
			if err != nil {
				return err
			}
			if step < 0 || step%time.Second != 0 || step > math.MaxInt32*time.Second {
				return fmt.Errorf("--step %s: want whole seconds, e.g. 30s", step)
			}
			req := &pb.QueryJobUtilizationRequest{Name: name, StepSeconds: int32(step / time.Second)}
			if req.Start, req.End, err = win.times(a.now()); err != nil {
				return err
			}
			conn, err := a.connect()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := pb.NewUsageServiceClient(conn).QueryJobUtilization(ctx, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { writeUtilizationTable(w, resp) })
		},
	}
	win.register(cmd, "the job's admission", "the job's end, or now")
	cmd.Flags().DurationVar(&step, "step", 0, "resolution, e.g. 30s; default: the window over 240 points, at least 15s")
	return cmd
}

// sparkWidth is the most characters a sparkline takes; longer series are
// averaged down to it.
const sparkWidth = 40

func writeUtilizationTable(w io.Writer, resp *pb.QueryJobUtilizationResponse) {
	if !resp.GetAvailable() {
		fmt.Fprintln(w, "GPU utilisation is not available: the server runs without --prometheus-url (tyctl jobs get shows what it kept)")
		return
	}
	fmt.Fprintf(w, "From %s to %s, every %s\n", clockUTC(resp.GetStart()), clockUTC(resp.GetEnd()),
		humanDuration(time.Duration(resp.GetStepSeconds())*time.Second))
	if len(resp.GetSeries()) == 0 {
		fmt.Fprintln(w, "(no samples in the window: Prometheus may have forgotten them; tyctl jobs get shows the kept mean and p95)")
		return
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "REPLICA\tGPU\tMEAN\tMAX\tLAST\tMEMORY MAX\tOVER TIME")
	for _, s := range resp.GetSeries() {
		var sum, most, memMost float64
		values := make([]float64, 0, len(s.GetPoints()))
		hasMem := false
		for _, p := range s.GetPoints() {
			u := p.GetUtilization()
			sum, most = sum+u, max(most, u)
			values = append(values, u)
			if p.MemoryUsedMib != nil {
				hasMem, memMost = true, max(memMost, p.GetMemoryUsedMib())
			}
		}
		mean, last, mem := "-", "-", "-"
		if n := len(values); n > 0 {
			mean, last = percent(sum/float64(n)), percent(values[n-1])
		}
		if hasMem {
			mem = fmt.Sprintf("%.0f MiB", memMost)
		}
		maxS := "-"
		if len(values) > 0 {
			maxS = percent(most)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(s.GetReplica()), dash(s.GetGpu()), mean, maxS, last, mem, sparkline(values, sparkWidth))
	}
	_ = tw.Flush()
}

func percent(v float64) string { return fmt.Sprintf("%.0f%%", v) }

func clockUTC(t *timestamppb.Timestamp) string {
	if t == nil {
		return "-"
	}
	return t.AsTime().UTC().Format("2006-01-02 15:04:05Z")
}

// sparkline draws percentages (0 to 100) in at most width block
// characters, each the mean of its share of the values.
func sparkline(values []float64, width int) string {
	if len(values) == 0 {
		return "-"
	}
	blocks := []rune("▁▂▃▄▅▆▇█")
	n := min(len(values), width)
	out := make([]rune, n)
	for i := range n {
		from, to := i*len(values)/n, (i+1)*len(values)/n
		var sum float64
		for _, v := range values[from:to] {
			sum += v
		}
		level := int(math.Round(sum / float64(to-from) / 100 * float64(len(blocks)-1)))
		out[i] = blocks[min(max(level, 0), len(blocks)-1)]
	}
	return string(out)
}
