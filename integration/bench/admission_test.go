//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Issue 8's end-to-end admission: N single-pod jobs over T tenants,
// submitted at once, until every job's pod exists, against raw client-go
// creates of the same pods on the same API server. Kueue's own
// performance test is quoted beside it: 15,000 workloads over 30
// ClusterQueues in about 351 s.
const kueueSeconds, kueueWorkloads = 351.0, 15000

// admissionWorkerArgs let the worker's Kubernetes client go as fast as the
// API server takes (the default 200 QPS would be the limit, not Trainyard),
// and hold every job of the run at once.
// TRAINYARD_BENCH_WORKER_ARGS adds to them (a later flag wins).
var admissionWorkerArgs = []string{"--kube-qps", "5000", "--kube-burst", "10000", "--max-owned-jobs", "20000"}

func admissionArgs() []string {
	return append(slices.Clone(admissionWorkerArgs), strings.Fields(os.Getenv("TRAINYARD_BENCH_WORKER_ARGS"))...)
}

// admissionResult is one admission run.
type admissionResult struct {
	jobs, tenants int
	workerArgs    []string
	submitFor     time.Duration // every BatchCreateJobs call
	admittedAt    time.Duration // first submit → every job admitted (polled every 100 ms)
	podsAt        time.Duration // first submit → every job's pod delivered by the informer
	firstPodAt    time.Duration // first submit → the first job's pod delivered
	createPasses  float64       // the worker's reconcile passes until every pod existed
	rawPods       int
	rawFor        time.Duration // first raw create → every raw pod delivered
	lost          int           // jobs without a pod at the end
	podCreates    float64       // the worker's pod creates (one per pod expected)
	metrics       map[string]float64
	// settle, rawSettle: from the last pod of a phase created to its last
	// pod finished. Raw's phase always waits for it (Trainyard's starts
	// after); Trainyard's only when finish
	// (TRAINYARD_BENCH_ADMISSION_FINISHED=1). Each phase's CPU is counted
	// until then.
	finish              bool
	fresh               bool // Trainyard's phase ran on a new cluster, not on raw's after its pods were deleted
	settle, rawSettle   time.Duration
	settled, rawSettled bool          // false: the wait timed out with pods unfinished
	rawDeleteFor        time.Duration // deleting raw's pods between the phases
	quietFor            time.Duration // then until the machine was under half busy
	cpu                 []cpuUse      // during the Trainyard phase
	rawCPU              []cpuUse
	// createCPU, rawCreateCPU: during each phase until its last pod
	// existed, the window its rate is measured over.
	createCPU, rawCreateCPU []cpuUse
}

func (r admissionResult) rate() float64    { return perSecond(r.jobs, r.podsAt) }
func (r admissionResult) rawRate() float64 { return perSecond(r.rawPods, r.rawFor) }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// measureAdmission runs raw creates, then Trainyard. The pods of both run
// for a second (kwok) and stay, finished, as Trainyard keeps them by
// default. Jobs that keep running would measure the cluster's pod churn
// rather than admission. Each phase is timed to its last pod created (and
// to its last pod finished with finish), and each starts on an empty
// cluster with nothing of the other's left in the API server, kwok or the
// pod garbage collector (past 12,500 finished pods it force-deletes the
// oldest): on a local cluster the run started, Trainyard's phase gets a
// new one (harness.DiscardCluster: seconds); on any other, raw's pods are
// let finish and then deleted first. kwok runs pods minutes behind the
// creates, and deleted unfinished, at 15,000, raw's pods took 149-360 s
// to go beside kwok's backlog, the machine was still busy a minute later,
// and Trainyard's phase then ran at 0.56-0.68× where it ran at 0.83-0.89×
// after raw's pods had finished.
func measureAdmission(tb testing.TB, jobs, tenants int, finish bool) admissionResult {
	res := admissionResult{jobs: jobs, tenants: tenants, rawPods: jobs, workerArgs: admissionArgs(), finish: finish}
	var namespaces []string
	leaveClusterEmpty(tb, &namespaces)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	// Raw: the pods the worker would render, in namespaces of their own,
	// created by 32 goroutines with a client as fast as the worker's.
	c := harness.Cluster(tb)
	res.fresh = harness.Owns(c) // DiscardCluster replaces it between the phases
	addScaleNodes(tb, c, jobs)
	admin := c.Client()
	prefix := "admraw" + uuid.NewString()[:5] + "-"
	rawNS := make([]string, tenants)
	for i := range rawNS {
		rawNS[i] = prefix + fmt.Sprintf("%02d", i)
		namespaces = append(namespaces, rawNS[i])
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rawNS[i]}}, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("raw namespace: %v", err)
		}
		// The pods are the worker's, service account included.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kube.DefaultJobServiceAccount}}
		if _, err := admin.CoreV1().ServiceAccounts(rawNS[i]).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("raw namespace's service account: %v", err)
		}
	}
	rawCtx, stopRaw := context.WithCancel(ctx)
	defer stopRaw()
	seen := startFirstSeen(rawCtx, tb, c.RESTConfig(), prefix)
	procs := clusterProcesses(c)
	spec := admissionSpec()
	rawCfg := c.RESTConfig()
	rawCfg.QPS, rawCfg.Burst = 5000, 10000
	kube.TuneRESTConfig(rawCfg) // as the worker's
	raw := kubernetes.NewForConfigOrDie(rawCfg)
	pods := make(chan *corev1.Pod, 64)
	var rawErr atomic.Value
	waitQuiet(30 * time.Second)
	cpu0 := sampleCPU(procs)
	start := time.Now()
	rawProfiled := profileAPIServer(tb, c.RESTConfig(), "admission-raw", 10*time.Second)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for p := range pods {
				if _, err := raw.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					rawErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	for i := range jobs {
		j := job.Job{Tenant: fmt.Sprintf("adm-%02d", i%tenants), Name: fmt.Sprintf("raw-%05d", i), UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Spec: spec}
		p, err := kube.RenderPod(j, rawNS[i%tenants], job.Worker, 0, 0, kube.PodOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		delete(p.Labels, kube.LabelManagedBy)
		pods <- p
	}
	close(pods)
	wg.Wait()
	if err, _ := rawErr.Load().(error); err != nil {
		tb.Fatalf("raw create: %v", err)
	}
	res.rawFor = seen.waitFor(tb, "raw-", jobs, start, 10*time.Minute)
	res.rawCreateCPU = diffCPU(cpu0, sampleCPU(procs))
	rawProfiled()
	if finish || !res.fresh {
		res.rawSettle, res.rawSettled = seen.settle(tb, "raw-", 10*time.Minute)
		res.rawCPU = diffCPU(cpu0, sampleCPU(procs))
	}
	stopRaw()
	if res.fresh {
		harness.DiscardCluster(tb)
	} else {
		res.rawDeleteFor = deletePods(tb, admin, rawNS)
		res.quietFor = waitQuiet(time.Minute)
	}

	env := harness.Start(tb, harness.Options{Cluster: true, Workers: 1, WorkerArgs: res.workerArgs})
	addScaleNodes(tb, env.Cluster, jobs)
	admin = env.Cluster.Client()
	ids := make([]string, tenants)
	for i := range ids {
		ids[i] = fmt.Sprintf("adm-%02d", i)
		env.CreateTenant(tb, ids[i], harness.Subject("alice", pb.Role_ROLE_EDITOR))
		namespaces = append(namespaces, env.Namespace(ids[i]))
	}
	for i := range ids {
		waitServiceAccount(tb, admin, env.Namespace(ids[i]), kube.DefaultJobServiceAccount)
	}
	seen = startFirstSeen(ctx, tb, env.Cluster.RESTConfig(), env.NamespacePrefix)
	procs = append(clusterProcesses(env.Cluster), trainyardProcesses(tb, env.DatabaseURL, 2)...)

	// Trainyard: BatchCreateJobs of up to 500 jobs, four calls at once.
	metricsURL := "http://" + env.Workers[0].WaitFor(tb, metricsLine, time.Minute)[1] + "/metrics"
	before := scrape(tb, metricsURL)
	client := env.Jobs(tb, env.Token("alice"))
	specPB := admissionSpecPB()
	type call struct {
		tenant string
		ids    []string
	}
	calls := make(chan call, 64)
	admitted := pollAdmitted(ctx, tb, env.DatabaseURL, jobs)
	waitQuiet(30 * time.Second)
	cpu0 = sampleCPU(procs)
	start = time.Now()
	profiled := profileAPIServer(tb, env.Cluster.RESTConfig(), "admission-trainyard", 10*time.Second)
	var callErr atomic.Value
	for range 4 {
		wg.Go(func() {
			for c := range calls {
				req := &pb.BatchCreateJobsRequest{Parent: harness.TenantName(c.tenant)}
				for _, id := range c.ids {
					req.Requests = append(req.Requests, &pb.CreateJobRequest{JobId: id, RequestId: id, Job: &pb.Job{Spec: specPB}})
				}
				cctx, ccancel := context.WithTimeout(ctx, time.Minute)
				if _, err := client.BatchCreateJobs(cctx, req); err != nil {
					callErr.CompareAndSwap(nil, err)
				}
				ccancel()
			}
		})
	}
	perTenant := map[string][]string{}
	for i := range jobs {
		perTenant[ids[i%tenants]] = append(perTenant[ids[i%tenants]], fmt.Sprintf("ty-%05d", i))
	}
	for _, t := range ids {
		for k := 0; k < len(perTenant[t]); k += 500 {
			calls <- call{t, perTenant[t][k:min(k+500, len(perTenant[t]))]}
		}
	}
	close(calls)
	wg.Wait()
	res.submitFor = time.Since(start)
	if err, _ := callErr.Load().(error); err != nil {
		tb.Fatalf("BatchCreateJobs: %v", err)
	}
	res.podsAt = seen.waitFor(tb, "ty-", jobs, start, 20*time.Minute)
	res.createCPU = diffCPU(cpu0, sampleCPU(procs))
	profiled()
	res.createPasses = diffMetrics(before, scrape(tb, metricsURL))["trainyard_worker_reconcile_duration_seconds_count"]
	res.firstPodAt = seen.first("ty-").Sub(start)
	if finish {
		res.settle, res.settled = seen.settle(tb, "ty-", 10*time.Minute)
		res.cpu = diffCPU(cpu0, sampleCPU(procs))
	}
	res.admittedAt = admitted(start)
	res.lost = jobs - seen.count("ty-")
	res.metrics = settledMetrics(tb, []string{metricsURL}, []map[string]float64{before}, float64(jobs))[0]
	res.podCreates = res.metrics[podCreatesSeries]
	return res
}

// deletePods deletes every pod of the namespaces without grace, 32 at a
// time (a DeleteCollection deletes one pod after another in the API
// server: 15,000 took six minutes), and waits until they are gone; it
// returns how long that took. It does not stop the test, so that cleanups
// may use it.
func deletePods(tb testing.TB, kc kubernetes.Interface, namespaces []string) time.Duration {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	type podRef struct{ ns, name string }
	refs := make(chan podRef, 256)
	var (
		wg     sync.WaitGroup
		failed atomic.Value
	)
	for range 32 {
		wg.Go(func() {
			for r := range refs {
				err := kc.CoreV1().Pods(r.ns).Delete(ctx, r.name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
				if err != nil && !apierrors.IsNotFound(err) {
					failed.CompareAndSwap(nil, err)
				}
			}
		})
	}
	list := func(ns string) ([]corev1.Pod, bool) {
		pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			failed.CompareAndSwap(nil, err)
			return nil, false
		}
		return pods.Items, true
	}
	for _, ns := range namespaces {
		pods, _ := list(ns)
		for _, p := range pods {
			refs <- podRef{ns, p.Name}
		}
	}
	close(refs)
	wg.Wait()
	for _, ns := range namespaces {
		for {
			pods, ok := list(ns)
			if !ok || len(pods) == 0 || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Second)
		}
	}
	if err, _ := failed.Load().(error); err != nil {
		tb.Errorf("deleting pods: %v", err)
	}
	return time.Since(start)
}

// waitQuiet waits until the machine was less than half busy over two
// seconds, or for at most max; it returns how long it waited.
func waitQuiet(max time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < max {
		b0, t0 := machineBusy()
		time.Sleep(2 * time.Second)
		b1, t1 := machineBusy()
		if t1 > t0 && float64(b1-b0) < 0.5*float64(t1-t0) {
			break
		}
	}
	return time.Since(start)
}

const podCreatesSeries = `trainyard_worker_kube_requests_total{resource="pods",verb="create"}`

// settledMetrics scrapes the workers' metrics (urls) and returns their
// change since before, once their pod creates add up to want or after 10
// s: a pod can reach a watch before the create call that made it has
// returned to the worker and been counted.
func settledMetrics(tb testing.TB, urls []string, before []map[string]float64, want float64) []map[string]float64 {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := make([]map[string]float64, len(urls))
		sum := 0.0
		for i, u := range urls {
			out[i] = diffMetrics(before[i], scrape(tb, u))
			sum += out[i][podCreatesSeries]
		}
		if sum >= want || time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// admissionSpec is one replica that runs for a second.
func admissionSpec() job.Spec {
	s := job.Spec{Replicas: []job.ReplicaSpec{{Type: job.Worker, Count: 1, Image: benchImage,
		Command:        []string{benchCommand0, benchCommand1},
		Resources:      job.Resources{CPU: "1m", Memory: "1Mi"},
		PodAnnotations: map[string]string{cluster.AnnotationRunFor: "1s"}}}}
	s.Default()
	return s
}

func admissionSpecPB() *pb.JobSpec {
	return &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 1, Image: benchImage,
		Command:        []string{benchCommand0, benchCommand1},
		Resources:      &pb.Resources{Cpu: "1m", Memory: "1Mi"},
		PodAnnotations: map[string]string{cluster.AnnotationRunFor: "1s"}}}}
}

// addScaleNodes adds kwok nodes with room for twice the pods and some:
// admission, not capacity, is measured.
func addScaleNodes(tb testing.TB, c *cluster.Cluster, pods int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	per := 4000
	var nodes []cluster.Node
	for i := range (2*pods + per) / per {
		n := cluster.CPUNode(fmt.Sprintf("kwok-scale-%d", i))
		n.Capacity[corev1.ResourcePods] = resource.MustParse(fmt.Sprint(per))
		n.Capacity[corev1.ResourceCPU] = resource.MustParse("1000")
		// A GiB per pod slot: CPUNode's 128Gi would hold only 2,048 pods
		// of the bench's 64Mi, and the scheduler would then, rightly, keep
		// the rest of the jobs waiting for capacity.
		n.Capacity[corev1.ResourceMemory] = resource.MustParse(fmt.Sprintf("%dGi", per))
		n.PodCIDR = fmt.Sprintf("10.%d.0.0/16", 100+i)
		nodes = append(nodes, n)
	}
	if err := c.AddNodes(ctx, nodes...); err != nil && !strings.Contains(err.Error(), "already exists") {
		tb.Fatalf("scale nodes: %v", err)
	}
}

// pollAdmitted polls how many jobs are admitted until all of want are;
// the function returned says when that was, from start.
func pollAdmitted(ctx context.Context, tb testing.TB, dbURL string, want int) func(start time.Time) time.Duration {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	done := make(chan time.Time, 1)
	go func() {
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			// A job waiting for admission is unowned with claim_after
			// 'infinity' (store/doc.go): one probe of jobs_claim_idx. The
			// count, a read of the whole table (10 ms at 15,000 jobs, every
			// 100 ms of Trainyard's phase), only confirms it.
			var waiting bool
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM jobs WHERE active AND worker_id IS NULL AND claim_after = 'infinity')`).Scan(&waiting); err != nil || waiting {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE admitted OR state <> 'QUEUED'`).Scan(&n); err == nil && n >= want {
				done <- time.Now()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func(start time.Time) time.Duration {
		select {
		case at := <-done:
			return at.Sub(start)
		case <-time.After(time.Minute):
			tb.Errorf("not every job was admitted")
			return 0
		}
	}
}

// firstSeen records when the informer first delivered each pod of the
// bench's namespaces, by name. Its client speaks protobuf as the worker's
// does (benchClient): a JSON watcher beside the worker's would make the
// API server encode every pod event twice in Trainyard's phase and once
// in raw's, a cost of the bench's, not of Trainyard.
type firstSeen struct {
	mu         sync.Mutex
	at         map[string]time.Time
	unfinished map[string]bool // pods not yet Succeeded or Failed, by name
	changed    chan struct{}
}

func startFirstSeen(ctx context.Context, tb testing.TB, cfg *rest.Config, nsPrefix string) *firstSeen {
	kc := benchClient(tb, cfg)
	s := &firstSeen{at: map[string]time.Time{}, unfinished: map[string]bool{}, changed: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithTransform(func(obj any) (any, error) {
		// Only the name and phase are kept: 30,000 full pods would be the
		// bench's memory.
		if p, ok := obj.(*corev1.Pod); ok {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion},
				Status: corev1.PodStatus{Phase: p.Status.Phase}}, nil
		}
		return obj, nil
	}))
	inf := factory.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !strings.HasPrefix(p.Namespace, nsPrefix) {
			return
		}
		now := time.Now()
		s.mu.Lock()
		if _, ok := s.at[p.Name]; !ok {
			s.at[p.Name] = now
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			delete(s.unfinished, p.Name)
		} else {
			s.unfinished[p.Name] = true
		}
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, cur any) { seen(cur) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				s.mu.Lock()
				delete(s.unfinished, p.Name)
				s.mu.Unlock()
			}
		},
	}); err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	tb.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		tb.Fatal("pod informer never synced")
	}
	return s
}

// count is how many pods with the name prefix were seen.
func (s *firstSeen) count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for name := range s.at {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// settle waits until every pod with the prefix has finished (kwok ran it
// for its second): the control plane's work for a phase's pods —
// scheduling, binding, running, ending them — is over, and does not spill
// into the next phase. It returns how long that took, and false when the
// timeout came first.
func (s *firstSeen) settle(tb testing.TB, prefix string, timeout time.Duration) (time.Duration, bool) {
	start := time.Now()
	left := 0
	ok := s.await(timeout, func() bool {
		left = 0
		for name := range s.unfinished {
			if strings.HasPrefix(name, prefix) {
				left++
			}
		}
		return left == 0
	})
	if !ok {
		tb.Logf("%d %s* pods still unfinished after %s; going on", left, prefix, timeout)
	}
	return time.Since(start), ok
}

// first is when the first pod with the prefix was seen.
func (s *firstSeen) first(prefix string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for name, at := range s.at {
		if strings.HasPrefix(name, prefix) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// waitFor waits until n pods with the prefix were seen and returns when
// the last one was, from start (or the timeout, with an error).
func (s *firstSeen) waitFor(tb testing.TB, prefix string, n int, start time.Time, timeout time.Duration) time.Duration {
	var last time.Time
	seen := 0
	if !s.await(timeout, func() bool {
		last, seen = time.Time{}, 0
		for name, at := range s.at {
			if strings.HasPrefix(name, prefix) {
				seen++
				if at.After(last) {
					last = at
				}
			}
		}
		return seen >= n
	}) {
		tb.Errorf("%d of %d %s* pods after %s", seen, n, prefix, timeout)
		return time.Since(start)
	}
	return last.Sub(start)
}

// await evaluates cond (under s.mu) after every informer event until it
// holds, or the timeout passes (false).
func (s *firstSeen) await(timeout time.Duration, cond func() bool) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ok, changed := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// diffCPU is the CPU each process used between two samples.
func diffCPU(a, b cpuSample) []cpuUse {
	t := newCPUTotals()
	t.add(a, b)
	return t.uses()
}

// benchAdmission is issue 8's figure: TRAINYARD_BENCH_ADMISSION_JOBS
// (default 15,000) single-pod jobs over TRAINYARD_BENCH_ADMISSION_TENANTS
// (default 30).
func benchAdmission(b *testing.B, rep *report) {
	jobs, tenants := envInt(b, "TRAINYARD_BENCH_ADMISSION_JOBS", 15000), envInt(b, "TRAINYARD_BENCH_ADMISSION_TENANTS", 30)
	// Timing Trainyard's phase to its pods' end too adds minutes (kwok runs
	// them far behind the creates): make bench measures the creates, issue
	// 8's figure, and leaves that to a run of its own.
	r := measureAdmission(b, jobs, tenants, os.Getenv("TRAINYARD_BENCH_ADMISSION_FINISHED") == "1")
	b.ReportMetric(r.rate(), "jobs/s")
	b.ReportMetric(r.rawRate(), "raw-pods/s")
	b.ReportMetric(r.podsAt.Seconds(), "all-pods-s")
	rep.sections = append(rep.sections, r.print)
}

func (r admissionResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nAdmission (issue 8): %d single-pod jobs over %d tenants, submitted at once (BatchCreateJobs, 500 per call, 4 calls at a time), until every pod exists;\n", r.jobs, r.tenants)
	fmt.Fprintf(out, "beside raw client-go creates of the same %d pods (32 goroutines, QPS 5000) on the same API server. Worker flags: %s.\n", r.rawPods, strings.Join(r.workerArgs, " "))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "path\tjobs\tseconds\tper second\tvs raw\t\n")
	fmt.Fprintf(tw, "raw pod creates (baseline)\t%d\t%.1f\t%.0f\t1.00×\t\n", r.rawPods, r.rawFor.Seconds(), r.rawRate())
	fmt.Fprintf(tw, "Trainyard: submit → every pod\t%d\t%.1f\t%.0f\t%s\t\n", r.jobs, r.podsAt.Seconds(), r.rate(), ratio(r.rate(), r.rawRate()))
	fmt.Fprintf(tw, "Kueue's performance test (quoted, not run here)\t%d\t%.0f\t%.0f\t-\t\n", kueueWorkloads, kueueSeconds, kueueWorkloads/kueueSeconds)
	rawDone, done := r.rawFor+r.rawSettle, r.podsAt+r.settle
	if r.rawSettled && r.settled {
		fmt.Fprintf(tw, "raw: first create → every pod finished\t%d\t%.1f\t%.0f\t1.00×\t\n", r.rawPods, rawDone.Seconds(), perSecond(r.rawPods, rawDone))
		fmt.Fprintf(tw, "Trainyard: submit → every pod finished\t%d\t%.1f\t%.0f\t%s\t\n", r.jobs, done.Seconds(), perSecond(r.jobs, done),
			ratio(perSecond(r.jobs, done), perSecond(r.rawPods, rawDone)))
	}
	tw.Flush()
	fmt.Fprintf(out, "Submitting took %.1f s; every job was admitted %.1f s after the first submit, the first pod existed %.1f s after it. Lost %d; the worker created %.0f pods for %d jobs.\n",
		r.submitFor.Seconds(), r.admittedAt.Seconds(), r.firstPodAt.Seconds(), r.lost, r.podCreates, r.jobs)
	m := r.metrics
	fmt.Fprintf(out, "Scheduler: %.0f cycles, %.2f s in all (snapshot %.2f, decide %.2f, commit %.2f); worker: %.0f reconcile passes (%.0f until every pod existed), %.1f s in all.\n",
		m[`trainyard_scheduler_cycle_duration_seconds_count{phase="total"}`], m[`trainyard_scheduler_cycle_duration_seconds_sum{phase="total"}`],
		m[`trainyard_scheduler_cycle_duration_seconds_sum{phase="snapshot"}`], m[`trainyard_scheduler_cycle_duration_seconds_sum{phase="decide"}`],
		m[`trainyard_scheduler_cycle_duration_seconds_sum{phase="commit"}`],
		m["trainyard_worker_reconcile_duration_seconds_count"], r.createPasses, m["trainyard_worker_reconcile_duration_seconds_sum"])
	fmt.Fprintf(out, "The worker's Kubernetes calls per job: %s.\n", callsPerJob(m, r.jobs))
	cpu := func(uses []cpuUse) string {
		var parts []string
		for _, u := range uses {
			parts = append(parts, fmt.Sprintf("%s %.1f", u.name, u.seconds))
		}
		return strings.Join(parts, ", ")
	}
	if r.finish || !r.fresh {
		fmt.Fprintf(out, "kwok runs each pod for a second, but far behind the creates: raw's last pod finished %.1f s after it was created", r.rawSettle.Seconds())
		if r.finish {
			fmt.Fprintf(out, ", Trainyard's %.1f s", r.settle.Seconds())
		}
		if !r.rawSettled || (r.finish && !r.settled) {
			fmt.Fprintf(out, " (the wait timed out with pods unfinished: the phases overlapped)")
		}
		fmt.Fprintf(out, ".\n")
	}
	if r.fresh {
		fmt.Fprintf(out, "Each phase ran on a new local cluster: raw's was stopped with its pods, and Trainyard's phase began on an empty one.\n")
	} else {
		fmt.Fprintf(out, "Raw's pods were then deleted (%.1f s, and %.1f s until the machine was under half busy): the pod garbage collector would otherwise delete them during Trainyard's phase.\n",
			r.rawDeleteFor.Seconds(), r.quietFor.Seconds())
	}
	fmt.Fprintf(out, "CPU seconds until each phase's pods all existed:\n")
	fmt.Fprintf(out, "raw phase: %s.\nTrainyard phase: %s.\n", cpu(r.rawCreateCPU), cpu(r.createCPU))
	if r.finish {
		fmt.Fprintf(out, "CPU seconds until each phase's pods had all finished:\n")
		fmt.Fprintf(out, "raw phase: %s.\nTrainyard phase: %s.\n", cpu(r.rawCPU), cpu(r.cpu))
	} else {
		fmt.Fprintf(out, "Trainyard's phase not timed to every pod finished (TRAINYARD_BENCH_ADMISSION_FINISHED=1 does).\n")
	}
}

// envString is the environment's name, or def when it is unset or empty.
func envString(name, def string) string {
	if s := os.Getenv(name); s != "" {
		return s
	}
	return def
}

// envInt is a positive integer from the environment, or def.
func envInt(tb testing.TB, name string, def int) int {
	s := envString(name, strconv.Itoa(def))
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		tb.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}
