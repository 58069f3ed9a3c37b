package audit

import (
	"cmp"
	"maps"
	"reflect"
	"slices"

	"github.com/trainyard/trainyard/internal/tenant"
)

// TenantCreated is what a tenant.create record details: the tenant as
// created.
func TenantCreated(t tenant.Tenant) map[string]any {
	return map[string]any{
		"displayName":     t.DisplayName,
		"labels":          nonNil(t.Labels),
		"quota":           t.Quota,
		"members":         members(t.Members),
		"podReaderGroups": nonNilSlice(t.PodReaderGroups),
		"clusters":        nonNilSlice(t.Clusters),
		"scheduling":      t.Scheduling,
		"sharing":         t.Sharing,
		"namespace":       t.Namespace,
	}
}

// TenantChanged is what an update of a tenant records: the action
// (tenant.offboard when it left ACTIVE for OFFBOARDING, else
// tenant.update) and each field that changed with its value before and
// after. ok is false when nothing changed: there is nothing to record.
func TenantChanged(before, after tenant.Tenant) (a Action, details map[string]any, ok bool) {
	changed := map[string]any{}
	diff := func(field string, b, a any) {
		if !reflect.DeepEqual(b, a) {
			changed[field] = map[string]any{"before": b, "after": a}
		}
	}
	diff("displayName", before.DisplayName, after.DisplayName)
	diff("labels", nonNil(before.Labels), nonNil(after.Labels))
	diff("quota", before.Quota, after.Quota)
	diff("members", members(before.Members), members(after.Members))
	diff("podReaderGroups", nonNilSlice(before.PodReaderGroups), nonNilSlice(after.PodReaderGroups))
	diff("clusters", nonNilSlice(before.Clusters), nonNilSlice(after.Clusters))
	diff("scheduling", before.Scheduling, after.Scheduling)
	diff("sharing", before.Sharing, after.Sharing)
	diff("state", before.State, after.State)
	if len(changed) == 0 {
		return "", nil, false
	}
	a = TenantUpdate
	if before.State == tenant.Active && after.State == tenant.Offboarding {
		a = TenantOffboard
	}
	return a, map[string]any{"changed": changed}, true
}

// members is a members list as a record shows it: roles by name, in a
// stable order.
func members(ms []tenant.Member) []map[string]string {
	out := make([]map[string]string, 0, len(ms))
	for _, m := range ms {
		e := map[string]string{"role": m.Role.String()}
		if m.Group != "" {
			e["group"] = m.Group
		} else {
			e["subject"] = m.Subject
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b map[string]string) int {
		if c := cmp.Compare(a["group"], b["group"]); c != 0 {
			return c
		}
		return cmp.Compare(a["subject"], b["subject"])
	})
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
