//go:build integration

package tenantctl

import (
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/pgtest"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// bundle is one test's world: a fresh database, a namespace prefix of its
// own on the shared cluster, and running controllers.
type bundle struct {
	st     *store.Store
	dbURL  string
	admin  kubernetes.Interface
	prefix string
	ctrls  []*Controller
	regs   []*prometheus.Registry

	mu     sync.Mutex
	passes map[string]int // reconcile passes per tenant, all controllers
}

type setupOpts struct {
	controllers int                  // default 1
	client      kubernetes.Interface // default the cluster admin
	options     kube.TenantOptions
}

func setup(t *testing.T, o setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	b := &bundle{admin: tc.Client(), prefix: "tc" + randomID(5) + "-", passes: map[string]int{}}
	b.dbURL = pgtest.NewDatabase(t)
	require.NoError(t, store.Migrate(ctx, b.dbURL, "up"))
	st, err := store.Open(ctx, b.dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b.st = st

	// Registered before the controllers' stop, so it runs after it: nothing
	// re-creates what this deletes.
	t.Cleanup(func() { b.deleteNamespaces(t) })

	if o.controllers == 0 {
		o.controllers = 1
	}
	if o.client == nil {
		o.client = b.admin
	}
	for range o.controllers {
		b.startController(t, o.client, o.options)
	}
	return b
}

// startController runs one more controller (as another worker replica would)
// with its own listener and registry.
func (b *bundle) startController(t *testing.T, client kubernetes.Interface, opts kube.TenantOptions) *Controller {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	listener, err := store.NewListener(b.dbURL, store.ListenerConfig{})
	require.NoError(t, err)
	ldone := make(chan struct{})
	go func() { defer close(ldone); _ = listener.Run(ctx) }()

	reg := prometheus.NewRegistry()
	c, err := New(Config{
		Store:           b.st,
		Client:          client,
		Listener:        listener,
		NamespacePrefix: b.prefix,
		Options:         opts,
		// Long enough that the tests see notifications and informer events
		// at work, not the periodic resync.
		Resync:       time.Hour,
		OffboardPoll: 500 * time.Millisecond,
		Registry:     reg,
		Logger:       slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	c.afterReconcile = func(id string, err error) {
		b.mu.Lock()
		b.passes[id]++
		b.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			t.Logf("reconcile %s: %v", id, err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("controller did not stop within 30s")
		}
		<-ldone
	})
	require.Eventually(t, func() bool { return hasSynced(c) }, time.Minute, 20*time.Millisecond, "informers did not sync")
	b.ctrls = append(b.ctrls, c)
	b.regs = append(b.regs, reg)
	return c
}

func (b *bundle) ns(id string) string { return b.prefix + id }

// createTenant stores an ACTIVE tenant as the API would.
func (b *bundle) createTenant(t *testing.T, tn tenant.Tenant) tenant.Tenant {
	t.Helper()
	tn.Namespace = b.ns(tn.ID)
	out, err := b.st.TenantCreate(context.Background(), tn)
	require.NoError(t, err)
	return out
}

func (b *bundle) passCount(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.passes[id]
}

// reconcileNow makes every controller reconcile tenant id once more and
// waits until they all did.
func (b *bundle) reconcileNow(t *testing.T, id string) {
	t.Helper()
	before := b.passCount(id)
	for _, c := range b.ctrls {
		c.queue.Add(id)
	}
	require.Eventually(t, func() bool { return b.passCount(id) >= before+len(b.ctrls) },
		30*time.Second, 10*time.Millisecond, "tenant %s was not reconciled", id)
}

// writes is the sum of trainyard_tenant_object_writes_total over the
// controllers.
func (b *bundle) writes(t *testing.T) float64 {
	t.Helper()
	var sum float64
	for _, reg := range b.regs {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != "trainyard_tenant_object_writes_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func (b *bundle) deleteNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := b.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("cleanup: list namespaces: %v", err)
		return
	}
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, b.prefix) {
			if err := b.admin.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: delete namespace %s: %v", ns.Name, err)
			}
		}
	}
}

// eventually polls check until it returns nil and fails with its last error
// after timeout.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NoError(c, check()) }, timeout, 25*time.Millisecond)
}

func getNS(t *testing.T, c kubernetes.Interface, name string) (*corev1.Namespace, error) {
	t.Helper()
	return c.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
}

// testJob is a one-worker job of tenant id.
func testJob(id, name string) store.JobCreateParams {
	return store.JobCreateParams{
		Job: job.Job{Tenant: id, Name: name, Spec: job.Spec{Replicas: []job.ReplicaSpec{
			{Type: job.Worker, Count: 1, Image: "tensorflow/tensorflow:2.16.1", Port: job.DefaultPort, RestartPolicy: job.RestartNever},
		}}},
	}
}

// testWriter sends log lines to the test's log, shown when it fails or
// with -v.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func randomID(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	for i := range buf {
		buf[i] = letters[int(buf[i])%len(letters)]
	}
	return string(buf)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// hasSynced reports whether c's informers have listed everything once.
func hasSynced(c *Controller) bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}
