// Package tenant is the tenant domain: who a tenant is, what it may use and
// who may act in it. It does no I/O.
package tenant

import (
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Role is a member's role in a tenant. Each role includes the ones below it.
type Role int

const (
	RoleNone   Role = iota
	RoleViewer      // reads jobs, events, logs, secret names
	RoleEditor      // also creates, cancels and deletes jobs
	RoleAdmin       // also manages secrets
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleEditor:
		return "editor"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole is the inverse of Role.String.
func ParseRole(s string) (Role, bool) {
	for _, r := range []Role{RoleViewer, RoleEditor, RoleAdmin} {
		if r.String() == s {
			return r, true
		}
	}
	return RoleNone, false
}

// State is the lifecycle state of a tenant.
type State string

const (
	Active      State = "ACTIVE"
	Offboarding State = "OFFBOARDING"
	Deleted     State = "DELETED"
)

// DefaultNamespacePrefix is put before a tenant id to name its namespace
// unless the operator chose another prefix.
const DefaultNamespacePrefix = "ty-"

// NamespaceName is the one place a tenant's namespace name is made: the
// prefix and the tenant id. The API stores it in the tenant's record when
// the tenant is created; everything else reads it from there, or asks here.
func NamespaceName(prefix, tenantID string) string { return prefix + tenantID }

// Tenant is a team with its own namespace, quota, members and secrets.
type Tenant struct {
	ID              string            `json:"id"`
	DisplayName     string            `json:"displayName,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Quota           Quota             `json:"quota"`
	Scheduling      Scheduling        `json:"scheduling"`
	Sharing         Sharing           `json:"sharing"`
	Members         []Member          `json:"members,omitempty"`
	PodReaderGroups []string          `json:"podReaderGroups,omitempty"`
	// Clusters are the clusters the tenant's jobs may run in and its
	// namespace exists in; empty: every cluster (AllowedIn).
	Clusters   []string  `json:"clusters,omitempty"`
	Namespace  string    `json:"namespace"`
	State      State     `json:"state"`
	CreateTime time.Time `json:"createTime"`
	UpdateTime time.Time `json:"updateTime"`
}

// AllowedIn reports whether the tenant's jobs may run, and its namespace
// exist, in the named cluster: every cluster when Clusters is empty.
func (t *Tenant) AllowedIn(cluster string) bool {
	return len(t.Clusters) == 0 || slices.Contains(t.Clusters, cluster)
}

// Quota limits what a tenant's admitted jobs use together. Zero values mean
// no limit. CPU and Memory are Kubernetes quantities.
type Quota struct {
	GPU    int32  `json:"gpu,omitempty"`
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	Pods   int32  `json:"pods,omitempty"`
}

// Scheduling is how the scheduler treats the tenant's queue.
type Scheduling struct {
	Preemption PreemptionPolicy `json:"preemption,omitempty"`
	Queueing   QueueingStrategy `json:"queueing,omitempty"`
	// IdleGPUPercent and IdleGPUSeconds: a running job whose GPUs all stay
	// below IdleGPUPercent utilisation for IdleGPUSeconds gets the IdleGPUs
	// condition and event (internal/gpuutil; needs the worker's
	// --prometheus-url). Default to 5 % and 30 minutes.
	IdleGPUPercent float64 `json:"idleGpuThresholdPercent,omitempty"`
	IdleGPUSeconds int64   `json:"idleGpuSeconds,omitempty"`
	// IdleGPUStopSeconds, when set, cancels a job whose GPUs have been
	// idle this long (at least IdleGPUSeconds): its pods are stopped
	// gracefully and it ends CANCELLED. 0 (the default): never.
	IdleGPUStopSeconds int64 `json:"idleGpuStopSeconds,omitempty"`
}

// Idle-GPU defaults (Scheduling.WithDefaults).
const (
	DefaultIdleGPUPercent = 5
	DefaultIdleGPUSeconds = 30 * 60
)

// PreemptionPolicy says whether a pending job may preempt the tenant's own
// running jobs.
type PreemptionPolicy string

const (
	// PreemptNever: running jobs are never preempted (the default).
	PreemptNever PreemptionPolicy = "NEVER"
	// PreemptLowerPriority: a pending job that does not fit may preempt
	// the tenant's running jobs of lower priority.
	PreemptLowerPriority PreemptionPolicy = "LOWER_PRIORITY"
)

// QueueingStrategy says whether a job may start ahead of an earlier one
// that does not fit.
type QueueingStrategy string

const (
	// StrictFIFO: jobs start in queue order (priority, then submission);
	// one that does not fit holds back every job behind it (the default).
	StrictFIFO QueueingStrategy = "STRICT_FIFO"
	// BestEffortFIFO: a job that fits may start ahead of an earlier one
	// that does not, until the earlier one has waited the scheduler's
	// starvation age; then it holds the line.
	BestEffortFIFO QueueingStrategy = "BEST_EFFORT_FIFO"
)

// WithDefaults fills unset policies.
func (s Scheduling) WithDefaults() Scheduling {
	if s.Preemption == "" {
		s.Preemption = PreemptNever
	}
	if s.Queueing == "" {
		s.Queueing = StrictFIFO
	}
	if s.IdleGPUPercent == 0 {
		s.IdleGPUPercent = DefaultIdleGPUPercent
	}
	if s.IdleGPUSeconds == 0 {
		s.IdleGPUSeconds = DefaultIdleGPUSeconds
	}
	return s
}

// Member gives Role to an OIDC subject or, when Group is set, to every member
// of an OIDC group. Exactly one of Subject and Group is set.
type Member struct {
	Subject string `json:"subject,omitempty"`
	Group   string `json:"group,omitempty"`
	Role    Role   `json:"role"`
}

// RoleOf returns the highest role the members list gives a caller with this
// subject and these groups.
func RoleOf(members []Member, subject string, groups []string) Role {
	best := RoleNone
	for _, m := range members {
		match := m.Subject != "" && m.Subject == subject
		if !match && m.Group != "" {
			for _, g := range groups {
				if g == m.Group {
					match = true
					break
				}
			}
		}
		if match && m.Role > best {
			best = m.Role
		}
	}
	return best
}

// Secret is a tenant secret's metadata: its id and key names. Values live
// only in the Kubernetes Secret; they are never part of this type.
type Secret struct {
	Tenant     string    `json:"tenant"`
	Name       string    `json:"name"`
	Keys       []string  `json:"keys"`
	CreateTime time.Time `json:"createTime"`
	UpdateTime time.Time `json:"updateTime"`
}

// SecretCopy is a tenant secret as a cluster other than the API server's
// receives it, to keep a copy in the tenant's namespace there (issue 45).
// Version changes with every put of the secret (Secret.UpdateTime); Data
// is nil when Unchanged: the receiver already holds that version.
type SecretCopy struct {
	Name      string
	Version   string
	Data      map[string][]byte
	Unchanged bool
}

// CopyVersion is the version of a secret's values: its last put.
func (s Secret) CopyVersion() string {
	return s.UpdateTime.UTC().Format(time.RFC3339Nano)
}

// String never shows values: a copy that reaches a log shows its name,
// version and key names.
func (c SecretCopy) String() string {
	keys := make([]string, 0, len(c.Data))
	for k := range c.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprintf("secret %s version %s keys %v", c.Name, c.Version, keys)
}

// GoString: see String.
func (c SecretCopy) GoString() string { return c.String() }

// LogValue: see String (slog's JSON handler would otherwise marshal Data).
func (c SecretCopy) LogValue() slog.Value { return slog.StringValue(c.String()) }
