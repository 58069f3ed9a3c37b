package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Spec
		want Spec
	}{
		{
			name: "empty replica gets count, port and restart policy",
			in:   Spec{Replicas: []ReplicaSpec{{Type: Worker, Image: "tf"}}},
			want: Spec{
				Replicas:      []ReplicaSpec{{Type: Worker, Image: "tf", Count: 1, Port: 2222, RestartPolicy: RestartNever}},
				RunPolicy:     RunPolicy{CleanPodPolicy: CleanRunning},
				SuccessPolicy: SuccessChiefOrWorker0,
			},
		},
		{
			name: "explicit values are kept, backoff limit 0 included",
			in: Spec{
				Replicas: []ReplicaSpec{{
					Type: PS, Count: 2, Port: 3000, RestartPolicy: RestartOnFailure,
					Tolerations: []Toleration{{Key: "spot", Operator: TolerationExists}},
				}},
				RunPolicy:     RunPolicy{BackoffLimit: 0, CleanPodPolicy: CleanAll},
				SuccessPolicy: SuccessAllWorkers,
				Checkpoint:    &CheckpointVolume{ClaimName: "ckpt", MountPath: "/data"},
				TensorBoard:   &TensorBoard{Image: "my/tb:1"},
			},
			want: Spec{
				Replicas: []ReplicaSpec{{
					Type: PS, Count: 2, Port: 3000, RestartPolicy: RestartOnFailure,
					Tolerations: []Toleration{{Key: "spot", Operator: TolerationExists}},
				}},
				RunPolicy:     RunPolicy{BackoffLimit: 0, CleanPodPolicy: CleanAll},
				SuccessPolicy: SuccessAllWorkers,
				Checkpoint:    &CheckpointVolume{ClaimName: "ckpt", MountPath: "/data"},
				TensorBoard:   &TensorBoard{Image: "my/tb:1"},
			},
		},
		{
			name: "toleration operator, checkpoint mount and tensorboard image",
			in: Spec{
				Replicas: []ReplicaSpec{
					{Type: Chief, Tolerations: []Toleration{{Key: "gpu", Value: "a100"}}},
					{Type: Worker, Count: 3},
				},
				RunPolicy:   RunPolicy{BackoffLimit: 5},
				Checkpoint:  &CheckpointVolume{ClaimName: "ckpt"},
				TensorBoard: &TensorBoard{LogDir: "logs"},
			},
			want: Spec{
				Replicas: []ReplicaSpec{
					{
						Type: Chief, Count: 1, Port: 2222, RestartPolicy: RestartNever,
						Tolerations: []Toleration{{Key: "gpu", Operator: TolerationEqual, Value: "a100"}},
					},
					{Type: Worker, Count: 3, Port: 2222, RestartPolicy: RestartNever},
				},
				RunPolicy:     RunPolicy{BackoffLimit: 5, CleanPodPolicy: CleanRunning},
				SuccessPolicy: SuccessChiefOrWorker0,
				Checkpoint:    &CheckpointVolume{ClaimName: "ckpt", MountPath: "/checkpoints"},
				TensorBoard:   &TensorBoard{Image: DefaultTensorBoardImage, LogDir: "logs"},
			},
		},
		{
			name: "wrong values are left for Validate",
			in:   Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: -1, Port: -5, RestartPolicy: "Sometimes"}}, RunPolicy: RunPolicy{BackoffLimit: -1}},
			want: Spec{
				Replicas:      []ReplicaSpec{{Type: Worker, Count: -1, Port: -5, RestartPolicy: "Sometimes"}},
				RunPolicy:     RunPolicy{BackoffLimit: -1, CleanPodPolicy: CleanRunning},
				SuccessPolicy: SuccessChiefOrWorker0,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			got.Default()
			require.Empty(t, cmp.Diff(tc.want, got))
			got.Default()
			require.Empty(t, cmp.Diff(tc.want, got), "Default is idempotent")
		})
	}
}

func TestDefaultConstants(t *testing.T) {
	// The API documents these; changing one is an API change.
	require.Equal(t, 2222, DefaultPort)
	require.Equal(t, 3, DefaultBackoffLimit)
	require.Equal(t, "/checkpoints", DefaultCheckpointMount)
}
