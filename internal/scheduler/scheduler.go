package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
)

// Config configures a Scheduler.
type Config struct {
	// ID names this process as the lease's holder; unique among the
	// processes that run a scheduler. Required.
	ID    string
	Store *store.Store
	// Kube lists and watches nodes (and pods, without Pods).
	Kube kubernetes.Interface
	// Cluster names the cluster Kube reaches: its nodes are that cluster's
	// in the decision, and the jobs placed on them are admitted to it.
	// Defaults to store.DefaultCluster.
	Cluster string
	// Pods is the factory of the pod informer (kube.PodInformers), shared
	// with the process's worker so that every pod event is received and
	// decoded once. Optional: the scheduler makes its own from Kube.
	Pods informers.SharedInformerFactory
	// Listener wakes the scheduler on ChannelSchedule and, while jobs
	// wait, ChannelFreed. Optional: without it, cycles run on the period
	// and on node and pod changes only.
	Listener *store.Listener
	// LeaseTTL is the scheduler lease, renewed every third of it; a dead
	// leader is replaced after it. Defaults to 10s.
	LeaseTTL time.Duration
	// Period runs a cycle at least this often. Defaults to 5s.
	Period time.Duration
	// MinInterval spaces cycles: triggers within it (or within the last
	// cycle's duration, if longer) are folded into one cycle. Defaults to
	// 20ms.
	MinInterval time.Duration
	// PublishInterval bounds how often the queue view is rewritten.
	// Defaults to 1s.
	PublishInterval time.Duration
	// StarvationAge is admission.Config.StarvationAge. Defaults to 30m.
	StarvationAge time.Duration
	// BorrowAging is admission.Config.BorrowAging: zero (the default)
	// leaves borrowers to the weighted-share order alone.
	BorrowAging time.Duration
	// RunTimeRefresh is how often the tenants' typical run times are read
	// again. Defaults to 1m.
	RunTimeRefresh time.Duration
	// UsageRefresh is how often the leader rolls the usage ledger up and
	// reads it again (decayed usage, GPU-seconds for budgets); between
	// reads it counts what the admitted jobs hold itself. Defaults to 1m.
	UsageRefresh time.Duration

	// OnLead, when set, runs while this process holds the lease, with a
	// context that ends when it steps down; the lease does not end before
	// OnLead returns. The worker's EndpointSlice controller writes then:
	// one writer at a time, on a lease that exists anyway. Optional.
	OnLead func(ctx context.Context)

	// Registry receives the metrics; defaults to a private registry.
	Registry prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock of decisions. Defaults to time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultLeaseTTL        = 10 * time.Second
	DefaultPeriod          = 5 * time.Second
	DefaultMinInterval     = 20 * time.Millisecond
	DefaultPublishInterval = time.Second
	DefaultStarvationAge   = 30 * time.Minute
	DefaultRunTimeRefresh  = time.Minute
	DefaultUsageRefresh    = time.Minute
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.LeaseTTL, DefaultLeaseTTL)
	set(&c.Period, DefaultPeriod)
	set(&c.MinInterval, DefaultMinInterval)
	set(&c.PublishInterval, DefaultPublishInterval)
	set(&c.StarvationAge, DefaultStarvationAge)
	set(&c.RunTimeRefresh, DefaultRunTimeRefresh)
	set(&c.UsageRefresh, DefaultUsageRefresh)
	if c.Cluster == "" {
		c.Cluster = store.DefaultCluster
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.ID == "":
		return errors.New("scheduler: Config.ID is required")
	case c.Kube == nil:
		return errors.New("scheduler: Config.Kube is required (and Config.Store, except to Observe)")
	}
	return nil
}

// Scheduler is the scheduling loop. Build it with New, then Run.
type Scheduler struct {
	cfg     Config
	log     *slog.Logger
	store   *store.Store
	metrics *metrics

	factory    informers.SharedInformerFactory
	podFactory informers.SharedInformerFactory // Config.Pods or its own
	nodeLister listerscorev1.NodeLister
	usage      *usage
	synced     []cache.InformerSynced
	trigger    chan struct{}
	// idle is set while the last cycle found no job waiting and left no
	// queue view to clear: then what frees capacity or quota (pods and
	// jobs finishing, node and quota changes) has nobody to let in, and
	// only a job that starts waiting (ChannelSchedule) or the period runs
	// a cycle. With 15,000 jobs running and none waiting, every finishing
	// pod would otherwise cost a cycle that reads all of them.
	idle atomic.Bool
	// submitted is set when a job starts waiting (ChannelSchedule) and
	// taken by the next cycle, which then reads at once: an idle cycle's
	// probe would only find that job.
	submitted atomic.Bool
	// accounting is set while a tenant with a budget or a usage history
	// has admitted jobs: idle cycles then still read, to count them.
	accounting atomic.Bool

	// Owned by the loop goroutine.
	shapes           map[store.JobKey]shape
	specsAfter       int64 // the highest seq read: later jobs' specs come with the next read
	runTimesByTenant map[string]store.RunTime
	runTimesAt       time.Time
	// The other clusters' nodes, read at most every ClusterRefresh (others).
	otherNodes  []admission.Node
	othersAt    time.Time
	ledger      ledger              // the usage ledger (sharing.go), while leading
	heldAt      time.Time           // when the ledger's metrics were last read (observeHeld)
	queue       []store.QueueSample // what waited at the last cycle (queueOf), for sampleQueue
	queueAt     time.Time
	published   map[string]map[string]job.QueueInfo
	publishedAt time.Time
}

// New builds a Scheduler and its informers (not started).
func New(cfg Config) (*Scheduler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg: cfg, log: cfg.Logger.With("scheduler", cfg.ID), store: cfg.Store,
		trigger: make(chan struct{}, 1), shapes: map[store.JobKey]shape{}, usage: newUsage(),
	}
	s.metrics = newMetrics(cfg.Registry)
	// Every node and every pod (capacity others use counts too), each
	// trimmed to what scheduling reads (slimNode, kube.SlimPod).
	s.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Kube, 0)
	s.podFactory = cfg.Pods
	if s.podFactory == nil {
		s.podFactory = kube.PodInformers(cfg.Kube)
	}
	nodes := s.factory.Core().V1().Nodes()
	pods := s.podFactory.Core().V1().Pods()
	if err := nodes.Informer().SetTransform(slimNode); err != nil {
		return nil, err
	}
	s.nodeLister = nodes.Lister()
	s.synced = []cache.InformerSynced{nodes.Informer().HasSynced, pods.Informer().HasSynced}
	// Pods wake the loop only when they free capacity; nodes when what
	// scheduling reads of them changes (not on every status heartbeat).
	if _, err := pods.Informer().AddEventHandler(s.usage.handler(s.wakeFreed)); err != nil {
		return nil, err
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.wakeFreed() },
		UpdateFunc: func(old, cur any) {
			if nodeChanged(old, cur) {
				s.wakeFreed()
			}
		},
		DeleteFunc: func(any) { s.wakeFreed() },
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Observe runs the informers only, until ctx ends: ClusterNodes answers,
// no lease is sought and nothing is scheduled. A remote cluster's agent
// (issue 45), which has no database, reports its cluster's nodes so;
// Config.Store may be nil for it.
func (s *Scheduler) Observe(ctx context.Context) error {
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	s.podFactory.Start(ctx.Done())
	if s.cfg.Pods == nil {
		defer s.podFactory.Shutdown()
	}
	<-ctx.Done()
	return nil
}

// wake asks for a cycle; wakes fold together.
func (s *Scheduler) wake() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// wakeSubmitted asks for a cycle because a job started waiting.
func (s *Scheduler) wakeSubmitted() {
	s.submitted.Store(true)
	s.wake()
}

// wakeFreed asks for a cycle because capacity or quota was freed, or a
// node changed: unless no job waits (idle).
func (s *Scheduler) wakeFreed() {
	if !s.idle.Load() {
		s.wake()
	}
}

// Run runs the loop until ctx ends: it competes for the scheduler lease
// and, while it holds it, runs cycles. It returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.store == nil {
		return errors.New("scheduler: Config.Store is required to Run")
	}
	if l := s.cfg.Listener; l != nil {
		for channel, wake := range map[string]func(){store.ChannelSchedule: s.wakeSubmitted, store.ChannelFreed: s.wakeFreed} {
			ch, stop := l.Subscribe(channel)
			context.AfterFunc(ctx, stop)
			go func() {
				for range ch {
					wake()
				}
			}()
		}
		l.OnReconnect(s.wake)
	}
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	s.podFactory.Start(ctx.Done())
	if s.cfg.Pods == nil {
		defer s.podFactory.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("scheduler: informer caches did not sync")
	}
	s.log.Info("scheduler informers synced; competing for the lease", "lease_ttl", s.cfg.LeaseTTL)
	retry := time.NewTicker(s.cfg.LeaseTTL / 3)
	defer retry.Stop()
	for {
		lease, ok, err := s.store.SchedulerLeaseAcquire(ctx, s.cfg.ID, s.cfg.LeaseTTL)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.Warn("acquiring the scheduler lease failed; trying again", "error", err)
		case ok:
			s.lead(ctx, lease)
			if ctx.Err() != nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
		}
	}
}

// lead runs cycles while the lease holds: renewing it every third of its
// TTL, and stopping at once when a renewal fails to confirm it (another
// process may take it when it expires). Every commit is fenced by the
// lease's epoch besides, so a leader that stalled past its lease writes
// nothing.
func (s *Scheduler) lead(ctx context.Context, lease store.SchedulerLease) {
	s.log.Info("scheduler lease acquired; scheduling", "epoch", lease.Epoch)
	s.metrics.leader.Set(1)
	defer func() {
		s.metrics.leader.Set(0)
		s.metrics.resetQueue()
		s.published, s.publishedAt = nil, time.Time{}
		s.idle.Store(false)
		s.ledger = ledger{} // the next leadership reads it again
		s.heldAt = time.Time{}
		s.queue, s.queueAt = nil, time.Time{}
		s.metrics.resetSharing()
		s.metrics.resetHeld()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		renew := time.NewTicker(s.cfg.LeaseTTL / 3)
		defer renew.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew.C:
			}
			l, ok, err := s.store.SchedulerLeaseAcquire(ctx, s.cfg.ID, s.cfg.LeaseTTL)
			if ctx.Err() != nil {
				return
			}
			if err != nil || !ok || l.Epoch != lease.Epoch {
				s.log.Warn("scheduler lease not renewed; stepping down", "error", err)
				cancel()
				return
			}
		}
	}()
	led := make(chan struct{})
	go func() {
		defer close(led)
		if s.cfg.OnLead != nil {
			s.cfg.OnLead(ctx)
		}
	}()
	defer func() {
		cancel()
		<-lost
		<-led
		release, done := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer done()
		if err := s.store.SchedulerLeaseRelease(release, lease); err != nil {
			s.log.Warn("releasing the scheduler lease failed; it expires on its own", "error", err)
		}
	}()

	period := time.NewTimer(0)
	defer period.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.trigger:
		case <-period.C:
		}
		began := time.Now()
		next, err := s.cycle(ctx, lease)
		took := time.Since(began)
		if errors.Is(err, store.ErrLeaseLost) {
			s.log.Warn("scheduler lease lost; stepping down", "epoch", lease.Epoch)
			return
		}
		if err != nil && ctx.Err() == nil {
			s.metrics.cycleErrors.Inc()
			s.log.Warn("scheduling cycle failed; trying again", "error", err)
		}
		wait := s.cfg.Period
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 0))
		}
		period.Reset(wait)
		// Fold the triggers that come meanwhile into one cycle: wait at
		// least MinInterval, and as long as the cycle took, so that under a
		// stream of triggers the loop uses at most about half a core.
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(s.cfg.MinInterval, took)):
		}
	}
}

// cycle reads a snapshot, decides, commits and publishes. It returns when
// the next cycle is due at the latest (a backoff ending), zero for the
// period.
func (s *Scheduler) cycle(ctx context.Context, lease store.SchedulerLease) (time.Time, error) {
	if err := s.rollup(ctx); err != nil {
		return time.Time{}, fmt.Errorf("usage ledger: %w", err)
	}
	if submitted := s.submitted.Swap(false); s.idle.Load() && !submitted && !s.accounting.Load() {
		// Nothing waited last time and no job was submitted since: the
		// period's cycle first asks whether anything waits now, with an
		// index probe, instead of reading every unfinished job.
		waiting, err := s.store.SchedulerWaiting(ctx)
		if err != nil || !waiting {
			return time.Time{}, err
		}
	}
	start := time.Now()
	now := s.cfg.Now()
	v, err := s.snapshot(ctx, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("snapshot: %w", err)
	}
	read := time.Now()
	d := admission.Schedule(v.snap)
	decided := time.Now()
	res, err := s.commit(ctx, lease, v, d)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit: %w", err)
	}
	if err := s.publish(ctx, lease, v, d, now); err != nil {
		return time.Time{}, fmt.Errorf("publish: %w", err)
	}
	s.accounting.Store(s.ledgerHold(v, res.Admitted))
	s.metrics.observeSharing(v)
	s.metrics.observeCycle(start, read, decided, time.Now())
	s.metrics.observeDecision(v, d, res, now)
	s.queue, s.queueAt = queueOf(v, d, now), now
	s.idle.Store(len(d.Waiting) == 0 && s.published != nil && len(s.published) == 0)
	if len(res.Admitted) > 0 || len(res.Preempted) > 0 {
		s.log.Debug("scheduling cycle", "admitted", len(res.Admitted), "preempted", len(res.Preempted),
			"waiting", len(d.Waiting), "took", time.Since(start))
	}
	var next time.Time
	for _, j := range v.snap.Jobs {
		if !j.Admitted && j.NotBefore.After(now) && (next.IsZero() || j.NotBefore.Before(next)) {
			next = j.NotBefore
		}
	}
	return next, nil
}

// commit writes the decision: admissions, preemptions, and the wait
// reasons that changed.
func (s *Scheduler) commit(ctx context.Context, lease store.SchedulerLease, v view, d admission.Decision) (store.SchedulerCommitResult, error) {
	p := store.SchedulerCommitParams{Lease: lease}
	for _, k := range d.Admit {
		p.Admit = append(p.Admit, store.JobKey(k))
	}
	for k, m := range d.GPUTypes {
		if p.GPUTypes == nil {
			p.GPUTypes = map[store.JobKey]string{}
		}
		p.GPUTypes[store.JobKey(k)] = m
	}
	for k, c := range d.Clusters {
		if c == "" {
			continue
		}
		if p.Clusters == nil {
			p.Clusters = map[store.JobKey]string{}
		}
		p.Clusters[store.JobKey(k)] = c
	}
	for _, pr := range d.Preempt {
		msg := pr.Message
		if msg == "" || pr.Kind == admission.PreemptPriority {
			msg = fmt.Sprintf("preempted by job %q (priority %d), which needs the %s it uses", pr.ByName, pr.ByPriority, lacks(pr.Reason))
		}
		p.Preempt = append(p.Preempt, store.PreemptWrite{
			Victim: store.JobKey(pr.Victim), For: pr.By.UID, ForTenant: pr.By.Tenant, Message: msg,
		})
	}
	for _, w := range d.Waiting {
		if len(p.Waits) == maxWaitWrites {
			break // the rest next cycle: they still differ then
		}
		if v.jobs[w.Key].WaitReason != w.Reason || s.blockerMoved(w) {
			p.Waits = append(p.Waits, store.WaitWrite{Key: store.JobKey(w.Key), Reason: w.Reason, Message: w.Message})
		}
	}
	for _, f := range d.DependencyFailed {
		p.DependencyFailed = append(p.DependencyFailed, store.DependencyFailWrite{Key: store.JobKey(f.Key), Cancel: f.Cancel, Message: f.Message})
	}
	for _, k := range d.Admit {
		for _, dep := range s.shapes[store.JobKey(k)].deps {
			p.Dependencies = append(p.Dependencies, store.JobKey{Tenant: k.Tenant, UID: dep.UID})
		}
	}
	if len(p.Admit)+len(p.Preempt)+len(p.Waits)+len(p.DependencyFailed) == 0 {
		return store.SchedulerCommitResult{}, nil
	}
	return s.store.SchedulerCommit(ctx, p)
}

// blockerMoved reports whether a job waiting for a dependency now waits
// for another one than it did at the last publish (its condition's message
// names the one it waits for; the reason alone did not change).
func (s *Scheduler) blockerMoved(w admission.Waiting) bool {
	if w.Reason != job.WaitDependency {
		return false
	}
	prev, ok := s.published[w.Key.Tenant][w.Key.UID]
	return ok && prev.Reason == w.Reason && prev.BlockedBy != w.BlockedBy
}

// maxWaitWrites bounds the wait reasons one commit records (each is a
// status write and an event): a burst of submissions that all wait must
// not make one cycle's transaction long. Jobs earlier in the cluster's
// order are recorded first.
const maxWaitWrites = 1000

func lacks(r job.WaitReason) string {
	if r == job.WaitQuota {
		return "tenant quota"
	}
	return "cluster capacity"
}

// publish rewrites the queue view of the tenants whose waiting jobs moved,
// at most every PublishInterval; the first publish of a leadership covers
// every active tenant, so that views a former leader left behind are
// replaced.
func (s *Scheduler) publish(ctx context.Context, lease store.SchedulerLease, v view, d admission.Decision, now time.Time) error {
	if !s.publishedAt.IsZero() && now.Sub(s.publishedAt) < s.cfg.PublishInterval {
		return nil
	}
	cur := map[string]map[string]job.QueueInfo{}
	for _, w := range d.Waiting {
		if cur[w.Key.Tenant] == nil {
			cur[w.Key.Tenant] = map[string]job.QueueInfo{}
		}
		cur[w.Key.Tenant][w.Key.UID] = w.QueueInfo
	}
	changed := map[string]map[string]job.QueueInfo{}
	for _, t := range v.tenants {
		if s.published == nil || !equalQueues(s.published[t], cur[t]) {
			changed[t] = cur[t]
		}
	}
	for t := range s.published {
		if _, ok := cur[t]; !ok {
			changed[t] = nil
		}
	}
	if err := s.store.QueuePublish(ctx, lease, changed); err != nil {
		return err
	}
	s.published, s.publishedAt = cur, now
	return nil
}

func equalQueues(a, b map[string]job.QueueInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for uid, x := range a {
		y, ok := b[uid]
		if !ok || !equalInfo(x, y) {
			return false
		}
	}
	return true
}

func equalInfo(a, b job.QueueInfo) bool {
	ea, eb := a.EstimatedStart, b.EstimatedStart
	if (ea == nil) != (eb == nil) || (ea != nil && !ea.Equal(*eb)) {
		return false
	}
	return slices.Equal(a.WaitingFor, b.WaitingFor) && a.Reason == b.Reason && a.Message == b.Message && a.TenantPosition == b.TenantPosition &&
		a.ClusterPosition == b.ClusterPosition && a.BlockedBy == b.BlockedBy && a.EstimateBasis == b.EstimateBasis
}
