package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/usage"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func newUsageCmd(a *app) *cobra.Command {
	var (
		q      usageQuery
		csvOut bool
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show GPU-, CPU- and memory-hours by hour or day (a tenant's members: their tenant; platform admins: --all)",
		Long: `Show the usage ledger: the GPU-, CPU- and memory-hours the jobs held
from admission to end (allocated, not measured), by hour or by UTC day,
per tenant and, with --group-by, per creator and job label, with the
GPU-hours used and held idle (with the server's --prometheus-url). Buckets
without usage are left out. --csv prints the same CSV as the REST API's
Accept: text/csv, for chargeback.`,
		Example: `  tyctl usage --since 24h
  tyctl usage --start 2026-11-01 --end 2026-12-01 --step 1d --group-by creator,label:team --csv > november.csv
  tyctl usage --all --step 1d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := q.run(cmd, a)
			if err != nil {
				return err
			}
			if csvOut {
				return usage.WriteCSV(a.stdout, resp)
			}
			return a.print(resp, func(w io.Writer) { writeUsageTable(w, resp) })
		},
	}
	q.register(cmd)
	cmd.Flags().BoolVar(&csvOut, "csv", false, "print CSV (the REST API's text/csv) instead of a table")
	cmd.AddCommand(newUsageQueueCmd(a), newUsageIdleCmd(a))
	return cmd
}

// usageQuery is the flags of the commands that read the usage ledger.
type usageQuery struct {
	all           bool
	win           window
	groupBy, step string
}

func (q *usageQuery) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&q.all, "all", false, "every tenant's usage (platform admins)")
	q.win.register(cmd, "7 days before --end", "now")
	cmd.Flags().StringVar(&q.groupBy, "group-by", "", "creator, label:<key>, or several comma separated (creator,label:team)")
	cmd.Flags().StringVar(&q.step, "step", "1h", "bucket: 1h or 1d (UTC days)")
}

// run asks the usage API what the flags say.
func (q *usageQuery) run(cmd *cobra.Command, a *app) (*pb.QueryUsageResponse, error) {
	req := &pb.QueryUsageRequest{Parent: "tenants/-", GroupBy: q.groupBy, Step: q.step}
	if !q.all {
		parent, err := a.tenantParent()
		if err != nil {
			return nil, err
		}
		req.Parent = parent
	}
	var err error
	if req.Start, req.End, err = q.win.times(a.now()); err != nil {
		return nil, err
	}
	conn, err := a.connect()
	if err != nil {
		return nil, err
	}
	ctx, cancel := a.callCtx(cmd)
	defer cancel()
	return pb.NewUsageServiceClient(conn).QueryUsage(ctx, req)
}

// window is the --since, --start and --end flags of the commands that
// read a span of time; left out, the server's default holds.
type window struct {
	start, end string
	since      time.Duration
}

func (w *window) register(cmd *cobra.Command, defaultStart, defaultEnd string) {
	cmd.Flags().StringVar(&w.start, "start", "", "from this time: RFC 3339 or a UTC date (2026-11-01); default: --since, or "+defaultStart)
	cmd.Flags().StringVar(&w.end, "end", "", "up to this time: RFC 3339 or a UTC date; default: "+defaultEnd)
	cmd.Flags().DurationVar(&w.since, "since", 0, "from this long ago, e.g. 24h")
}

// times is the window's start and end; nil where the flags leave it out.
func (w *window) times(now time.Time) (start, end *timestamppb.Timestamp, err error) {
	if w.since < 0 {
		return nil, nil, fmt.Errorf("--since %s: want a positive duration, e.g. 24h", w.since)
	}
	if w.since > 0 && w.start != "" {
		return nil, nil, fmt.Errorf("--since and --start: give one of them")
	}
	if w.since > 0 {
		start = timestamppb.New(now.Add(-w.since))
	}
	for _, f := range []struct {
		flag, v string
		into    **timestamppb.Timestamp
	}{{"--start", w.start, &start}, {"--end", w.end, &end}} {
		if f.v == "" {
			continue
		}
		t, err := parseWhen(f.v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.into = timestamppb.New(t)
	}
	return start, end, nil
}

// parseWhen reads RFC 3339 or a UTC date.
func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-11-01T00:00:00Z) nor a date (2026-11-01)", s)
}

func writeUsageTable(w io.Writer, resp *pb.QueryUsageResponse) {
	tw := newTabWriter(w)
	head := usage.Header(resp.GetGroupBy())
	head = append(head[:1], head[2:]...) // the end is the start's next bucket
	for i, h := range head {
		head[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	var total usageSums
	for _, r := range resp.GetRows() {
		sums := usageSumsOf(r)
		rec := append([]string{r.GetStart().AsTime().UTC().Format("2006-01-02 15:04Z")}, usage.Group(r, resp.GetGroupBy())...)
		rec = append(rec, sums.hours()...)
		for i := range rec {
			rec[i] = dash(rec[i])
		}
		fmt.Fprintln(tw, strings.Join(rec, "\t"))
		total.add(sums)
	}
	line := make([]string, len(head))
	line[0] = "TOTAL"
	copy(line[len(line)-len(total):], total.hours())
	fmt.Fprintln(tw, strings.Join(line, "\t"))
	_ = tw.Flush()
}

// usageSums are a row's hours in usage.Header's order: GPU, CPU, memory
// GiB, GPU used, GPU idle.
type usageSums [5]float64

func usageSumsOf(r *pb.UsageRow) usageSums {
	return usageSums{r.GetGpuHours(), r.GetCpuHours(), r.GetMemoryGibHours(), r.GetGpuHoursUsed(), r.GetGpuHoursIdle()}
}

func (s *usageSums) add(o usageSums) {
	for i := range s {
		s[i] += o[i]
	}
}

func (s usageSums) hours() []string {
	out := make([]string, len(s))
	for i, h := range s {
		out[i] = hours(h)
	}
	return out
}

func hours(h float64) string { return fmt.Sprintf("%.2f", h) }

func newUsageIdleCmd(a *app) *cobra.Command {
	var q usageQuery
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "Show the GPU-hours held idle per tenant over a window, most first (platform admins: --all)",
		Long: `Show, per tenant (and per creator and job label with --group-by), the
GPU-hours its jobs held over the window, used, and held idle: while a job
was flagged IdleGPUs (every GPU below the tenant's idle threshold for its
idle time; the server's --prometheus-url), most idle first. It sums the
usage API's buckets over the window (--step 1d reads fewer rows for a long
window; the window is then whole UTC days); with -o json, the same
answer with a row per tenant and group spanning the window.`,
		Example: `  tyctl usage idle --all --since 168h
  tyctl usage idle --all --start 2026-11-01 --end 2026-12-01 --step 1d
  tyctl usage idle --group-by creator`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := q.run(cmd, a)
			if err != nil {
				return err
			}
			report := idleReport(resp)
			return a.print(report, func(w io.Writer) { writeIdleTable(w, report) })
		},
	}
	q.register(cmd)
	return cmd
}

// idleReport sums resp's rows over its window per tenant and group (each
// row then spans the window), most GPU-hours idle first; groups that held
// no GPUs are left out.
func idleReport(resp *pb.QueryUsageResponse) *pb.QueryUsageResponse {
	out := &pb.QueryUsageResponse{Start: resp.GetStart(), End: resp.GetEnd(), GroupBy: resp.GetGroupBy()}
	byKey := map[string]*pb.UsageRow{}
	for _, r := range resp.GetRows() {
		if r.GetGpuHours() == 0 && r.GetGpuHoursIdle() == 0 {
			continue
		}
		key := strings.Join(usage.Group(r, resp.GetGroupBy()), "\x00")
		t, ok := byKey[key]
		if !ok {
			t = &pb.UsageRow{Start: resp.GetStart(), End: resp.GetEnd(), Tenant: r.GetTenant(), Creator: r.GetCreator(), Labels: r.GetLabels()}
			byKey[key] = t
			out.Rows = append(out.Rows, t)
		}
		t.GpuHours += r.GetGpuHours()
		t.CpuHours += r.GetCpuHours()
		t.MemoryGibHours += r.GetMemoryGibHours()
		t.GpuHoursUsed += r.GetGpuHoursUsed()
		t.GpuHoursIdle += r.GetGpuHoursIdle()
	}
	slices.SortStableFunc(out.Rows, func(x, y *pb.UsageRow) int { return cmp.Compare(y.GetGpuHoursIdle(), x.GetGpuHoursIdle()) })
	return out
}

// writeIdleTable prints the report: a line per tenant and group, and the
// total.
func writeIdleTable(w io.Writer, report *pb.QueryUsageResponse) {
	fmt.Fprintf(w, "From %s to %s\n", report.GetStart().AsTime().UTC().Format("2006-01-02 15:04Z"), report.GetEnd().AsTime().UTC().Format("2006-01-02 15:04Z"))
	tw := newTabWriter(w)
	head := usage.GroupHeader(report.GetGroupBy())
	for i, h := range head {
		head[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "GPU HOURS", "USED", "IDLE", "IDLE %"), "\t"))
	var gpu, used, idle float64
	line := func(rec []string, g, u, i float64) {
		share := "-"
		if g > 0 {
			share = fmt.Sprintf("%.0f%%", 100*i/g)
		}
		fmt.Fprintln(tw, strings.Join(append(rec, hours(g), hours(u), hours(i), share), "\t"))
	}
	for _, r := range report.GetRows() {
		rec := usage.Group(r, report.GetGroupBy())
		for i := range rec {
			rec[i] = dash(rec[i])
		}
		line(rec, r.GetGpuHours(), r.GetGpuHoursUsed(), r.GetGpuHoursIdle())
		gpu, used, idle = gpu+r.GetGpuHours(), used+r.GetGpuHoursUsed(), idle+r.GetGpuHoursIdle()
	}
	total := make([]string, len(head))
	total[0] = "TOTAL"
	line(total, gpu, used, idle)
	_ = tw.Flush()
}
