package tenantctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/trainyard/trainyard/internal/controller"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Controller keeps every tenant's namespace in the shape RenderTenant gives
// and offboards tenants. Create it with New and start it with Run.
type Controller struct {
	cfg     Config
	log     *slog.Logger
	client  kubernetes.Interface
	store   Store
	metrics *metrics
	loop    *controller.Loop[string]
	queue   workqueue.TypedRateLimitingInterface[string] // the loop's

	factory    informers.SharedInformerFactory
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	quotas     corelisters.ResourceQuotaLister
	limits     corelisters.LimitRangeLister
	roles      rbaclisters.RoleLister
	bindings   rbaclisters.RoleBindingLister
	policies   networkinglisters.NetworkPolicyLister
	services   corelisters.ServiceLister
	synced     []cache.InformerSynced

	// offboarding holds the ids of tenants being offboarded, so that a
	// notification about one of their jobs wakes them.
	offboarding sync.Map

	mu      sync.Mutex
	running bool

	// afterReconcile, when set (tests), is called after every pass.
	afterReconcile func(id string, err error)
}

// New returns a Controller. It starts nothing: call Run.
func New(cfg Config) (*Controller, error) {
	if l, ok := cfg.Listener.(*store.Listener); ok && l == nil {
		cfg.Listener = nil // a nil *store.Listener in the interface
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "tenantctl"),
		client:  cfg.Client,
		store:   cfg.Store,
		metrics: newMetrics(cfg.Registry),
	}
	c.loop = controller.New(controller.Config[string]{
		Name:        "tenants",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, cfg.MaxRetryDelay),
		Sync:        c.sync,
		Metrics:     controller.QueueMetrics(cfg.Registry),
		Duration:    c.metrics.duration,
		OnError:     c.syncFailed,
		AfterSync: func(id string, err error) {
			if c.afterReconcile != nil {
				c.afterReconcile(id, err)
			}
		},
	})
	c.queue = c.loop.Queue()
	// Only Trainyard's objects: the informers never hold the rest of the
	// cluster, and the worker needs no right to read it.
	c.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = kube.ManagedSelector().String()
		}))
	core, rbac := c.factory.Core().V1(), c.factory.Rbac().V1()
	nsInf := core.Namespaces()
	saInf := core.ServiceAccounts()
	rqInf := core.ResourceQuotas()
	lrInf := core.LimitRanges()
	roleInf := rbac.Roles()
	rbInf := rbac.RoleBindings()
	npInf := c.factory.Networking().V1().NetworkPolicies()
	svcInf := core.Services()
	c.namespaces, c.accounts, c.quotas, c.limits = nsInf.Lister(), saInf.Lister(), rqInf.Lister(), lrInf.Lister()
	c.roles, c.bindings, c.policies, c.services = roleInf.Lister(), rbInf.Lister(), npInf.Lister(), svcInf.Lister()
	for _, inf := range []cache.SharedIndexInformer{nsInf.Informer(), saInf.Informer(), rqInf.Informer(),
		lrInf.Informer(), roleInf.Informer(), rbInf.Informer(), npInf.Informer(), svcInf.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueOwner,
			UpdateFunc: func(old, obj any) {
				if !quotaUsageOnly(old, obj) {
					c.enqueueOwner(obj)
				}
			},
			DeleteFunc: c.enqueueOwner,
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// Run reconciles until ctx ends, then returns nil. It returns an error when
// the informers cannot sync within Config.CacheSyncTimeout (typically a
// missing list or watch permission) or when it is already running.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("tenantctl: Run called twice")
	}
	c.running = true
	c.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		c.loop.ShutDown()
		c.factory.Shutdown()
		wg.Wait()
	}()

	c.factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, c.cfg.CacheSyncTimeout)
	ok := cache.WaitForCacheSync(syncCtx.Done(), c.synced...)
	syncCancel()
	if !ok {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tenantctl: informers did not sync within %s: can this identity list and watch namespaces, serviceaccounts, resourcequotas, limitranges, roles, rolebindings and networkpolicies cluster-wide?", c.cfg.CacheSyncTimeout)
	}

	if l := c.cfg.Listener; l != nil {
		tenants, stopTenants := l.Subscribe(store.ChannelTenants)
		jobs, stopJobs := l.Subscribe(store.ChannelJobs)
		defer stopTenants()
		defer stopJobs()
		// Notifications sent while the listener was disconnected are lost.
		l.OnReconnect(func() { c.resync(ctx) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.listen(ctx, tenants, jobs)
		}()
	}

	wg.Go(func() { c.loop.Run(ctx, c.cfg.Workers) })
	c.log.Info("tenant reconciler started", "namespacePrefix", c.cfg.NamespacePrefix,
		"psaEnforce", c.cfg.Options.PSAEnforce, "psaWarn", c.cfg.Options.PSAWarn, "workers", c.cfg.Workers)
	// The first resync right away, then every Resync, jittered so that
	// replicas started together do not list in step.
	wait.JitterUntilWithContext(ctx, c.resync, c.cfg.Resync, 0.1, false)
	return nil
}

// listen turns notifications into queue items.
func (c *Controller) listen(ctx context.Context, tenants, jobs <-chan string) {
	for {
		select {
		case <-ctx.Done():
			return
		case id, ok := <-tenants:
			if !ok {
				return
			}
			c.queue.Add(id)
		case key, ok := <-jobs:
			if !ok {
				return
			}
			// "<tenant>/<uid>": only offboarding tenants care about jobs.
			if id, _, found := strings.Cut(key, "/"); found {
				if _, off := c.offboarding.Load(id); off {
					c.queue.Add(id)
				}
			}
		}
	}
}

// resync queues every tenant that may need work: all but DELETED ones, and
// DELETED ones whose namespace still exists.
func (c *Controller) resync(ctx context.Context) {
	ts, err := c.store.TenantListAll(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.metrics.errors.WithLabelValues(reasonStore).Inc()
			c.log.Warn("listing tenants for resync failed", "err", err)
		}
		return
	}
	for _, t := range ts {
		c.metrics.states.set(t.ID, t.State)
		if t.State == tenant.Deleted {
			if _, err := c.namespaces.Get(c.namespaceOf(t.ID)); err != nil {
				continue
			}
		}
		c.queue.Add(t.ID)
	}
}

// quotaUsageOnly reports whether an update changed nothing of a
// ResourceQuota that a reconcile keeps (its spec and labels) or acts on
// (its deletion, its owners): its status, which the API server's quota
// admission and the controller manager's recount rewrite with every pod
// created or ended in the namespace. Those updates, several per job, need
// no pass (each pass reads the tenant from Postgres).
func quotaUsageOnly(old, obj any) bool {
	o, ok1 := old.(*corev1.ResourceQuota)
	n, ok2 := obj.(*corev1.ResourceQuota)
	if !ok1 || !ok2 {
		return false
	}
	return semantic.DeepEqual(o.Spec, n.Spec) &&
		maps.Equal(o.Labels, n.Labels) &&
		o.DeletionTimestamp.Equal(n.DeletionTimestamp) &&
		semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
}

// enqueueOwner queues the tenant an informer's object belongs to.
func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	id := m.GetLabels()[kube.LabelTenant]
	if id == "" {
		return
	}
	// Only the tenant's own namespace speaks for it: an object elsewhere
	// claiming the tenant's label does not make this controller act there.
	ns := m.GetNamespace()
	if _, isNS := obj.(*corev1.Namespace); isNS {
		ns = m.GetName()
	}
	if ns != c.namespaceOf(id) {
		return
	}
	c.queue.Add(id)
}

func (c *Controller) namespaceOf(tenantID string) string {
	return tenant.NamespaceName(c.cfg.NamespacePrefix, tenantID)
}

// sync is the loop's sync (internal/controller): one reconcile pass of one
// tenant.
func (c *Controller) sync(ctx context.Context, id string) (controller.Result, error) {
	res, err := c.reconcile(ctx, id)
	return controller.Result{RequeueAfter: res.after}, err
}

// syncFailed counts a failed pass by reason and logs it; the loop retries
// the tenant with backoff.
func (c *Controller) syncFailed(id string, err error, retries int) {
	c.metrics.errors.WithLabelValues(errorReason(err)).Inc()
	c.log.Warn("tenant reconcile failed; retrying", "tenant", id, "err", err, "retries", retries)
}

// result says when to look at a tenant again without an error: while it
// waits for jobs to stop or for a namespace to go.
type result struct{ after time.Duration }

// reasonError tags an error with its metric reason.
type reasonError struct {
	reason string
	err    error
}

func (e reasonError) Error() string { return e.err.Error() }
func (e reasonError) Unwrap() error { return e.err }

func withReason(reason string, err error) error {
	if err == nil {
		return nil
	}
	return reasonError{reason: reason, err: err}
}

func errorReason(err error) string {
	var re reasonError
	if errors.As(err, &re) {
		return re.reason
	}
	return reasonKube
}
