package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/usage"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func newUsageCmd(a *app) *cobra.Command {
	var (
		all           bool
		win           window
		groupBy, step string
		csvOut        bool
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show GPU-, CPU- and memory-hours by hour or day (a tenant's members: their tenant; platform admins: --all)",
		Long: `Show the usage ledger: the GPU-, CPU- and memory-hours the jobs held
from admission to end (allocated, not measured), by hour or by UTC day,
per tenant and, with --group-by, per creator and job label. Buckets without
usage are left out. --csv prints the same CSV as the REST API's
Accept: text/csv, for chargeback.`,
		Example: `  tyctl usage --since 24h
  tyctl usage --start 2026-11-01 --end 2026-12-01 --step 1d --group-by creator,label:team --csv > november.csv
  tyctl usage --all --step 1d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &pb.QueryUsageRequest{Parent: "tenants/-", GroupBy: groupBy, Step: step}
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
			resp, err := pb.NewUsageServiceClient(conn).QueryUsage(ctx, req)
			if err != nil {
				return err
			}
			if csvOut {
				return usage.WriteCSV(a.stdout, resp)
			}
			return a.print(resp, func(w io.Writer) { writeUsageTable(w, resp) })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every tenant's usage (platform admins)")
	win.register(cmd, "7 days before --end", "now")
	cmd.Flags().StringVar(&groupBy, "group-by", "", "creator, label:<key>, or several comma separated (creator,label:team)")
	cmd.Flags().StringVar(&step, "step", "1h", "bucket: 1h or 1d (UTC days)")
	cmd.Flags().BoolVar(&csvOut, "csv", false, "print CSV (the REST API's text/csv) instead of a table")
	cmd.AddCommand(newUsageQueueCmd(a))
	return cmd
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
	var gpu, cpu, mem, used float64
	for _, r := range resp.GetRows() {
		rec := usage.Record(r, resp.GetGroupBy())
		rec = append(rec[:1], rec[2:]...)
		rec[0] = r.GetStart().AsTime().UTC().Format("2006-01-02 15:04Z")
		n := len(rec)
		rec[n-4], rec[n-3], rec[n-2], rec[n-1] = hours(r.GetGpuHours()), hours(r.GetCpuHours()), hours(r.GetMemoryGibHours()), hours(r.GetGpuHoursUsed())
		for i := range rec {
			rec[i] = dash(rec[i])
		}
		fmt.Fprintln(tw, strings.Join(rec, "\t"))
		gpu, cpu, mem, used = gpu+r.GetGpuHours(), cpu+r.GetCpuHours(), mem+r.GetMemoryGibHours(), used+r.GetGpuHoursUsed()
	}
	total := make([]string, len(head))
	for i := range total {
		total[i] = ""
	}
	total[0] = "TOTAL"
	n := len(total)
	total[n-4], total[n-3], total[n-2], total[n-1] = hours(gpu), hours(cpu), hours(mem), hours(used)
	fmt.Fprintln(tw, strings.Join(total, "\t"))
	_ = tw.Flush()
}

func hours(h float64) string { return fmt.Sprintf("%.2f", h) }
