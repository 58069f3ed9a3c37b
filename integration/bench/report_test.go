//go:build bench || integration

package bench

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// report collects every figure of the run for the final table.
type report struct {
	cfg       config
	started   time.Time
	loadStart string

	storeDatabase                           string
	store                                   []opResult
	jobRowBytes, eventRowBytes, rawRowBytes int

	clusterKind      string
	blocks, perBlock int
	levels           []levelResult
	logs             []string // the processes' warnings and errors
	rss              []rssUse

	// sections print the issue 8 and 11 measurements (admission_test.go,
	// batch_test.go, million_test.go, fanout_test.go, rates_test.go,
	// memory_test.go, replicas_test.go), in
	// the order they ran.
	sections []func(io.Writer)
	// took is how long each section ran (those a -bench filter skipped
	// take no time), for make bench's budget.
	took []sectionTime
}

type sectionTime struct {
	name string
	d    time.Duration
}

func newReport(cfg config) *report {
	return &report{cfg: cfg, started: time.Now(), loadStart: loadavg()}
}

// Issue 4's figures for Kubeflow's training-operator v1.8 on the local
// cluster (not measured by this bench).
const kubeflowP50, kubeflowRawP50 = 18 * time.Second, 36 * time.Millisecond

func (r *report) print(out io.Writer) {
	fmt.Fprintf(out, "\n==== Trainyard bench: %s, %d CPUs; load average %s at start, %s at end\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), r.loadStart, loadavg())
	if len(r.store) > 0 {
		r.printStore(out)
	}
	if len(r.levels) > 0 {
		r.printDispatch(out)
	}
	for _, s := range r.sections {
		s(out)
	}
	r.printTook(out)
}

// printTook prints how long each section that ran took, and the run.
func (r *report) printTook(out io.Writer) {
	var parts []string
	for _, t := range r.took {
		if t.d >= time.Second {
			parts = append(parts, fmt.Sprintf("%s %s", t.name, t.d.Round(time.Second)))
		}
	}
	fmt.Fprintf(out, "\nWall time: %s in all; %s\n", time.Since(r.started).Round(time.Second), strings.Join(parts, ", "))
}

func (r *report) printStore(out io.Writer) {
	fmt.Fprintf(out, "\nStore: create one 1 chief + 4 worker job vs a raw INSERT of a row like it (database %s on DATABASE_URL's server, dropped after; %s per row)\n",
		r.storeDatabase, r.cfg.storeFor)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	base := map[int]opResult{}
	width := 0
	for _, o := range r.store {
		if o.path == baselinePath {
			base[o.clients] = o
		}
		width = max(width, len(o.path))
	}
	fmt.Fprintf(tw, "%-*s\tclients\tops/s\tmean ms\tp50 ms\tp99 ms\tmean vs baseline\tops/s vs baseline\tserver CPU ms/op\tbench client CPU ms/op\tload avg\t\n", width, "path")
	for _, o := range r.store {
		b := base[o.clients]
		serveCPU, clientCPU := "-", "-"
		if o.serveCPU > 0 {
			serveCPU = fmt.Sprintf("%.3f", ms(o.serveCPU))
			clientCPU = fmt.Sprintf("%.3f", ms(o.clientCPU))
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t\n", width, o.path, o.clients, o.perSec,
			ms(o.lat.mean), ms(o.lat.p50), ms(o.lat.p99),
			ratio(ms(o.lat.mean), ms(b.lat.mean)), ratio(o.perSec, b.perSec), serveCPU, clientCPU, o.load)
	}
	tw.Flush()
	r.printStoreRatios(out)
	fmt.Fprintf(out, "Row sizes (avg pg_column_size): jobs %d B + its first job_events row %d B; pgbench's row %d B.\n",
		r.jobRowBytes, r.eventRowBytes, r.rawRowBytes)
	fmt.Fprintf(out, "Postgres backends of the database during each row (pg_stat_activity every 50 ms; average backends by state and wait event):\n")
	for _, o := range r.store {
		fmt.Fprintf(out, "  %-*s %2d clients: %s\n", width, o.path, o.clients, o.waits)
	}
}

func (r *report) printDispatch(out io.Writer) {
	fmt.Fprintf(out, "\nDispatch: sets of 1 chief + 4 worker pods at %.4g/s, %d blocks of %d sets per path and level, the paths taking turns (%s cluster),\n",
		r.cfg.rate, r.blocks, r.perBlock, r.clusterKind)
	fmt.Fprintf(out, "with finished pods already in the tenant's namespace (seeded: finished jobs with their pods, as CleanPodPolicy Running keeps them); both paths create there.\n")
	fmt.Fprintf(out, "At the most seeded level Trainyard's blocks also submit every other job to a tenant whose namespace holds none (\"empty ns\": the same cluster at the same moments); its CPU, submit and quiet times there are the Trainyard column's.\n")
	if len(r.cfg.workerArgs) > 0 {
		fmt.Fprintf(out, "Extra worker flags: %s\n", strings.Join(r.cfg.workerArgs, " "))
	}
	fmt.Fprintf(out, "Latency: from start (raw: before render; Trainyard: CreateJob acknowledged) to the 5th pod delivered by the bench's informer.\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "finished pods\traw p50 / p99 ms\tTrainyard p50 / p99 ms\tvs raw p50 / p99\tvs Trainyard at %d p50 / p99\tempty ns p50 / p99 ms\tvs empty ns p50 / p99\tlost\tworker calls per job\t\n", r.levels[0].seeded)
	first := r.levels[0].trainyard.lat
	for _, l := range r.levels {
		raw, ty, empty := l.raw.lat, l.trainyard.lat, l.empty.lat
		emptyLat, vsEmpty := "-", "-"
		if empty.n > 0 {
			emptyLat = fmt.Sprintf("%.1f / %.1f", ms(empty.p50), ms(empty.p99))
			vsEmpty = ratio(ms(ty.p50), ms(empty.p50)) + " / " + ratio(ms(ty.p99), ms(empty.p99))
		}
		fmt.Fprintf(tw, "%d\t%.1f / %.1f\t%.1f / %.1f\t%s / %s\t%s / %s\t%s\t%s\t%d\t%s\t\n", l.seeded,
			ms(raw.p50), ms(raw.p99), ms(ty.p50), ms(ty.p99),
			ratio(ms(ty.p50), ms(raw.p50)), ratio(ms(ty.p99), ms(raw.p99)),
			ratio(ms(ty.p50), ms(first.p50)), ratio(ms(ty.p99), ms(first.p99)), emptyLat, vsEmpty,
			l.raw.failed+l.raw.missing+l.trainyard.failed+l.trainyard.missing+l.empty.failed+l.empty.missing,
			callsPerJob(l.workerMetrics, l.trainyard.sets+l.empty.sets))
	}
	tw.Flush()
	for _, l := range r.levels {
		r.printLevel(out, l)
	}
	if len(r.rss) > 0 {
		var parts []string
		for _, u := range r.rss {
			parts = append(parts, fmt.Sprintf("%s %.1f MiB (now %.1f MiB)", u.name, float64(u.hwm)/1024, float64(u.rss)/1024))
		}
		fmt.Fprintf(out, "\nPeak RSS (VmHWM) over the dispatch run: %s.\n", strings.Join(parts, ", "))
	}
	for _, l := range r.logs {
		fmt.Fprintf(out, "Log of %s.\n", l)
	}
}

// callsPerJob is the worker's Kubernetes calls in metrics (a change of
// its /metrics) by verb and resource, divided by the jobs submitted.
func callsPerJob(metrics map[string]float64, jobs int) string {
	if jobs == 0 {
		return "-"
	}
	var parts []string
	for k, v := range metrics {
		if v != 0 && strings.HasPrefix(k, "trainyard_worker_kube_requests_total{") {
			parts = append(parts, fmt.Sprintf("%s %.2f", labelValues(k), v/float64(jobs)))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// labelValues is "create pods" for a series with labels
// {resource="pods",verb="create"}: the verb, then the resource.
func labelValues(series string) string {
	var verb, resource string
	for _, kv := range strings.Split(strings.Trim(labelsOf(series), "{}"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "verb":
			verb = strings.Trim(v, `"`)
		case "resource":
			resource = strings.Trim(v, `"`)
		}
	}
	return verb + " " + resource
}

// printLevel shows one level's detail: the full comparison, where
// Trainyard's time goes, the probe, CPU and the worker's metrics.
func (r *report) printLevel(out io.Writer, l levelResult) {
	fmt.Fprintf(out, "\n-- %d finished pods in the namespace", l.seeded)
	if l.seedFor > 0 {
		fmt.Fprintf(out, " (seeding and waiting for quiet took %s)", l.seedFor.Round(time.Second))
	}
	fmt.Fprintf(out, "\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-24s\tsets\tlost\tp50 ms\tp90 ms\tp99 ms\tmax ms\tmean ms\tp50 vs baseline\tp90 vs baseline\tp99 vs baseline\tcall p50 / p99 ms\tload avg (1 min)\t\n", "path")
	for _, d := range []dispatchResult{l.raw, l.trainyard, l.empty} {
		if d.sets == 0 {
			continue
		}
		fmt.Fprintf(tw, "%-24s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%.1f / %.1f\t%s\t\n", d.path, d.sets, d.failed+d.missing,
			ms(d.lat.p50), ms(d.lat.p90), ms(d.lat.p99), ms(d.lat.max), ms(d.lat.mean),
			ratio(ms(d.lat.p50), ms(l.raw.lat.p50)), ratio(ms(d.lat.p90), ms(l.raw.lat.p90)), ratio(ms(d.lat.p99), ms(l.raw.lat.p99)),
			ms(d.call.p50), ms(d.call.p99), loadRange(d.loads))
	}
	tw.Flush()
	t := l.trainyard
	fmt.Fprintf(out, "call = raw: the 5 creates; Trainyard: the CreateJob RPC. Submitting took %s (raw) and %s (Trainyard) in all; waiting for quiet after the blocks %s and %s.\n",
		l.raw.submitFor.Round(time.Millisecond), t.submitFor.Round(time.Millisecond), l.raw.quietFor.Round(time.Millisecond), t.quietFor.Round(time.Millisecond))
	fmt.Fprintf(out, "Where the time goes, p50 / p90 / p99 ms (Trainyard's worker log line has ms resolution):\n")
	span := func(what string, d latencies, note string) {
		if d.n > 0 {
			fmt.Fprintf(out, "  %-32s %7.1f / %7.1f / %7.1f  %s\n", what, ms(d.p50), ms(d.p90), ms(d.p99), note)
		}
	}
	span("raw: start → 1st pod", l.raw.toFirst, "")
	span("raw: 1st → 5th pod", l.raw.spread, "")
	span("Trainyard: ack → saved STARTING", t.decided, "NOTIFY, claim, queue, JobLoad, JobAdmit, plan, JobSave")
	span("Trainyard: saved → 1st pod", t.toPods, "the creates (5 pods at once), informer delivery")
	span("Trainyard: 1st → 5th pod", t.spread, "")
	span("Trainyard: worker's creates", t.acted, "its debug log's \"actions applied\" took= (5 pods)")
	for _, p := range l.probe {
		if p.call.n == 0 {
			continue
		}
		fmt.Fprintf(out, "  probe during %-16s create call %5.1f / %5.1f / %5.1f, to informer %5.1f / %5.1f / %5.1f  (%d single-pod creates, one per %s, in another namespace)\n",
			p.phase+":", ms(p.call.p50), ms(p.call.p90), ms(p.call.p99), ms(p.arrive.p50), ms(p.arrive.p90), ms(p.arrive.p99), p.call.n, probeEvery)
	}
	if l.trainyardPG.samples > 0 {
		fmt.Fprintf(out, "Postgres backends of Trainyard's database during its blocks (every 50 ms; average backends): %s\n", l.trainyardPG)
	}
	if t.early > 0 {
		fmt.Fprintf(out, "%d Trainyard sets had all pods before their CreateJob answer arrived (counted as 0 ms).\n", t.early)
	}
	fmt.Fprintf(out, "Pod size (protobuf, managed fields stripped): raw %d B, Trainyard %d B (raw lacks the managed-by label).\n",
		l.raw.podBytes, t.podBytes)
	if t.lat.n > 0 && l.seeded == 0 {
		fmt.Fprintf(out, "Issue 4 reference (not measured here): Kubeflow training-operator v1.8 p50 %s (raw %s): Trainyard's p50 here is %.1f ms, %s of this run's raw p50.\n",
			kubeflowP50, kubeflowRawP50, ms(t.lat.p50), ratio(ms(t.lat.p50), ms(l.raw.lat.p50)))
	}
	printCPU(out, l)
	printWorkerMetrics(out, l.workerMetrics)
}

func printCPU(out io.Writer, l levelResult) {
	names := []string{}
	seen := map[string]bool{}
	for _, d := range []dispatchResult{l.raw, l.trainyard} {
		for _, c := range d.cpu {
			if !seen[c.name] {
				seen[c.name] = true
				names = append(names, c.name)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	both := ""
	if l.empty.sets > 0 {
		both = "; Trainyard's blocks hold its sets in both namespaces"
	}
	fmt.Fprintf(out, "CPU seconds used during each path's blocks (submits, drain, wait for quiet%s):\n", both)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-34s\traw\tTrainyard\t\n", "process")
	get := func(d dispatchResult, name string) string {
		if d.sets == 0 {
			return "-" // the path did not run at this level
		}
		for _, c := range d.cpu {
			if c.name == name {
				return strconv.FormatFloat(c.seconds, 'f', 1, 64)
			}
		}
		return "-"
	}
	for _, n := range names {
		fmt.Fprintf(tw, "%-34s\t%s\t%s\t\n", n, get(l.raw, n), get(l.trainyard, n))
	}
	tw.Flush()
}

// printWorkerMetrics shows what the worker's /metrics counted during the
// Trainyard blocks.
func printWorkerMetrics(out io.Writer, m map[string]float64) {
	if len(m) == 0 {
		return
	}
	mean := func(name, labels string) string {
		c, s := m[name+"_count"+labels], m[name+"_sum"+labels]
		if c == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f, mean %.1f ms", c, 1000*s/c)
	}
	fmt.Fprintf(out, "Worker /metrics over the Trainyard blocks:\n")
	fmt.Fprintf(out, "  jobs claimed %.0f; reconcile passes %s; queue wait %s; dispatch latency (worker's own: create time → objects created) %s\n",
		m["trainyard_worker_jobs_claimed_total"], mean("trainyard_worker_reconcile_duration_seconds", ""),
		mean("trainyard_workqueue_queue_duration_seconds", `{name="jobs"}`), mean("trainyard_worker_dispatch_latency_seconds", ""))
	if c := m["trainyard_scheduler_cycle_duration_seconds_count{phase=\"total\"}"]; c > 0 {
		var phases []string
		for _, ph := range []string{"snapshot", "decide", "commit", "total"} {
			phases = append(phases, ph+" "+mean("trainyard_scheduler_cycle_duration_seconds", `{phase="`+ph+`"}`))
		}
		fmt.Fprintf(out, "  scheduler: admission latency (queued → admitted) %s; cycles: %s\n",
			mean("trainyard_scheduler_admission_latency_seconds", ""), strings.Join(phases, "; "))
	}
	var calls, errs []string
	for k, v := range m {
		switch {
		case v == 0:
		case strings.HasPrefix(k, "trainyard_worker_kube_requests_total"):
			calls = append(calls, fmt.Sprintf("%s %.0f", labelsOf(k), v))
		case strings.HasPrefix(k, "trainyard_worker_reconcile_errors_total"),
			strings.HasPrefix(k, "trainyard_worker_kube_api_errors_total"),
			strings.HasPrefix(k, "trainyard_workqueue_retries_total"):
			errs = append(errs, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, "trainyard_"), v))
		}
	}
	slices.Sort(calls)
	slices.Sort(errs)
	fmt.Fprintf(out, "  Kubernetes calls: %s\n", strings.Join(calls, ", "))
	var timed []string
	for _, c := range []struct{ verb, resource string }{{"create", "pods"}, {"create", "endpointslices"}, {"update", "endpointslices"}, {"delete", "pods"}} {
		if t := mean("trainyard_worker_kube_request_seconds", `{resource="`+c.resource+`",verb="`+c.verb+`"}`); t != "-" {
			timed = append(timed, c.verb+" "+c.resource+" "+t)
		}
	}
	if len(timed) > 0 {
		fmt.Fprintf(out, "  as the worker timed them (its client's rate limiter included): %s\n", strings.Join(timed, "; "))
	}
	if len(errs) > 0 {
		fmt.Fprintf(out, "  errors and retries: %s\n", strings.Join(errs, ", "))
	}
}

// loadRange is the lowest and highest 1-minute load average of loads.
func loadRange(loads []string) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range loads {
		var v float64
		if _, err := fmt.Sscan(l, &v); err == nil {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if lo > hi {
		return "?"
	}
	return fmt.Sprintf("%.1f-%.1f", lo, hi)
}

// labelsOf is the {...} part of a series name.
func labelsOf(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[i:]
	}
	return series
}

// ratio is a / b as "2.31×", or "-" without a baseline.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// scrape reads every trainyard_ series of a Prometheus text endpoint.
func scrape(b testing.TB, url string) map[string]float64 { return scrapePrefix(b, url, "trainyard_") }

// scrapePrefix reads the series whose names start with prefix.
func scrapePrefix(b testing.TB, url, prefix string) map[string]float64 {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatalf("worker metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatalf("worker metrics: %v", err)
	}
	return out
}

// diffMetrics is after - before for every series.
func diffMetrics(before, after map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// printStoreRatios prints issue 47's ratios: the API's submits against the
// store beneath them and REST against gRPC, per client count.
func (r *report) printStoreRatios(out io.Writer) {
	by := map[string]map[int]opResult{}
	for _, o := range r.store {
		if by[o.path] == nil {
			by[o.path] = map[int]opResult{}
		}
		by[o.path][o.clients] = o
	}
	st, grpcRows, rest := by["store.JobCreate"], by["gRPC CreateJob (serve)"], by["REST CreateJob (serve's gateway)"]
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(grpcRows)) {
		g := grpcRows[c]
		parts = append(parts, fmt.Sprintf("%d clients: gRPC %s of store.JobCreate, REST %s of gRPC", c,
			ratio(g.perSec, st[c].perSec), ratio(rest[c].perSec, g.perSec)))
	}
	if len(parts) > 0 {
		fmt.Fprintf(out, "Submits through the API (ops/s): %s.\n", strings.Join(parts, "; "))
	}
}
