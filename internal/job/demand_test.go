package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestDemand(t *testing.T) {
	const gi = 1 << 30
	for _, tc := range []struct {
		name string
		spec Spec
		want Demand
		err  bool
	}{
		{
			name: "no requests: the LimitRange's default requests, which the quota charges",
			spec: specOf(Worker, 3),
			want: Demand{CPUMilli: 300, MemoryBytes: 3 * 256 << 20, Pods: 3},
		},
		{
			name: "a limit without a request is the request",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 2, Resources: Resources{CPULimit: "2", MemoryLimit: "1Gi"}}}},
			want: Demand{CPUMilli: 4000, MemoryBytes: 2 << 30, Pods: 2},
		},
		{
			name: "count times each replica's requests",
			spec: Spec{Replicas: []ReplicaSpec{
				{Type: Chief, Count: 1, Resources: Resources{CPU: "2", Memory: "8Gi", GPU: 1}},
				{Type: Worker, Count: 4, Resources: Resources{CPU: "1500m", Memory: "4Gi", GPU: 2, CPULimit: "4", MemoryLimit: "16Gi"}},
				{Type: PS, Count: 2, Resources: Resources{CPU: "500m", Memory: "512Mi"}},
			}},
			want: Demand{GPU: 1 + 8, CPUMilli: 2000 + 6000 + 1000, MemoryBytes: 8*gi + 16*gi + 1*gi, Pods: 7},
		},
		{
			name: "a limit alone is the request",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 2, Resources: Resources{CPULimit: "3", MemoryLimit: "1Gi"}}}},
			want: Demand{CPUMilli: 6000, MemoryBytes: 2 * gi, Pods: 2},
		},
		{
			name: "fractions round up to a whole unit",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1, Resources: Resources{CPU: "0.0001", Memory: "1500m"}}}},
			want: Demand{CPUMilli: 1, MemoryBytes: 2, Pods: 1},
		},
		{
			name: "tensorboard pod counts",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1, Resources: Resources{CPU: "1", Memory: "1Gi"}}}, TensorBoard: &TensorBoard{}},
			want: Demand{CPUMilli: 1000 + 250, MemoryBytes: gi + gi, Pods: 2},
		},
		{
			name: "unset count counts as 1",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Resources: Resources{GPU: 1}}}},
			want: Demand{GPU: 1, CPUMilli: 100, MemoryBytes: 256 << 20, Pods: 1},
		},
		{
			name: "bad quantity",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1, Resources: Resources{CPU: "lots"}}}},
			err:  true,
		},
		{
			name: "one quantity too large for int64",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1, Resources: Resources{CPU: "10E"}}}},
			err:  true,
		},
		{
			name: "sum too large for int64",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 2, Resources: Resources{Memory: "8E"}}}},
			err:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Demand()
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tc.want, got))
		})
	}
}
