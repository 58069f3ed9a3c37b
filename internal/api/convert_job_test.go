package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestSpecConversionRoundTrip(t *testing.T) {
	backoff, deadline, ttl := int32(5), int64(600), int32(60)
	in := &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{
			Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 4, Image: "tensorflow/tensorflow:2.16.1",
			Command: []string{"python"}, Args: []string{"train.py"}, WorkingDir: "/app",
			Env: []*pb.EnvVar{
				{Name: "A", Source: &pb.EnvVar_Value{Value: "1"}},
				{Name: "TOKEN", Source: &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: "hf", Key: "token"}}},
			},
			Resources:    &pb.Resources{Cpu: "4", Memory: "16Gi", Gpu: 1, CpuLimit: "8", MemoryLimit: "20Gi"},
			NodeSelector: map[string]string{"pool": "gpu"},
			Tolerations:  []*pb.Toleration{{Key: "spot", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: 30}},
			Affinity: &pb.Affinity{
				Required:  []*pb.NodeSelectorTerm{{MatchExpressions: []*pb.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"a"}}}}},
				Preferred: []*pb.PreferredTerm{{Weight: 10, Preference: &pb.NodeSelectorTerm{MatchExpressions: []*pb.NodeSelectorRequirement{{Key: "spot", Operator: "Exists"}}}}},
			},
			PodLabels: map[string]string{"x": "y"}, PodAnnotations: map[string]string{"a": "b"},
			Port: 2223, RestartPolicy: pb.RestartPolicy_RESTART_POLICY_EXIT_CODE, RetryableExitCodes: []int32{137},
			SecretVolumes:            []*pb.SecretVolume{{Secret: "creds", MountPath: "/creds"}},
			MountServiceAccountToken: true,
		}},
		RunPolicy: &pb.RunPolicy{
			BackoffLimit: &backoff, ActiveDeadlineSeconds: &deadline, TtlSecondsAfterFinished: &ttl,
			CleanPodPolicy: pb.CleanPodPolicy_CLEAN_POD_POLICY_ALL,
		},
		SuccessPolicy: pb.SuccessPolicy_SUCCESS_POLICY_ALL_WORKERS,
		Checkpoint:    &pb.CheckpointVolume{ClaimName: "ckpt", MountPath: "/ckpt"},
		Tensorboard:   &pb.TensorBoard{Enabled: true, Image: "tb", LogDir: "logs"},
		Priority:      7,
	}
	out := specToPB(specFromPB(in))
	require.Empty(t, cmp.Diff(in, out, protocmp.Transform()))
}

func TestSpecConversionDefaults(t *testing.T) {
	s := specFromPB(&pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Image: "tf"}}})
	require.EqualValues(t, job.DefaultBackoffLimit, s.RunPolicy.BackoffLimit, "an unset backoffLimit gets the default")
	require.Equal(t, job.RestartNever, s.Replicas[0].RestartPolicy)
	zero := int32(0)
	s = specFromPB(&pb.JobSpec{RunPolicy: &pb.RunPolicy{BackoffLimit: &zero}})
	require.EqualValues(t, 0, s.RunPolicy.BackoffLimit, "an explicit 0 stays 0")
	// An unknown enum number becomes "" so validation names the field.
	s = specFromPB(&pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType(99)}}})
	require.Equal(t, job.ReplicaType(""), s.Replicas[0].Type)
	require.Nil(t, specFromPB(&pb.JobSpec{Tensorboard: &pb.TensorBoard{Enabled: false, Image: "x"}}).TensorBoard)
}
