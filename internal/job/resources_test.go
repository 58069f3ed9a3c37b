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
		want Vector
		err  bool
	}{
		{
			name: "no requests: the LimitRange's default requests, which the quota charges",
			spec: specOf(Worker, 3),
			want: Vector{CPU: 300, Memory: 3 * 256 << 20, Pods: 3},
		},
		{
			name: "a limit without a request is the request",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 2, Resources: Resources{CPULimit: "2", MemoryLimit: "1Gi"}}}},
			want: Vector{CPU: 4000, Memory: 2 << 30, Pods: 2},
		},
		{
			name: "count times each replica's requests",
			spec: Spec{Replicas: []ReplicaSpec{
				{Type: Chief, Count: 1, Resources: Resources{CPU: "2", Memory: "8Gi", GPU: 1}},
				{Type: Worker, Count: 4, Resources: Resources{CPU: "1500m", Memory: "4Gi", GPU: 2, CPULimit: "4", MemoryLimit: "16Gi"}},
				{Type: PS, Count: 2, Resources: Resources{CPU: "500m", Memory: "512Mi"}},
			}},
			want: Vector{GPU: 1 + 8, CPU: 2000 + 6000 + 1000, Memory: 8*gi + 16*gi + 1*gi, Pods: 7},
		},
		{
			name: "a limit alone is the request",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 2, Resources: Resources{CPULimit: "3", MemoryLimit: "1Gi"}}}},
			want: Vector{CPU: 6000, Memory: 2 * gi, Pods: 2},
		},
		{
			name: "fractions round up to a whole unit",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1, Resources: Resources{CPU: "0.0001", Memory: "1500m"}}}},
			want: Vector{CPU: 1, Memory: 2, Pods: 1},
		},
		{
			name: "tensorboard pod counts",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1, Resources: Resources{CPU: "1", Memory: "1Gi"}}}, TensorBoard: &TensorBoard{}},
			want: Vector{CPU: 1000 + 250, Memory: gi + gi, Pods: 2},
		},
		{
			name: "unset count counts as 1",
			spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Resources: Resources{GPU: 1}}}},
			want: Vector{GPU: 1, CPU: 100, Memory: 256 << 20, Pods: 1},
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

func TestVector(t *testing.T) {
	a := Vector{CPU: 1000, Memory: 4 << 30, GPU: 2, Pods: 1}
	b := Vector{CPU: 500, GPU: 1, Pods: 1}
	require.Equal(t, Vector{CPU: 1500, Memory: 4 << 30, GPU: 3, Pods: 2}, a.Add(b))
	require.Equal(t, Vector{CPU: 500, Memory: 4 << 30, GPU: 1}, a.Sub(b))
	require.Equal(t, Vector{CPU: 3000, Memory: 12 << 30, GPU: 6, Pods: 3}, a.Times(3))
	require.True(t, b.LessEq(a))
	require.False(t, a.LessEq(b))
	require.Equal(t, []Resource{Memory}, a.Short(Vector{CPU: 1000, GPU: 2, Pods: 1}))

	// A quota limits only its non-zero dimensions.
	quota := Vector{GPU: 2}
	require.True(t, a.Within(quota))
	require.Equal(t, []Resource{GPU}, a.Add(b).Over(quota))
	require.Equal(t, "cpu=1 memory=4Gi nvidia.com/gpu=2 pods=1", a.String())
}

func TestResourceNames(t *testing.T) {
	var names []string
	for _, r := range AllResources {
		names = append(names, r.Name())
	}
	require.Equal(t, []string{"cpu", "memory", "nvidia.com/gpu", "pods"}, names)
	require.True(t, GPU.Extended())
	require.False(t, CPU.Extended())
	require.Equal(t, "1500m", CPU.Format(1500))
	require.Equal(t, "16Gi", Memory.Format(16<<30))
}
