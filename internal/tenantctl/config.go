package tenantctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
)

// Store is the part of *store.Store the reconciler uses.
type Store interface {
	TenantListAll(ctx context.Context) ([]tenant.Tenant, error)
	TenantGet(ctx context.Context, id string) (tenant.Tenant, error)
	TenantUpdate(ctx context.Context, id string, fn func(*tenant.Tenant) error) (tenant.Tenant, error)
	JobListActiveByTenant(ctx context.Context, tenantID string) ([]store.JobKey, error)
	JobLoad(ctx context.Context, tenantID, uid string) (store.WorkerJob, error)
	JobCancel(ctx context.Context, tenantID, name string) (job.Job, error)
	SecretList(ctx context.Context, tenantID string) ([]tenant.Secret, error)
	SecretDelete(ctx context.Context, tenantID, name string) error
}

// SecretSource gives a tenant's secrets for the copies a cluster other
// than the API server's keeps (kube.RenderSecretCopy): *agentclient.Client
// in a remote agent, StoreSecrets in a worker on Postgres. have is the
// version of each copy held; a secret still at that version comes back
// Unchanged, without values. store.ErrNotFound: the tenant has no secrets
// for this cluster (not ACTIVE, or not allowed here).
type SecretSource interface {
	TenantSecrets(ctx context.Context, tenantID string, have map[string]string) ([]tenant.SecretCopy, error)
}

// Notifications wakes the reconciler; *store.Listener implements it.
type Notifications interface {
	Subscribe(channel string) (<-chan string, func())
	OnReconnect(fn func())
}

// Config configures a Controller. Zero fields take the defaults WithDefaults
// names.
type Config struct {
	// Store is Postgres. Required.
	Store Store
	// Client is the Kubernetes client; its identity needs the rights
	// deploy/cluster/rbac-worker.yaml grants. Required.
	Client kubernetes.Interface
	// Listener wakes the reconciler when a tenant changes (ChannelTenants)
	// and when an offboarding tenant's job changes (ChannelJobs). Optional:
	// without it changes are seen at the next Resync.
	Listener Notifications

	// Cluster is the cluster Client reaches (the worker's --cluster): a
	// tenant has a namespace here only while it is allowed here
	// (tenant.Tenant.AllowedIn). Defaults to cluster.Default.
	Cluster string

	// NamespacePrefix names tenant namespaces: <prefix><tenant id>. It must
	// be the API server's --namespace-prefix. Defaults to
	// Options.NamespacePrefix, else tenant.DefaultNamespacePrefix.
	NamespacePrefix string
	// Options shape the objects of every tenant namespace (Pod Security
	// levels, the job ServiceAccount's name, LimitRange defaults, the
	// NetworkPolicy's egress exceptions, the API server's ServiceAccount).
	// Options.NamespacePrefix is replaced by NamespacePrefix.
	Options kube.TenantOptions

	// Remote: this reconciler is a remote cluster's agent's (issue 45),
	// whose store reads tenants through the control plane and writes
	// nothing. Offboarding is then the control plane's workers' (cancel
	// the jobs, delete their namespace, mark the tenant DELETED); here an
	// OFFBOARDING tenant is left as it is, and its namespace is deleted
	// once the tenant is DELETED (as for every deleted tenant).
	Remote bool

	// Secrets, when set, gives the values of the tenant Secrets this
	// cluster keeps copies of: the API server writes them in another
	// cluster. Nil: this is the API server's cluster (or its Secrets are
	// not copied here), and the reconciler writes no Secret.
	Secrets SecretSource

	// Workers is the number of tenants reconciled at once. Defaults to 4.
	Workers int
	// Resync re-reads every tenant from Postgres this often, a safety net
	// under notifications and informer events. Defaults to 1m.
	Resync time.Duration
	// OffboardPoll is how often an offboarding tenant is looked at again
	// while it waits for its jobs to stop or its namespace to go, besides
	// the wake-ups from job notifications and namespace events. Defaults
	// to 2s.
	OffboardPoll time.Duration
	// MaxRetryDelay caps the exponential backoff after a failed reconcile
	// (which starts at 100ms). Defaults to 30s.
	MaxRetryDelay time.Duration
	// CacheSyncTimeout bounds the wait for the informers' first list; a
	// missing list/watch permission shows as this timeout. Defaults to 2m.
	CacheSyncTimeout time.Duration

	// Registry receives the metrics. Defaults to a private registry.
	Registry prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultWorkers          = 4
	DefaultResync           = time.Minute
	DefaultOffboardPoll     = 2 * time.Second
	DefaultMaxRetryDelay    = 30 * time.Second
	DefaultCacheSyncTimeout = 2 * time.Minute
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Cluster == "" {
		c.Cluster = cluster.Default
	}
	if c.NamespacePrefix == "" {
		c.NamespacePrefix = c.Options.NamespacePrefix
	}
	if c.NamespacePrefix == "" {
		c.NamespacePrefix = tenant.DefaultNamespacePrefix
	}
	c.Options.NamespacePrefix = c.NamespacePrefix
	c.Options = c.Options.WithDefaults()
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Resync <= 0 {
		c.Resync = DefaultResync
	}
	if c.OffboardPoll <= 0 {
		c.OffboardPoll = DefaultOffboardPoll
	}
	if c.MaxRetryDelay <= 0 {
		c.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if c.CacheSyncTimeout <= 0 {
		c.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("tenantctl: Store is required")
	case c.Client == nil:
		return errors.New("tenantctl: Client is required")
	}
	for _, level := range []string{c.Options.PSAEnforce, c.Options.PSAWarn, c.Options.PSAAudit} {
		switch level {
		case "privileged", "baseline", "restricted":
		default:
			return errors.New("tenantctl: Pod Security levels must be privileged, baseline or restricted, not " + level)
		}
	}
	if err := c.Options.Validate(); err != nil {
		return fmt.Errorf("tenantctl: %w", err)
	}
	return nil
}
