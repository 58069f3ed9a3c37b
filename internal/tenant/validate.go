package tenant

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
)

// Limits enforced by Validate, ValidateTenantID, ValidateSecretID and
// ValidateSecretData.
const (
	// MaxTenantIDLength leaves room for the namespace prefix: the namespace
	// <prefix><tenant> must stay a DNS-1123 label of at most 63 characters.
	MaxTenantIDLength    = 40
	MaxDisplayNameLength = 200 // characters
	MaxLabels            = 32
	MaxMembers           = 256
	MaxPrincipalLength   = 256 // an OIDC subject or group name
	MaxPodReaderGroups   = 32
	MaxClusters          = 64
	MaxSecretIDLength    = validation.DNS1123LabelMaxLength
	MaxSecretKeys        = 64
	// MaxSecretBytes bounds keys and values together; Kubernetes refuses
	// Secrets over 1 MiB, and the namespace holds more than one.
	MaxSecretBytes = 512 << 10
)

// FieldViolation is the job package's: one problem, at a path in the API's
// JSON names ("quota.gpu", "members[2].group"), so the API turns both into
// google.rpc.BadRequest the same way.
type FieldViolation = job.FieldViolation

// ValidateTenantID checks a tenant id: a DNS-1123 label of at most
// MaxTenantIDLength characters.
func ValidateTenantID(id string) error {
	return dnsLabel("tenant id", id, MaxTenantIDLength)
}

// ValidateSecretID checks a secret id: a DNS-1123 label, which is also the
// name of the Kubernetes Secret.
func ValidateSecretID(id string) error {
	if strings.HasPrefix(id, ReservedSecretPrefix) {
		return fmt.Errorf("secret id %q: ids starting with %q are reserved for webhook signing secrets", id, ReservedSecretPrefix)
	}
	return dnsLabel("secret id", id, MaxSecretIDLength)
}

// ReservedSecretPrefix starts the Kubernetes Secrets that hold webhook
// signing secrets (webhook.SecretPrefix), which a tenant secret must not
// overwrite.
const ReservedSecretPrefix = "trainyard-webhook-"

func dnsLabel(what, id string, maxLen int) error {
	if id == "" {
		return fmt.Errorf("%s is required", what)
	}
	if len(id) > maxLen {
		return fmt.Errorf("%s %q is %d characters; at most %d are allowed", what, id, len(id), maxLen)
	}
	if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		return fmt.Errorf("%s %q: %s", what, id, strings.Join(msgs, "; "))
	}
	return nil
}

// Validate checks what a caller may set on a tenant (display name, labels,
// quota, members, pod reader groups) and returns every problem, one
// violation each; nil when valid. The id is checked by ValidateTenantID;
// output-only fields are not looked at.
func Validate(t *Tenant) []FieldViolation {
	var v violations
	if n := utf8.RuneCountInString(t.DisplayName); n > MaxDisplayNameLength {
		v.Add("displayName", "is %d characters; at most %d are allowed", n, MaxDisplayNameLength)
	}
	v.Labels("labels", t.Labels, MaxLabels, nil)
	v.quota(&t.Quota)
	v.scheduling(&t.Scheduling)
	v.sharing(&t.Sharing)
	v.members(t.Members)
	v.podReaderGroups(t.PodReaderGroups)
	v.clusters(t.Clusters, nil)
	return v.Violations
}

// ValidateClusters checks a tenant's allowed clusters against the
// registered ones: every name in added (those the write adds) must be
// registered. Names already allowed before stay valid when their cluster
// is deleted (they then allow nothing), so that a deleted cluster does not
// block every later update of the tenant.
func ValidateClusters(clusters []string, added func(string) bool, registered func(string) bool) []FieldViolation {
	var v violations
	v.clusters(clusters, func(name string) bool { return !added(name) || registered(name) })
	return v.Violations
}

// clusters checks the allowed clusters' names and, with known, that each
// is known.
func (v *violations) clusters(names []string, known func(string) bool) {
	if len(names) > MaxClusters {
		v.Add("clusters", "has %d clusters; at most %d are allowed", len(names), MaxClusters)
	}
	seen := map[string]int{}
	for i, name := range names {
		p := fmt.Sprintf("clusters[%d]", i)
		if err := cluster.ValidateName(name); err != nil {
			v.Add(p, "%v", err)
			continue
		}
		if j, dup := seen[name]; dup {
			v.Add(p, "%q is already given in clusters[%d]", name, j)
			continue
		}
		seen[name] = i
		if known != nil && !known(name) {
			v.Add(p, "cluster %q is not registered (tyctl clusters list)", name)
		}
	}
}

// ValidateSecretData checks the values of a secret put: at least one key,
// at most MaxSecretKeys, each a valid Kubernetes Secret key, and at most
// MaxSecretBytes of keys and values together. Violations are reported at
// "data" with the key quoted; values are never quoted.
func ValidateSecretData(data map[string]string) []FieldViolation {
	var v violations
	switch {
	case len(data) == 0:
		v.Add("data", "at least one key is required")
	case len(data) > MaxSecretKeys:
		v.Add("data", "has %d keys; at most %d are allowed", len(data), MaxSecretKeys)
	}
	size := 0
	for _, k := range sortedKeys(data) {
		size += len(k) + len(data[k])
		if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
			v.Add("data", "key %q: %s", k, strings.Join(msgs, "; "))
		}
	}
	if size > MaxSecretBytes {
		v.Add("data", "keys and values are %d bytes in total; at most %d are allowed", size, MaxSecretBytes)
	}
	return v.Violations
}

// scheduling checks the idle-GPU settings (the policies are enums the API maps).
func (v *violations) scheduling(s *Scheduling) {
	if p := s.IdleGPUPercent; math.IsNaN(p) || p < 0 || p > 100 {
		v.Add("scheduling.idleGpuThresholdPercent", "must be between 0 and 100 (0: the default, %d), not %v", DefaultIdleGPUPercent, p)
	}
	if d := s.IdleGPUSeconds; d < 0 || d > 30*24*3600 {
		v.Add("scheduling.idleGpuSeconds", "must be between 0 and 2592000 (30 days; 0: the default, %d), not %d", DefaultIdleGPUSeconds, d)
	}
	if d := s.IdleGPUStopSeconds; d < 0 || d > 90*24*3600 || (d > 0 && d < s.WithDefaults().IdleGPUSeconds) {
		v.Add("scheduling.idleGpuStopSeconds", "must be 0 (never stop) or between the idle time (idleGpuSeconds, %d) and 7776000 (90 days), not %d",
			s.WithDefaults().IdleGPUSeconds, d)
	}
}

// violations is job.Violations with the tenant's own checks.
type violations struct{ job.Violations }

func (v *violations) quota(q *Quota) {
	if q.GPU < 0 {
		v.Add("quota.gpu", "%d is negative (0 means no limit)", q.GPU)
	}
	if q.Pods < 0 {
		v.Add("quota.pods", "%d is negative (0 means no limit)", q.Pods)
	}
	// Admission compares in millicores and bytes (int64): the quota must fit.
	v.quantity("quota.cpu", q.CPU, resource.Milli)
	v.quantity("quota.memory", q.Memory, 0)
}

func (v *violations) quantity(p, s string, scale resource.Scale) {
	if s == "" {
		return
	}
	q, err := resource.ParseQuantity(s)
	switch {
	case err != nil:
		v.Add(p, "%q is not a Kubernetes quantity such as 64, 500m, 256Gi", s)
	case q.Sign() < 0:
		v.Add(p, "%s is negative (0 or empty means no limit)", s)
	case q.Cmp(*resource.NewScaledQuantity(math.MaxInt64, scale)) > 0:
		v.Add(p, "%s is too large", s)
	}
}

func (v *violations) members(ms []Member) {
	if len(ms) > MaxMembers {
		v.Add("members", "has %d members; at most %d are allowed", len(ms), MaxMembers)
	}
	seen := map[Member]int{}
	for i, m := range ms {
		p := fmt.Sprintf("members[%d]", i)
		switch {
		case m.Subject == "" && m.Group == "":
			v.Add(p, "set subject or group")
		case m.Subject != "" && m.Group != "":
			v.Add(p, "set subject or group, not both")
		default:
			v.principal(p+".subject", m.Subject)
			v.principal(p+".group", m.Group)
			key := Member{Subject: m.Subject, Group: m.Group}
			if j, dup := seen[key]; dup {
				v.Add(p, "the same subject or group is already given in members[%d]", j)
			} else {
				seen[key] = i
			}
		}
		if m.Role < RoleViewer || m.Role > RoleAdmin {
			v.Add(p+".role", "is required: viewer, editor or admin")
		}
	}
}

// principal checks an OIDC subject or group name, if set.
func (v *violations) principal(p, s string) {
	switch {
	case s == "":
	case len(s) > MaxPrincipalLength:
		v.Add(p, "is %d bytes; at most %d are allowed", len(s), MaxPrincipalLength)
	case strings.TrimSpace(s) != s:
		v.Add(p, "%q has leading or trailing whitespace", s)
	}
}

func (v *violations) podReaderGroups(gs []string) {
	if len(gs) > MaxPodReaderGroups {
		v.Add("podReaderGroups", "has %d groups; at most %d are allowed", len(gs), MaxPodReaderGroups)
	}
	seen := map[string]int{}
	for i, g := range gs {
		p := fmt.Sprintf("podReaderGroups[%d]", i)
		if g == "" {
			v.Add(p, "is empty")
			continue
		}
		v.principal(p, g)
		if strings.HasPrefix(g, "system:") {
			// Kubernetes' own groups: system:authenticated would let every
			// identity of the cluster read the tenant's pods and logs,
			// system:masters and the like are not for tenants to name.
			v.Add(p, "%q is a Kubernetes system group; system:* groups are not allowed", g)
		}
		if j, dup := seen[g]; dup {
			v.Add(p, "%q is already given in podReaderGroups[%d]", g, j)
		} else {
			seen[g] = i
		}
	}
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
