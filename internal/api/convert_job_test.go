package api

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fullSpecPB sets every field of a job spec.
func fullSpecPB() *pb.JobSpec {
	backoff, deadline, ttl := int32(5), int64(600), int32(60)
	return &pb.JobSpec{
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
		SuccessPolicy:   pb.SuccessPolicy_SUCCESS_POLICY_ALL_WORKERS,
		Checkpoint:      &pb.CheckpointVolume{ClaimName: "ckpt", MountPath: "/ckpt"},
		Tensorboard:     &pb.TensorBoard{Enabled: true, Image: "tb", LogDir: "logs"},
		Priority:        7,
		ClusterSelector: map[string]string{"topology.kubernetes.io/region": "us-east-1", "cost": "spot"},
		Clusters:        []string{"gpu-east", "gpu-west"},
	}
}

func TestSpecConversionRoundTrip(t *testing.T) {
	in := fullSpecPB()
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

// FuzzJobJSON: a REST body (the Job JSON) goes through what CreateJob does
// with it — the text boundary, conversion, defaults, validation — without
// panicking; a valid job converts back and forth unchanged and answers as
// JSON.
func FuzzJobJSON(f *testing.F) {
	for _, spec := range []*pb.JobSpec{fullSpecPB(), {Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 2, Image: "tensorflow/tensorflow:2.16.1"}}}} {
		b, err := protojson.Marshal(&pb.Job{DisplayName: "d", Labels: map[string]string{"team": "nlp"}, Spec: spec})
		require.NoError(f, err)
		f.Add("mnist", b)
	}
	f.Add("j", []byte(`{"spec":{"replicas":[{"type":"REPLICA_TYPE_WORKER","retryableExitCodes":[-1,-1]}]}}`))
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		var in pb.Job
		if protojson.Unmarshal(body, &in) != nil {
			return // the gateway answers 400 for a body that is not a Job
		}
		if checkText(&pb.CreateJobRequest{Parent: "tenants/t", JobId: id, Job: &in}) != nil {
			return
		}
		j := job.Job{Tenant: "t", Name: id, DisplayName: in.GetDisplayName(), Labels: in.GetLabels(), Spec: specFromPB(in.GetSpec())}
		j.Spec.Default()
		if len(job.Validate(&j)) > 0 {
			return
		}
		again := specFromPB(specToPB(j.Spec))
		again.Default()
		require.Empty(t, cmp.Diff(j.Spec, again), "a valid spec survives conversion")
		out, err := protojson.Marshal(jobToPB(j))
		require.NoError(t, err)
		require.True(t, json.Valid(out))
	})
}
