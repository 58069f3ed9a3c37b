package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(testNow.Add(-d)) }

// runningJob is a chief + 4 workers job with everything up.
func runningJob(id string) *pb.Job {
	return &pb.Job{
		Name:       "tenants/ml/jobs/" + id,
		CreateTime: ago(5 * time.Minute),
		Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
			{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Count: 1},
			{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 4},
		}},
		Status: &pb.JobStatus{
			State: pb.JobState_JOB_STATE_RUNNING,
			ReplicaCounts: []*pb.ReplicaCounts{
				{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Active: 1},
				{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Active: 3, Succeeded: 1},
			},
		},
	}
}

func TestJobsTable(t *testing.T) {
	failed := &pb.Job{
		Name:       "tenants/ml/jobs/resnet",
		CreateTime: ago(26 * time.Hour),
		Spec:       &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 2}, {Type: pb.ReplicaType_REPLICA_TYPE_PS}}},
		Status: &pb.JobStatus{
			State: pb.JobState_JOB_STATE_FAILED, Reason: "BackoffLimitExceeded", Restarts: 3,
			ReplicaCounts: []*pb.ReplicaCounts{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Failed: 1, Succeeded: 1}},
		},
	}
	cancelling := runningJob("bert")
	cancelling.Status.CancelRequested = true
	queued := &pb.Job{Name: "tenants/ml/jobs/q", Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER}}}, Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED}}
	waits := &pb.Job{Name: "tenants/ml/jobs/big", Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Count: 3}}},
		Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED, Queue: &pb.QueueStatus{
			Reason: pb.WaitReason_WAIT_REASON_CAPACITY, TenantPosition: 1, ClusterPosition: 4, WaitingFor: []string{"nvidia.com/gpu"},
			EstimatedStartTime: timestamppb.New(testNow.Add(12 * time.Minute)), EstimateBasis: pb.EstimateBasis_ESTIMATE_BASIS_RUN_TIMES,
		}}}
	behind := &pb.Job{Name: "tenants/ml/jobs/small", Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER}}},
		Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED, Queue: &pb.QueueStatus{
			Reason: pb.WaitReason_WAIT_REASON_ORDER, TenantPosition: 2, ClusterPosition: 5, BlockedBy: "big",
		}}}

	var out bytes.Buffer
	writeJobsTable(&out, []*pb.Job{runningJob("mnist-1"), failed, cancelling, queued, waits, behind}, testNow)
	require.Equal(t, strings.Join([]string{
		"NAME      STATE        REPLICAS                RESTARTS   POSITION   WAITING FOR               ETA      AGE   REASON",
		"mnist-1   RUNNING      chief 1/1, worker 4/4   0          -          -                         -        5m    -",
		"resnet    FAILED       worker 1/2, ps 0/1      3          -          -                         -        26h   BackoffLimitExceeded",
		"bert      CANCELLING   chief 1/1, worker 4/4   0          -          -                         -        5m    -",
		"q         QUEUED       worker 0/1              0          -          -                         -        -     -",
		"big       QUEUED       worker 0/3              0          1/4        CAPACITY nvidia.com/gpu   in 12m   -     -",
		"small     QUEUED       worker 0/1              0          2/5        ORDER big                 ?        -     -",
		"",
	}, "\n"), out.String())

	out.Reset()
	writeJobDetail(&out, waits, testNow)
	for _, want := range []string{
		"Waiting for:       CAPACITY nvidia.com/gpu: \n",
		"Position:          1 in the tenant's queue, 4 in the cluster's\n",
		"Estimated start:   in 12m (from the run times of the tenant's recent jobs)\n",
	} {
		require.Contains(t, out.String(), want)
	}
}

func TestJobDetail(t *testing.T) {
	j := runningJob("mnist-1")
	j.Creator = "alice"
	j.Spec.RunPolicy = &pb.RunPolicy{BackoffLimit: proto.Int32(3)}
	j.Status.Restarts = 1
	j.Status.Replicas = []*pb.ReplicaStatus{
		{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Pod: "mnist-1-chief-0", Node: "n1", State: pb.ReplicaState_REPLICA_STATE_RUNNING},
		{Type: pb.ReplicaType_REPLICA_TYPE_WORKER, Index: 1, Pod: "mnist-1-worker-1", Node: "n2", State: pb.ReplicaState_REPLICA_STATE_RUNNING, Restarts: 1,
			LastTermination: &pb.Termination{ExitCode: 137, Reason: "OOMKilled", Message: "out of\nmemory"}},
	}
	var out bytes.Buffer
	writeJobDetail(&out, j, testNow)
	s := out.String()
	for _, want := range []string{
		"Name:       mnist-1\n",
		"Tenant:     ml\n",
		"State:      RUNNING\n",
		"Replicas:   chief 1/1, worker 4/4\n",
		"Restarts:   1 (backoff limit 3)\n",
		"(5m ago) by alice\n",
		"REPLICA    STATE     POD                NODE   RESTARTS   EXIT   REASON\n",
		"chief-0    RUNNING   mnist-1-chief-0    n1     0          -      -\n",
		"worker-1   RUNNING   mnist-1-worker-1   n2     1          137    OOMKilled\n",
		"worker-1 exited 137: out of\nmemory\n",
	} {
		require.Contains(t, s, want)
	}
}

func TestEventsTableAndWatchLine(t *testing.T) {
	e := &pb.JobEvent{Id: 42, Job: "tenants/ml/jobs/mnist-1", Type: "Warning", Reason: "ReplicaFailed",
		Message: "worker-1 exited 137\n(OOMKilled)", State: pb.JobState_JOB_STATE_RESTARTING, CreateTime: ago(90 * time.Second)}
	var out bytes.Buffer
	writeEventsTable(&out, []*pb.JobEvent{e}, testNow)
	require.Equal(t, "ID   AGE   TYPE      REASON          STATE        MESSAGE\n"+
		"42   90s   Warning   ReplicaFailed   RESTARTING   worker-1 exited 137 (OOMKilled)\n", out.String())

	out.Reset()
	writeWatchLine(&out, &pb.WatchJobResponse{Event: e, Job: runningJob("mnist-1")})
	require.Regexp(t, `^\d\d:\d\d:\d\d  mnist-1 +RESTARTING  Warning  ReplicaFailed  worker-1 exited 137 \(OOMKilled\)\n$`, out.String())
	out.Reset()
	writeWatchLine(&out, &pb.WatchJobResponse{Job: runningJob("mnist-1")})
	require.Regexp(t, `^--:--:--  mnist-1 +RUNNING +current state`, out.String())
}

func TestTenantAndSecretTables(t *testing.T) {
	tn := &pb.Tenant{
		Name: "tenants/ml", Namespace: "ty-ml", State: pb.TenantState_TENANT_STATE_ACTIVE, CreateTime: ago(72 * time.Hour),
		Quota:   &pb.Quota{Gpu: 16, Memory: "512Gi"},
		Members: []*pb.Member{{Principal: &pb.Member_Group{Group: "ml-team"}, Role: pb.Role_ROLE_EDITOR}, {Principal: &pb.Member_Subject{Subject: "alice"}, Role: pb.Role_ROLE_ADMIN}},
	}
	var out bytes.Buffer
	writeTenantsTable(&out, []*pb.Tenant{tn, {Name: "tenants/free"}}, testNow)
	require.Equal(t, "NAME   STATE    NAMESPACE   QUOTA                 MEMBERS   AGE\n"+
		"ml     ACTIVE   ty-ml       gpu=16 memory=512Gi   2         3d\n"+
		"free   -        -           unlimited             0         -\n", out.String())

	out.Reset()
	writeTenantDetail(&out, tn, testNow)
	require.Contains(t, out.String(), "Members:     group:ml-team=editor\n             subject:alice=admin\n")

	out.Reset()
	writeSecretsTable(&out, []*pb.Secret{{Name: "tenants/ml/secrets/s3", Keys: []string{"id", "key"}, UpdateTime: ago(time.Hour)}}, testNow)
	require.Equal(t, "NAME   KEYS     UPDATED\ns3     id,key   60m\n", out.String())
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                  "0s",
		0:                             "0s",
		119 * time.Second:             "119s",
		2 * time.Minute:               "2m",
		9*time.Minute + 5*time.Second: "9m5s",
		90 * time.Minute:              "90m",
		3*time.Hour + 30*time.Minute:  "3h30m",
		30 * time.Hour:                "30h",
		3*24*time.Hour + time.Hour:    "3d1h",
		40 * 24 * time.Hour:           "40d",
		3 * 365 * 24 * time.Hour:      "3y",
	} {
		require.Equal(t, want, humanDuration(d), d.String())
	}
}

func TestPrintFormats(t *testing.T) {
	j := runningJob("mnist-1")
	j.DisplayName = "MNIST"
	j.Spec.RunPolicy = &pb.RunPolicy{BackoffLimit: proto.Int32(0)}
	for _, tc := range []struct {
		output string
		check  func(t *testing.T, out string)
	}{
		{outJSON, func(t *testing.T, out string) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			// lowerCamelCase names, enums by name, as the REST API.
			require.Equal(t, "MNIST", doc["displayName"])
			require.Equal(t, "JOB_STATE_RUNNING", doc["status"].(map[string]any)["state"])
			require.Contains(t, out, `"replicaCounts": [`)
			require.Contains(t, out, `"backoffLimit": 0`)
			require.NotContains(t, out, "display_name")
			require.True(t, strings.HasPrefix(out, "{\n  \""), "indented, two spaces")
		}},
		{outYAML, func(t *testing.T, out string) {
			require.Contains(t, out, "displayName: MNIST\n")
			require.Contains(t, out, "\n  state: JOB_STATE_RUNNING\n")
		}},
		{outTable, func(t *testing.T, out string) { require.Equal(t, "table\n", out) }},
	} {
		t.Run(tc.output, func(t *testing.T) {
			var out bytes.Buffer
			a := &app{stdout: &out, flags: globalFlags{output: tc.output}}
			require.NoError(t, a.print(j, func(w io.Writer) { fmt.Fprintln(w, "table") }))
			tc.check(t, out.String())
		})
	}
}

func TestShortAndParseEnum(t *testing.T) {
	require.Equal(t, "WORKER", shortEnum(pb.ReplicaType_REPLICA_TYPE_WORKER))
	require.Equal(t, "ps", lowerEnum(pb.ReplicaType_REPLICA_TYPE_PS))
	require.Equal(t, "-", shortEnum(pb.JobState_JOB_STATE_UNSPECIFIED))
	require.Equal(t, "CHIEF_OR_WORKER0", shortEnum(pb.SuccessPolicy_SUCCESS_POLICY_CHIEF_OR_WORKER0))

	v, err := parseEnum(pb.Role(0).Descriptor(), "Editor")
	require.NoError(t, err)
	require.EqualValues(t, pb.Role_ROLE_EDITOR, v.Number())
	_, err = parseEnum(pb.Role(0).Descriptor(), "owner")
	require.EqualError(t, err, `"owner" is not one of VIEWER, EDITOR, ADMIN`)
}

func TestJobDetailDependencies(t *testing.T) {
	gated := &pb.Job{Name: "tenants/ml/jobs/publish", Spec: &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_WORKER}},
		DependsOn: []*pb.JobDependency{
			{Job: "prep", Condition: pb.DependencyCondition_DEPENDENCY_CONDITION_SUCCEEDED},
			{Job: "train", Condition: pb.DependencyCondition_DEPENDENCY_CONDITION_STARTED},
		}},
		Status: &pb.JobStatus{State: pb.JobState_JOB_STATE_QUEUED, Queue: &pb.QueueStatus{
			Reason: pb.WaitReason_WAIT_REASON_DEPENDENCY, BlockedBy: "train", Message: "waits for job train to start",
		}}}
	var out bytes.Buffer
	writeJobsTable(&out, []*pb.Job{gated}, testNow)
	require.Contains(t, out.String(), "-          DEPENDENCY train")
	out.Reset()
	writeJobDetail(&out, gated, testNow)
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	require.Contains(t, squash(out.String()), "Depends on: prep (SUCCEEDED), train (STARTED)")
	require.Contains(t, squash(out.String()), "Waiting for: DEPENDENCY train: waits for job train to start")
	require.NotContains(t, out.String(), "Position")
	require.NotContains(t, out.String(), "Estimated start")

	gated.Status = &pb.JobStatus{State: pb.JobState_JOB_STATE_RUNNING, Outputs: map[string]string{"model": "gs://m/1"},
		Dependencies: []*pb.DependencyResult{{Job: "prep", State: pb.JobState_JOB_STATE_SUCCEEDED}}}
	out.Reset()
	writeJobDetail(&out, gated, testNow)
	require.Contains(t, out.String(), "prep (SUCCEEDED: was SUCCEEDED), train (STARTED)")
	require.Contains(t, squash(out.String()), "Outputs: model=gs://m/1")
}
