package api

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

var roleFromPB = map[pb.Role]tenant.Role{
	pb.Role_ROLE_VIEWER: tenant.RoleViewer,
	pb.Role_ROLE_EDITOR: tenant.RoleEditor,
	pb.Role_ROLE_ADMIN:  tenant.RoleAdmin,
}

var tenantStateToPB = map[tenant.State]pb.TenantState{
	tenant.Active:      pb.TenantState_TENANT_STATE_ACTIVE,
	tenant.Offboarding: pb.TenantState_TENANT_STATE_OFFBOARDING,
	tenant.Deleted:     pb.TenantState_TENANT_STATE_DELETED,
}

// quotaOfVector writes amounts (a tenant's usage) in a Quota's units:
// GPUs and pods as counts, CPU and memory as Kubernetes quantities.
func quotaOfVector(v job.Vector) *pb.Quota {
	return &pb.Quota{
		Gpu: int32(v[job.GPU]), Pods: int32(v[job.Pods]),
		Cpu: job.CPU.Format(v[job.CPU]), Memory: job.Memory.Format(v[job.Memory]),
	}
}

func tenantToPB(t tenant.Tenant) *pb.Tenant {
	out := &pb.Tenant{
		Name:            tenantName(t.ID),
		DisplayName:     t.DisplayName,
		Labels:          t.Labels,
		PodReaderGroups: t.PodReaderGroups,
		Clusters:        t.Clusters,
		Namespace:       t.Namespace,
		State:           tenantStateToPB[t.State],
		CreateTime:      ts(t.CreateTime),
		UpdateTime:      ts(t.UpdateTime),
	}
	if q := t.Quota; q != (tenant.Quota{}) {
		out.Quota = &pb.Quota{Gpu: q.GPU, Cpu: q.CPU, Memory: q.Memory, Pods: q.Pods}
	}
	sc := t.Scheduling.WithDefaults()
	out.Scheduling = &pb.Scheduling{
		PreemptionPolicy:        invert(preemptionFromPB)[sc.Preemption],
		QueueingStrategy:        invert(queueingFromPB)[sc.Queueing],
		IdleGpuThresholdPercent: sc.IdleGPUPercent,
		IdleGpuSeconds:          sc.IdleGPUSeconds,
		IdleGpuStopSeconds:      sc.IdleGPUStopSeconds,
	}
	out.Sharing = sharingToPB(t.Sharing)
	roleToPB := invert(roleFromPB)
	for _, m := range t.Members {
		pm := &pb.Member{Role: roleToPB[m.Role]}
		if m.Group != "" {
			pm.Principal = &pb.Member_Group{Group: m.Group}
		} else {
			pm.Principal = &pb.Member_Subject{Subject: m.Subject}
		}
		out.Members = append(out.Members, pm)
	}
	return out
}

// tenantFieldsFromPB copies the user-settable fields named in fields (proto
// names; quota.gpu and the like set one field of the quota and keep the rest).
func tenantFieldsFromPB(in *pb.Tenant, t *tenant.Tenant, fields map[string]bool) {
	if fields["display_name"] {
		t.DisplayName = in.GetDisplayName()
	}
	if fields["labels"] {
		t.Labels = in.GetLabels()
	}
	q := in.GetQuota()
	if fields["quota"] {
		t.Quota = tenant.Quota{GPU: q.GetGpu(), CPU: q.GetCpu(), Memory: q.GetMemory(), Pods: q.GetPods()}
	}
	if fields["quota.gpu"] {
		t.Quota.GPU = q.GetGpu()
	}
	if fields["quota.cpu"] {
		t.Quota.CPU = q.GetCpu()
	}
	if fields["quota.memory"] {
		t.Quota.Memory = q.GetMemory()
	}
	if fields["quota.pods"] {
		t.Quota.Pods = q.GetPods()
	}
	sc := in.GetScheduling()
	if fields["scheduling"] {
		t.Scheduling = tenant.Scheduling{}
	}
	if fields["scheduling"] || fields["scheduling.preemption_policy"] {
		t.Scheduling.Preemption = preemptionFromPB[sc.GetPreemptionPolicy()]
	}
	if fields["scheduling"] || fields["scheduling.queueing_strategy"] {
		t.Scheduling.Queueing = queueingFromPB[sc.GetQueueingStrategy()]
	}
	if fields["scheduling"] || fields["scheduling.idle_gpu_threshold_percent"] {
		t.Scheduling.IdleGPUPercent = sc.GetIdleGpuThresholdPercent()
	}
	if fields["scheduling"] || fields["scheduling.idle_gpu_seconds"] {
		t.Scheduling.IdleGPUSeconds = sc.GetIdleGpuSeconds()
	}
	if fields["scheduling"] || fields["scheduling.idle_gpu_stop_seconds"] {
		t.Scheduling.IdleGPUStopSeconds = sc.GetIdleGpuStopSeconds()
	}
	sharingFieldsFromPB(in.GetSharing(), &t.Sharing, fields)
	if fields["members"] {
		t.Members = nil
		for _, m := range in.GetMembers() {
			t.Members = append(t.Members, tenant.Member{Subject: m.GetSubject(), Group: m.GetGroup(), Role: roleFromPB[m.GetRole()]})
		}
	}
	if fields["pod_reader_groups"] {
		t.PodReaderGroups = in.GetPodReaderGroups()
	}
	if fields["clusters"] {
		t.Clusters = in.GetClusters()
	}
}

var updatableTenantFields = []string{"display_name", "labels", "quota", "members", "pod_reader_groups", "scheduling", "sharing", "clusters"}

// preemptionFromPB and queueingFromPB map the scheduling enums; UNSPECIFIED
// is the default (tenant.Scheduling.WithDefaults).
var (
	preemptionFromPB = map[pb.PreemptionPolicy]tenant.PreemptionPolicy{
		pb.PreemptionPolicy_PREEMPTION_POLICY_UNSPECIFIED:    "",
		pb.PreemptionPolicy_PREEMPTION_POLICY_NEVER:          tenant.PreemptNever,
		pb.PreemptionPolicy_PREEMPTION_POLICY_LOWER_PRIORITY: tenant.PreemptLowerPriority,
	}
	queueingFromPB = map[pb.QueueingStrategy]tenant.QueueingStrategy{
		pb.QueueingStrategy_QUEUEING_STRATEGY_UNSPECIFIED:      "",
		pb.QueueingStrategy_QUEUEING_STRATEGY_STRICT_FIFO:      tenant.StrictFIFO,
		pb.QueueingStrategy_QUEUEING_STRATEGY_BEST_EFFORT_FIFO: tenant.BestEffortFIFO,
	}
)

// schedulingFields, like quotaFields, may be updated one by one.
var schedulingFields = []string{"scheduling.preemption_policy", "scheduling.queueing_strategy",
	"scheduling.idle_gpu_threshold_percent", "scheduling.idle_gpu_seconds", "scheduling.idle_gpu_stop_seconds"}

// quotaFields may be updated one by one (quota.gpu, ...): the REST gateway
// builds the mask of a PATCH without updateMask from the body, and descends
// into messages, so {"quota":{"gpu":8}} arrives as quota.gpu.
var quotaFields = []string{"quota.gpu", "quota.cpu", "quota.memory", "quota.pods"}

// outputOnlyTenantFields are ignored in an update mask (AIP-203): a client
// that PATCHes back the tenant it read must not fail on them.
// (usage and its sub-fields, usage.gpu and the like, too).
var outputOnlyTenantFields = []string{"name", "namespace", "state", "create_time", "update_time"}

func allTenantFields() map[string]bool {
	m := map[string]bool{}
	for _, f := range updatableTenantFields {
		m[f] = true
	}
	return m
}

// populatedTenantFields is the implied mask of an update without one
// (AIP-134): the fields the request sets, so nothing is cleared by omission.
func populatedTenantFields(in *pb.Tenant) map[string]bool {
	m := map[string]bool{}
	if in.GetDisplayName() != "" {
		m["display_name"] = true
	}
	if len(in.GetLabels()) > 0 {
		m["labels"] = true
	}
	if in.GetQuota() != nil {
		m["quota"] = true
	}
	if len(in.GetMembers()) > 0 {
		m["members"] = true
	}
	if len(in.GetPodReaderGroups()) > 0 {
		m["pod_reader_groups"] = true
	}
	if len(in.GetClusters()) > 0 {
		m["clusters"] = true
	}
	if in.GetScheduling() != nil {
		m["scheduling"] = true
	}
	if in.GetSharing() != nil {
		m["sharing"] = true
	}
	return m
}

// tenantUpdateFields turns an update mask into the fields to copy: every
// updatable field for "*"; the named ones (JSON or proto spelling)
// otherwise, output-only ones ignored. An empty mask is the caller's to
// resolve (populatedTenantFields).
func tenantUpdateFields(paths []string) (map[string]bool, error) {
	if len(paths) == 0 {
		return map[string]bool{}, nil
	}
	fields := map[string]bool{}
	for _, p := range paths {
		p = snake(strings.TrimSpace(p))
		switch {
		case p == "*":
			return allTenantFields(), nil
		case slices.Contains(updatableTenantFields, p), slices.Contains(quotaFields, p), slices.Contains(schedulingFields, p):
			fields[p] = true
		case sharingField(p) != "":
			fields[sharingField(p)] = true
		case slices.Contains(outputOnlyTenantFields, p), p == "usage" || strings.HasPrefix(p, "usage."),
			p == "sharing_status" || strings.HasPrefix(p, "sharing_status."):
		default:
			return nil, invalid(violation("updateMask", fmt.Sprintf("%s cannot be updated; updatable: %s, %s, %s or *",
				quote(p), strings.Join(updatableTenantFields, ", "), strings.Join(quotaFields, ", "), strings.Join(append(schedulingFields, sharingFields...), ", "))))
		}
	}
	return fields, nil
}

func secretToPB(sec tenant.Secret) *pb.Secret {
	keys := append([]string(nil), sec.Keys...)
	sort.Strings(keys)
	return &pb.Secret{Name: secretName(sec.Tenant, sec.Name), Keys: keys, CreateTime: ts(sec.CreateTime), UpdateTime: ts(sec.UpdateTime)}
}

// snake turns a JSON field name (podReaderGroups) into its proto name.
func snake(s string) string {
	out := make([]byte, 0, len(s)+4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			out = append(out, '_', c+'a'-'A')
			continue
		}
		out = append(out, c)
	}
	return string(out)
}
