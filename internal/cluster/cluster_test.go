package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
)

// Health wins over the operator's state; the operator's over READY.
func TestState(t *testing.T) {
	for _, c := range []struct {
		admin     AdminState
		reachable bool
		want      State
	}{
		{Active, true, Ready},
		{AdminDraining, true, Draining},
		{AdminCordoned, true, Cordoned},
		{Active, false, Unreachable},
		{AdminDraining, false, Unreachable},
	} {
		got := Cluster{Admin: c.admin, Reachable: c.reachable}
		require.Equal(t, c.want, got.State(), "%+v", c)
		require.Equal(t, c.want == Ready, got.Admits())
	}
}

func TestValidate(t *testing.T) {
	require.Empty(t, Validate(&Cluster{Name: "eu-1", DisplayName: "Frankfurt", Labels: map[string]string{"region": "eu", "trainyard.dev/cost": "low"}}))
	fields := func(c Cluster) []string {
		var out []string
		for _, v := range Validate(&c) {
			out = append(out, v.Field)
		}
		return out
	}
	require.Equal(t, []string{"name"}, fields(Cluster{Name: "EU"}))
	require.Equal(t, []string{"name"}, fields(Cluster{}))
	require.Equal(t, []string{"name"}, fields(Cluster{Name: strings.Repeat("a", MaxNameLength+1)}))
	require.Equal(t, []string{"displayName"}, fields(Cluster{Name: "a", DisplayName: strings.Repeat("é", MaxDisplayNameLength+1)}))
	require.Equal(t, []string{"labels", "labels"}, fields(Cluster{Name: "a", Labels: map[string]string{"a b": "x", "ok": "not ok"}}))
}

// Nodes round-trip through their compact JSON; resources go by name, zeros
// left out.
func TestNodeJSON(t *testing.T) {
	n := Node{Name: "n1", Labels: map[string]string{"gpu": "a100"}, Unschedulable: true,
		Taints:      []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}},
		Allocatable: job.Vector{job.CPU: 4000, job.GPU: 8}, Used: job.Vector{job.GPU: 1}}
	b, err := json.Marshal(n)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":"n1","l":{"gpu":"a100"},"t":[{"key":"k","value":"v","effect":"NoSchedule"}],"u":true,
		"a":{"cpu":4000,"nvidia.com/gpu":8},"r":{"nvidia.com/gpu":1}}`, string(b))
	var back Node
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, n, back)
	// Trainyard jobs' share of Used, when there is any.
	n.Jobs = job.Vector{job.GPU: 1}
	b, err = json.Marshal(n)
	require.NoError(t, err)
	require.Contains(t, string(b), `"j":{"nvidia.com/gpu":1}`)
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, n, back)

	capacity, usage := Sum([]Node{n, {Name: "n2", Allocatable: job.Vector{job.CPU: 1000}, Used: job.Vector{job.CPU: 500}}})
	require.Equal(t, job.Vector{job.CPU: 1000}, capacity, "unschedulable nodes are left out")
	require.Equal(t, job.Vector{job.CPU: 500}, usage)
}
