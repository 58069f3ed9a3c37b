//go:build integration

package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// A Kubeflow TFJob, as a Kubeflow user has it: Chief, Workers and a PS on
// tfjob-port, the namespace of their old cluster, and a readiness probe on
// the workers. The simulated kubelet runs each replica for 3 s.
const kubeflowTFJob = `apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist-from-kubeflow
  namespace: kubeflow
spec:
  runPolicy:
    backoffLimit: 2
    cleanPodPolicy: None
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sim.trainyard.dev/run-for: 3s
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [python, /opt/mnist.py]
            ports:
            - name: tfjob-port
              containerPort: 2222
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sim.trainyard.dev/run-for: 3s
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [python, /opt/mnist.py]
            resources:
              limits: {cpu: "1", memory: 1Gi}
            readinessProbe:
              tcpSocket: {port: tfjob-port}
              periodSeconds: 5
    PS:
      replicas: 1
      template:
        metadata:
          annotations:
            sim.trainyard.dev/run-for: 3s
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [python, /opt/mnist.py]
`

// TestTFJobImportRunsToSuccess posts the unmodified TFJob YAML to REST
// (POST .../jobs:importTFJob), and follows the job to SUCCEEDED on the
// local cluster: its pods carry the readiness probe, and the job reports
// AllReplicasReady once the kubelet reports the workers ready.
func TestTFJobImportRunsToSuccess(t *testing.T) {
	e := startWorkers(t, 1)
	token := e.Token("alice")

	req, err := http.NewRequest(http.MethodPost, e.HTTPURL+"/v1/tenants/"+workerTenant+"/jobs:importTFJob?requestId=tf-1", strings.NewReader(kubeflowTFJob))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var out pb.ImportTFJobResponse
	require.NoError(t, protojson.Unmarshal(body, &out))
	name := harness.JobName(workerTenant, "mnist-from-kubeflow")
	require.Equal(t, name, out.GetJob().GetName(), "the TFJob's name is the job id")
	require.Len(t, out.GetWarnings(), 1)
	require.Equal(t, "metadata.namespace", out.GetWarnings()[0].GetField())

	// The workers' pods carry the probe, on the TensorFlow port.
	var workerPod corev1.Pod
	require.Eventually(t, func() bool {
		for _, p := range e.pods(t, "mnist-from-kubeflow") {
			if p.Name == "mnist-from-kubeflow-worker-0" {
				workerPod = p
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "worker-0's pod never appeared")
	probe := workerPod.Spec.Containers[0].ReadinessProbe
	require.NotNil(t, probe)
	require.Equal(t, intstr.FromInt32(2222), probe.TCPSocket.Port)
	require.Equal(t, int32(5), probe.PeriodSeconds)

	done := e.wait(t, name, 2*time.Minute, pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED)
	require.Equal(t, pb.JobState_JOB_STATE_SUCCEEDED, done.GetStatus().GetState(), "%s: %s", done.GetStatus().GetReason(), done.GetStatus().GetMessage())

	events, err := e.jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: name})
	require.NoError(t, err)
	var reasons []string
	for _, ev := range events.GetEvents() {
		reasons = append(reasons, ev.GetReason())
	}
	require.Contains(t, reasons, "AllReplicasReady", "events: %v", reasons)
	var ready *pb.Condition
	for _, c := range done.GetStatus().GetConditions() {
		if c.GetType() == "AllReplicasReady" {
			ready = c
		}
	}
	require.NotNil(t, ready, "the condition held while the job ran")
	require.False(t, ready.GetStatus(), "and no longer once it ended")

	// The same request id again is the same job, not a second one.
	again, err := e.jobs.ImportTFJob(ctxT(t), &pb.ImportTFJobRequest{Parent: harness.TenantName(workerTenant), RequestId: "tf-1"})
	require.NoError(t, err)
	require.Equal(t, out.GetJob().GetUid(), again.GetJob().GetUid())
}

// A TFJob with a field Trainyard cannot honour is refused over REST with a
// 400 naming the field; nothing is created.
func TestTFJobImportRefusesUnsupportedFields(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	sidecar := strings.Replace(kubeflowTFJob, "    PS:\n", "    Evaluator:\n      template:\n        spec:\n          initContainers: [{name: fetch, image: busybox}]\n          containers: [{name: tensorflow, image: tf}]\n    PS:\n", 1)
	req, err := http.NewRequest(http.MethodPost, env.HTTPURL+"/v1/tenants/acme/jobs:importTFJob", strings.NewReader(sidecar))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+env.Token("alice"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), `"field":"tfjob.spec.tfReplicaSpecs.Evaluator.template.spec.initContainers"`)
	list, err := env.Jobs(t, env.Token("alice")).ListJobs(ctxT(t), &pb.ListJobsRequest{Parent: "tenants/acme"})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs())
}
