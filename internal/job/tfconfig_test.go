package job

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// specOf builds a spec from type/count pairs with default ports.
func specOf(pairs ...any) Spec {
	var s Spec
	for i := 0; i < len(pairs); i += 2 {
		s.Replicas = append(s.Replicas, ReplicaSpec{Type: pairs[i].(ReplicaType), Count: int32(pairs[i+1].(int)), Port: DefaultPort})
	}
	return s
}

func TestTFConfigExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		typ   ReplicaType
		index int32
		want  string
	}{
		{
			name: "chief and one worker, as the chief",
			spec: specOf(Chief, 1, Worker, 1),
			typ:  Chief, index: 0,
			want: `{"cluster":{"chief":["j-chief-0.replicas.ns.svc:2222"],"worker":["j-worker-0.replicas.ns.svc:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"}`,
		},
		{
			name: "two workers",
			spec: specOf(Worker, 2),
			typ:  Worker, index: 1,
			want: `{"cluster":{"worker":["j-worker-0.replicas.ns.svc:2222","j-worker-1.replicas.ns.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}`,
		},
		{
			name: "worker and ps, given ps first: keys still chief, worker, ps, evaluator",
			spec: specOf(PS, 1, Worker, 2),
			typ:  PS, index: 0,
			want: `{"cluster":{"worker":["j-worker-0.replicas.ns.svc:2222","j-worker-1.replicas.ns.svc:2222"],"ps":["j-ps-0.replicas.ns.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"}`,
		},
		{
			name: "chief and evaluator",
			spec: specOf(Evaluator, 1, Chief, 1),
			typ:  Evaluator, index: 0,
			want: `{"cluster":{"chief":["j-chief-0.replicas.ns.svc:2222"],"evaluator":["j-evaluator-0.replicas.ns.svc:2222"]},"task":{"type":"evaluator","index":0},"environment":"cloud"}`,
		},
		{
			name: "all four types",
			spec: specOf(Chief, 1, Worker, 1, PS, 1, Evaluator, 1),
			typ:  Worker, index: 0,
			want: `{"cluster":{"chief":["j-chief-0.replicas.ns.svc:2222"],"worker":["j-worker-0.replicas.ns.svc:2222"],"ps":["j-ps-0.replicas.ns.svc:2222"],"evaluator":["j-evaluator-0.replicas.ns.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}`,
		},
		{
			name: "custom port per type",
			spec: Spec{Replicas: []ReplicaSpec{
				{Type: Chief, Count: 1, Port: 5000},
				{Type: Worker, Count: 2, Port: 6000},
				{Type: PS, Count: 1, Port: 7000},
				{Type: Evaluator, Count: 1, Port: 8000},
			}},
			typ: Worker, index: 1,
			want: `{"cluster":{"chief":["j-chief-0.replicas.ns.svc:5000"],"worker":["j-worker-0.replicas.ns.svc:6000","j-worker-1.replicas.ns.svc:6000"],"ps":["j-ps-0.replicas.ns.svc:7000"],"evaluator":["j-evaluator-0.replicas.ns.svc:8000"]},"task":{"type":"worker","index":1},"environment":"cloud"}`,
		},
		{
			name: "count and port not yet defaulted count as 1 and 2222",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Chief}, {Type: PS, Count: 1, Port: 1234}}},
			typ:  Chief, index: 0,
			want: `{"cluster":{"chief":["j-chief-0.replicas.ns.svc:2222"],"ps":["j-ps-0.replicas.ns.svc:1234"]},"task":{"type":"chief","index":0},"environment":"cloud"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := TFConfig("j", "ns", tc.spec, tc.typ, tc.index)
			require.True(t, ok)
			require.Empty(t, cmp.Diff(tc.want, got))
		})
	}
}

// TestTFConfigEightReplicas is the job of the end-to-end test: every pod's
// TF_CONFIG, exactly.
func TestTFConfigEightReplicas(t *testing.T) {
	spec := specOf(Chief, 1, Worker, 4, PS, 2, Evaluator, 1)
	const cluster = `{"chief":["mnist-chief-0.replicas.team-a.svc:2222"],` +
		`"worker":["mnist-worker-0.replicas.team-a.svc:2222","mnist-worker-1.replicas.team-a.svc:2222","mnist-worker-2.replicas.team-a.svc:2222","mnist-worker-3.replicas.team-a.svc:2222"],` +
		`"ps":["mnist-ps-0.replicas.team-a.svc:2222","mnist-ps-1.replicas.team-a.svc:2222"],` +
		`"evaluator":["mnist-evaluator-0.replicas.team-a.svc:2222"]}`
	want := map[string]string{
		"chief-0":     `{"cluster":` + cluster + `,"task":{"type":"chief","index":0},"environment":"cloud"}`,
		"worker-0":    `{"cluster":` + cluster + `,"task":{"type":"worker","index":0},"environment":"cloud"}`,
		"worker-1":    `{"cluster":` + cluster + `,"task":{"type":"worker","index":1},"environment":"cloud"}`,
		"worker-2":    `{"cluster":` + cluster + `,"task":{"type":"worker","index":2},"environment":"cloud"}`,
		"worker-3":    `{"cluster":` + cluster + `,"task":{"type":"worker","index":3},"environment":"cloud"}`,
		"ps-0":        `{"cluster":` + cluster + `,"task":{"type":"ps","index":0},"environment":"cloud"}`,
		"ps-1":        `{"cluster":` + cluster + `,"task":{"type":"ps","index":1},"environment":"cloud"}`,
		"evaluator-0": `{"cluster":` + cluster + `,"task":{"type":"evaluator","index":0},"environment":"cloud"}`,
	}
	got := map[string]string{}
	for _, r := range spec.Replicas {
		for i := range r.Count {
			cfg, ok := TFConfig("mnist", "team-a", spec, r.Type, i)
			require.True(t, ok)
			got[ReplicaName(r.Type, i)] = cfg
		}
	}
	require.Empty(t, cmp.Diff(want, got))
}

// TestTFConfigEveryMix covers the 15 non-empty sets of replica types (12 of
// them valid jobs; the other three still render consistently) against an
// independent model of the format.
func TestTFConfigEveryMix(t *testing.T) {
	counts := map[ReplicaType]int{Chief: 1, Worker: 3, PS: 2, Evaluator: 1}
	ports := map[ReplicaType]int32{Chief: 2222, Worker: 2223, PS: 2224, Evaluator: 2225}
	for mask := 1; mask < 16; mask++ {
		var spec Spec
		var names []string
		for bit, typ := range ReplicaTypes {
			if mask&(1<<bit) != 0 {
				spec.Replicas = append(spec.Replicas, ReplicaSpec{Type: typ, Count: int32(counts[typ]), Port: ports[typ]})
				names = append(names, string(typ))
			}
		}
		t.Run(strings.Join(names, "+"), func(t *testing.T) {
			total := 0
			wantCluster := map[string][]string{}
			for _, r := range spec.Replicas {
				total += int(r.Count)
				for i := range r.Count {
					wantCluster[string(r.Type)] = append(wantCluster[string(r.Type)],
						fmt.Sprintf("j-%s-%d.replicas.ns.svc:%d", r.Type, i, r.Port))
				}
			}
			for _, r := range spec.Replicas {
				for i := range r.Count {
					got, ok := TFConfig("j", "ns", spec, r.Type, i)
					if total == 1 {
						require.False(t, ok, "one replica in total: no TF_CONFIG")
						require.Empty(t, got)
						continue
					}
					require.True(t, ok)
					var parsed parsedTFConfig
					require.NoError(t, json.Unmarshal([]byte(got), &parsed))
					require.Empty(t, cmp.Diff(wantCluster, parsed.Cluster))
					require.Equal(t, string(r.Type), parsed.Task.Type)
					require.Equal(t, i, parsed.Task.Index)
					require.Equal(t, "cloud", parsed.Environment)
					require.NotContains(t, got, " ", "compact JSON")
					requireKeyOrder(t, got)
				}
			}
		})
	}
}

// requireKeyOrder checks that the cluster's keys come in the order chief,
// worker, ps, evaluator.
func requireKeyOrder(t *testing.T, cfg string) {
	t.Helper()
	last := -1
	for _, typ := range ReplicaTypes {
		i := strings.Index(cfg, `"`+string(typ)+`":[`)
		if i < 0 {
			continue
		}
		require.Greater(t, i, last, "key %s out of order in %s", typ, cfg)
		last = i
	}
}

func TestTFConfigNone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		typ   ReplicaType
		index int32
	}{
		{name: "one chief", spec: specOf(Chief, 1), typ: Chief},
		{name: "one worker", spec: specOf(Worker, 1), typ: Worker},
		{name: "one worker, count not defaulted", spec: Spec{Replicas: []ReplicaSpec{{Type: Worker}}}, typ: Worker},
		{name: "one evaluator", spec: specOf(Evaluator, 1), typ: Evaluator},
		{name: "type not in the job", spec: specOf(Worker, 2), typ: Chief},
		{name: "index past the count", spec: specOf(Worker, 2), typ: Worker, index: 2},
		{name: "negative index", spec: specOf(Worker, 2), typ: Worker, index: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := TFConfig("j", "ns", tc.spec, tc.typ, tc.index)
			require.False(t, ok)
			require.Empty(t, got)
		})
	}
}
