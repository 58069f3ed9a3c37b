//go:build integration

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/deploytest"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// One Trainyard over two clusters (issue 45): the package's shared local
// cluster is `default` (labelled region=a) and a second control plane of
// its own is `b` (region=b), each with a worker that has credentials for
// its cluster only. Each cluster has two GPU nodes of 8 GPUs.
//
//   - Every tenant is provisioned in both clusters (each cluster's worker
//     reconciles every tenant).
//   - A job selecting region=b runs in b, one naming default runs there;
//     GetJob says where; the pods exist in that cluster and not the other.
//   - A gang of 3×8 GPUs fits neither cluster (16 GPUs each) but would fit
//     their sum: it waits, and its reason says a gang is never split.
//   - With default's GPUs taken, an unconstrained 8-GPU job goes to b.
func TestClustersPlaceEachGangWholeInOneCluster(t *testing.T) {
	s, second, _ := startTwoClusters(t, "--cluster-heartbeat", "1s")
	e, ctx := s.workerEnv, ctxT(t)
	inB := gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "30s"))
	inB.ClusterSelector = map[string]string{"region": "b"}
	inDefault := gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "30s"))
	inDefault.Clusters = []string{"default"}
	b1 := s.submitTo(t, "in-b", inB)
	a1 := s.submitTo(t, "in-default", inDefault)
	for name, want := range map[string]string{b1: "b", a1: "default"} {
		j := s.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
		require.Equal(t, want, j.GetStatus().GetCluster(), "%s runs where it asked", name)
	}
	require.Len(t, podsIn(t, second.Client(), e.ns, "in-b"), 1, "in-b's pod is in cluster b")
	require.Empty(t, podsIn(t, e.Cluster.Client(), e.ns, "in-b"), "and not in default")
	require.Len(t, podsIn(t, e.Cluster.Client(), e.ns, "in-default"), 1)
	require.Empty(t, podsIn(t, second.Client(), e.ns, "in-default"))
	readsFromB(t, s, second, b1)
	tensorBoardFromB(t, s, second)
	pinnedTenantStaysInDefault(t, s, second)
	secretsCopiedToB(t, s, second)

	// 24 GPUs in one gang: 16 free in all would not do either, and 32 in
	// both clusters together is no help: never split.
	big := s.submitTo(t, "big", gpuJob(3, 8, 0, annot(cluster.AnnotationRunFor, "1s")))
	j := harness.WaitJob(t, s.jobs, big, 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetQueue() != nil })
	require.Equal(t, pb.JobState_JOB_STATE_QUEUED, j.GetStatus().GetState())
	require.Contains(t, j.GetStatus().GetQueue().GetMessage(), "split", "queue: %v", j.GetStatus().GetQueue())
	require.Empty(t, podsIn(t, e.Cluster.Client(), e.ns, "big"))
	require.Empty(t, podsIn(t, second.Client(), e.ns, "big"))
	_, err := s.jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: big})
	require.NoError(t, err)

	// default's other 8 GPUs taken: the next unconstrained gang goes to b.
	fill := gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "30s"))
	fill.Clusters = []string{"default"}
	s.wait(t, s.submitTo(t, "fill-default", fill), 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	anywhere := s.wait(t, s.submitTo(t, "anywhere", gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "1s"))), 60*time.Second,
		pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, "b", anywhere.GetStatus().GetCluster(), "the only cluster with room")
	s.wait(t, harness.JobName(workerTenant, "anywhere"), 60*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)

	// Taking b from the tenant while in-b runs there is refused, naming both.
	tenants := pb.NewTenantServiceClient(e.Conn(t, e.AdminToken()))
	onlyDefault := &pb.UpdateTenantRequest{Tenant: &pb.Tenant{Name: harness.TenantName(workerTenant), Clusters: []string{"default"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"clusters"}}}
	_, err = tenants.UpdateTenant(ctx, onlyDefault)
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), `cluster "b" (in-b)`)

	for _, id := range []string{"in-b", "in-default", "fill-default"} {
		_, err := s.jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: harness.JobName(workerTenant, id)})
		require.NoError(t, err)
	}
	// Once in-b has ended, b can be taken away: b's worker removes the
	// tenant's namespace there, and default keeps its own.
	s.wait(t, b1, 30*time.Second, pb.JobState_JOB_STATE_CANCELLED)
	_, err = tenants.UpdateTenant(ctx, onlyDefault)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ns, err := second.Client().CoreV1().Namespaces().Get(ctx, e.ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil)
	}, 30*time.Second, 200*time.Millisecond, "b's worker offboards the tenant from b")
	_, err = e.Cluster.Client().CoreV1().Namespaces().Get(ctx, e.ns, metav1.GetOptions{})
	require.NoError(t, err, "and leaves its namespace in default")
}

// readsFromB: a job running in cluster b is read from b through the one
// API: GetJob's pod (REST and gRPC) is b's, its log comes from b's pod
// (REST, gRPC, and followed), its events are those b's worker wrote from
// b's pods; another tenant's user gets none of them.
func readsFromB(t *testing.T, s *schedEnv, second *cluster.Cluster, name string) {
	t.Helper()
	e, ctx := s.workerEnv, ctxT(t)
	pods, err := second.Client().CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "trainyard.dev/job=in-b"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	pod := pods.Items[0]
	var j *pb.Job
	require.Eventually(t, func() bool {
		j = s.get(t, name)
		rs := j.GetStatus().GetReplicas()
		return len(rs) == 1 && rs[0].GetNode() != ""
	}, 30*time.Second, 100*time.Millisecond, "in-b's replica is reported on its node")
	rep := j.GetStatus().GetReplicas()[0]
	require.Equal(t, "b", j.GetStatus().GetCluster())
	require.Equal(t, pod.Name, rep.GetPod(), "GetJob's pod is the one in b")
	require.Equal(t, pod.Spec.NodeName, rep.GetNode())
	var viaREST pb.Job
	alice := e.Token("alice")
	r := e.REST(alice).Do(t, "GET", "/v1/tenants/"+workerTenant+"/jobs/in-b", nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r.JSON(t, &viaREST)
	require.Equal(t, "b", viaREST.GetStatus().GetCluster())
	require.Equal(t, pod.Name, viaREST.GetStatus().GetReplicas()[0].GetPod())

	// Logs: b's pod is the only one there is; the API server's own
	// cluster has none of this job's.
	logsPath := "/v1/tenants/" + workerTenant + "/jobs/in-b/logs?replica=worker-0"
	var body string
	require.Eventually(t, func() bool {
		r := e.REST(alice).Do(t, "GET", logsPath, nil)
		body = string(r.Body)
		return r.Status == http.StatusOK && strings.Contains(body, cluster.LogLineStep)
	}, 20*time.Second, 200*time.Millisecond, "REST logs from b; last: %s", body)
	logs, err := s.jobs.GetJobLogs(ctx, &pb.GetJobLogsRequest{Name: name, Replica: "worker-0"})
	require.NoError(t, err)
	require.Contains(t, recvAll(t, logs), cluster.LogLineStep, "gRPC logs from b")
	fctx, cancel := streamCtx(t, time.Minute)
	follow, err := s.jobs.GetJobLogs(fctx, &pb.GetJobLogsRequest{Name: name, Follow: true})
	require.NoError(t, err)
	first, err := follow.Recv()
	require.NoError(t, err, "a followed log from b")
	require.NotEmpty(t, first.GetData())
	cancel()

	// Events: b's worker wrote them from b's pods.
	events, err := s.jobs.ListJobEvents(ctx, &pb.ListJobEventsRequest{Parent: name, PageSize: 100})
	require.NoError(t, err)
	var reasons []string
	for _, ev := range events.GetEvents() {
		reasons = append(reasons, ev.GetReason())
	}
	require.Contains(t, reasons, "JobRunning", "events: %v", reasons)
	r = e.REST(alice).Do(t, "GET", "/v1/tenants/"+workerTenant+"/jobs/in-b/events", nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Contains(t, string(r.Body), "JobRunning")

	// Another tenant's user reads nothing of it, whichever cluster.
	t.Cleanup(func() {
		for _, c := range []kubernetes.Interface{e.Cluster.Client(), second.Client()} {
			_ = c.CoreV1().Namespaces().Delete(context.Background(), e.Namespace("others"), metav1.DeleteOptions{})
		}
	})
	e.CreateTenant(t, "others", harness.Subject("mallory", pb.Role_ROLE_ADMIN))
	mallory := e.Token("mallory")
	require.Contains(t, []int{http.StatusNotFound, http.StatusForbidden}, e.REST(mallory).Do(t, "GET", logsPath, nil).Status)
	theirs, err := pb.NewJobServiceClient(e.Conn(t, mallory)).GetJobLogs(ctx, &pb.GetJobLogsRequest{Name: name})
	if err == nil {
		_, err = theirs.Recv()
	}
	require.Contains(t, []codes.Code{codes.NotFound, codes.PermissionDenied}, status.Code(err), "%v", err)
}

// tensorBoardFromB: the TensorBoard of a job in b is proxied from b
// (port-forward with serve's read-only identity there).
func tensorBoardFromB(t *testing.T, s *schedEnv, second *cluster.Cluster) {
	t.Helper()
	e, ctx := s.workerEnv, ctxT(t)
	require.Eventually(t, func() bool {
		_, err := second.Client().RbacV1().RoleBindings(e.ns).Get(ctx, kube.APITensorBoardName, metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "b's worker binds the API server to port-forward in %s", e.ns)
	checkpointClaim(t, second, e.ns, "ckpt")
	tb := startFakeTensorBoard(t)
	forwardPod(t, second, e.ns, "board-tensorboard", tb.addr)
	name := s.submitTo(t, "board", &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Image: "tensorflow/tensorflow:2.16.1",
			PodAnnotations: map[string]string{cluster.AnnotationRunForever: "true"}}},
		Checkpoint:      &pb.CheckpointVolume{ClaimName: "ckpt"},
		Tensorboard:     &pb.TensorBoard{Enabled: true, LogDir: "logs"},
		ClusterSelector: map[string]string{"region": "b"},
	})
	require.Equal(t, "b", s.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING).GetStatus().GetCluster())
	url := e.HTTPURL + "/v1/tenants/" + workerTenant + "/jobs/board/tensorboard/"
	var (
		code int
		page string
	)
	require.Eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.Token("alice"))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, page = resp.StatusCode, string(b)
		return code == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "last answer %d: %s", code, page)
	require.Contains(t, page, `<a href="data/runs">`, "b's TensorBoard pod answered")
	_, err := s.jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: name})
	require.NoError(t, err)
}

// pinnedTenantStaysInDefault: a tenant allowed only `default` gets a
// namespace there and none in b, its jobs run in default, and one asking
// for b waits, saying its tenant may not go there.
func pinnedTenantStaysInDefault(t *testing.T, s *schedEnv, second *cluster.Cluster) {
	t.Helper()
	e, ctx := s.workerEnv, ctxT(t)
	ns := e.Namespace("pinned")
	t.Cleanup(func() {
		_ = e.Cluster.Client().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		_ = second.Client().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	e.CreateTenantWith(t, "pinned", &pb.Tenant{Clusters: []string{"default"},
		Members: []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR)}})
	waitServiceAccount(t, e.Cluster.Client(), ns)
	pinned := &schedEnv{workerEnv: e, tenant: "pinned"}
	cpu := gpuJob(1, 0, 0, annot(cluster.AnnotationRunFor, "1s"))
	toB := gpuJob(1, 0, 0, annot(cluster.AnnotationRunFor, "1s"))
	toB.ClusterSelector = map[string]string{"region": "b"}
	ran := pinned.wait(t, pinned.submitTo(t, "cpu", cpu), 60*time.Second, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, "default", ran.GetStatus().GetCluster())
	waiting := harness.WaitJob(t, s.jobs, pinned.submitTo(t, "to-b", toB), 30*time.Second, func(j *pb.Job) bool { return j.GetStatus().GetQueue() != nil })
	require.Contains(t, waiting.GetStatus().GetQueue().GetMessage(), "its tenant's allowed clusters default")
	_, err := s.jobs.CancelJob(ctx, &pb.CancelJobRequest{Name: harness.JobName("pinned", "to-b")})
	require.NoError(t, err)
	// b's worker reconciled the tenant by now (it is told of every tenant
	// change, as default's was); it made nothing there.
	_, err = second.Client().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no namespace in b for a tenant allowed only default: %v", err)
	require.Empty(t, podsIn(t, second.Client(), ns, "cpu"))
}

// secretsCopiedToB: b's worker, on Postgres, copies a tenant secret from
// default (--home-kubeconfig) into the tenant's namespace in b, follows a
// new put and removes the copy when the secret is deleted.
func secretsCopiedToB(t *testing.T, s *schedEnv, second *cluster.Cluster) {
	t.Helper()
	e, ctx := s.workerEnv, ctxT(t)
	tenants := e.Tenants(t, e.AdminToken())
	name := harness.TenantName(workerTenant) + "/secrets/wandb"
	for _, v := range []string{"first", "second"} {
		_, err := tenants.PutSecret(ctx, &pb.PutSecretRequest{Secret: &pb.Secret{Name: name, Data: map[string]string{"api-key": v}}})
		require.NoError(t, err)
		waitSecretCopy(t, second, e.ns, v)
	}
	_, err := tenants.DeleteSecret(ctx, &pb.DeleteSecretRequest{Name: name})
	require.NoError(t, err)
	waitSecretCopy(t, second, e.ns, "")
}

// startTwoClusters starts Trainyard with a worker in the package's shared
// cluster (`default`, labelled region=a) and one in the second local
// cluster (`b`, region=b, registered first), both with workerArgs, and
// waits until b is READY with its 16 GPUs and the tenant's namespace is
// provisioned in both. It returns the tenant's environment, the second
// cluster, and the arguments that start b's worker again.
func startTwoClusters(t *testing.T, workerArgs ...string) (*schedEnv, *cluster.Cluster, []string) {
	t.Helper()
	waitGPUsFree(t)
	second := harness.SecondCluster(t)
	// The API server reads b's pods (logs, TensorBoard) as deploy/'s
	// trainyard-api there, bound by nothing but what b's worker binds it
	// in tenant namespaces.
	reader := deploytest.RemoteReaderKubeconfig(t, second)
	e := startWorkersServing(t, 1, []string{"--cluster-kubeconfig", "b=" + reader}, workerArgs...)
	ctx := ctxT(t)
	t.Cleanup(func() {
		_ = second.Client().CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	admin := pb.NewClusterServiceClient(e.Conn(t, e.AdminToken()))
	_, err := admin.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/default", Labels: map[string]string{"region": "a"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}})
	require.NoError(t, err)
	_, err = admin.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "b", Cluster: &pb.Cluster{Labels: map[string]string{"region": "b"}}})
	require.NoError(t, err)
	// b's worker copies tenant Secrets from default, where the API server
	// writes them, as deploy/'s worker there.
	bArgs := append([]string{"--kubeconfig", deploytest.WorkerKubeconfig(t, second), "--cluster", "b",
		"--home-kubeconfig", e.WorkerKubeconfig}, workerArgs...)
	e.StartWorker(t, bArgs...)
	waitClusterState(t, admin, "b", pb.ClusterState_CLUSTER_STATE_READY, 90*time.Second)
	waitServiceAccount(t, second.Client(), e.ns)
	return &schedEnv{workerEnv: e, tenant: workerTenant}, second, bArgs
}

// waitClusterState waits until a cluster is in state (READY: with its
// 16 GPUs reported).
func waitClusterState(t *testing.T, admin pb.ClusterServiceClient, name string, state pb.ClusterState, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := admin.GetCluster(ctxT(t), &pb.GetClusterRequest{Name: "clusters/" + name})
		return err == nil && c.GetState() == state && (state != pb.ClusterState_CLUSTER_STATE_READY || c.GetCapacity().GetGpu() == 16)
	}, timeout, 200*time.Millisecond, "cluster %s becomes %s", name, state)
}

// waitServiceAccount waits until a tenant's namespace in a cluster has
// its job ServiceAccount: that cluster's worker has provisioned it.
func waitServiceAccount(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(ctxT(t), kube.DefaultJobServiceAccount, metav1.GetOptions{})
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the tenant's namespace %s is provisioned", ns)
}

// podsIn lists a job's pods in a cluster's namespace.
func podsIn(t *testing.T, c kubernetes.Interface, ns, jobID string) []string {
	t.Helper()
	list, err := c.CoreV1().Pods(ns).List(ctxT(t), metav1.ListOptions{LabelSelector: "trainyard.dev/job=" + jobID})
	require.NoError(t, err)
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// Losing a cluster loses no job: b's worker is killed while a job runs
// there (its kwok pod runs on, and ends, with nobody to report it), then
// b's kube-apiserver; b goes UNREACHABLE after --cluster-timeout, and
// after --cluster-lost-grace the job goes back to the queue (a restart,
// reason ClusterLost) and runs to success in default. When b's control
// plane and worker come back, b is READY again and the pod the moved job
// left there is deleted. The old pod had ended before the new one was
// created: never two runs side by side.
func TestClustersLostClusterJobsMoveElsewhere(t *testing.T) {
	args := []string{"--cluster-heartbeat", "1s", "--cluster-timeout", "4s", "--cluster-lost-grace", "4s", "--lease-ttl", "3s"}
	s, second, bArgs := startTwoClusters(t, args...)
	e, ctx := s.workerEnv, ctxT(t)
	admin := pb.NewClusterServiceClient(e.Conn(t, e.AdminToken()))

	// Cordoned, default takes nothing new: the job goes to b.
	_, err := admin.CordonCluster(ctx, &pb.CordonClusterRequest{Name: "clusters/default"})
	require.NoError(t, err)
	name := s.submitTo(t, "moves", gpuJob(1, 8, 0, annot(cluster.AnnotationRunFor, "5s")))
	j := s.wait(t, name, 60*time.Second, pb.JobState_JOB_STATE_RUNNING)
	require.Equal(t, "b", j.GetStatus().GetCluster())
	_, err = admin.UncordonCluster(ctx, &pb.UncordonClusterRequest{Name: "clusters/default"})
	require.NoError(t, err)
	require.Len(t, podsIn(t, second.Client(), e.ns, "moves"), 1)

	workerB := e.Workers[len(e.Workers)-1]
	workerB.Kill()
	// The run in b ends (kwok runs its 5 s) with nobody to report it; then
	// b's control plane goes too.
	var oldEnd time.Time
	require.Eventually(t, func() bool {
		pods, err := second.Client().CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "trainyard.dev/job=moves"})
		if err != nil || len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) == 0 {
			return false
		}
		st := pods.Items[0].Status.ContainerStatuses[0].State.Terminated
		if st != nil {
			oldEnd = st.FinishedAt.Time
		}
		return st != nil
	}, 30*time.Second, 100*time.Millisecond, "the run in b ends")
	require.NoError(t, second.Kill("kube-apiserver"))
	waitClusterState(t, admin, "b", pb.ClusterState_CLUSTER_STATE_UNREACHABLE, 30*time.Second)
	j = s.wait(t, name, 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	require.Equal(t, "default", j.GetStatus().GetCluster(), "it ran to the end in default")
	require.EqualValues(t, 1, j.GetStatus().GetRestarts(), "moving is one restart")
	events, err := s.jobs.ListJobEvents(ctx, &pb.ListJobEventsRequest{Parent: name, PageSize: 200})
	require.NoError(t, err)
	var lost string
	for _, ev := range events.GetEvents() {
		if ev.GetReason() == "ClusterLost" {
			lost = ev.GetMessage()
		}
	}
	require.Contains(t, lost, `cluster "b" has not answered`)

	// The run in b had ended before the one in default was created.
	newPods, err := e.Cluster.Client().CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "trainyard.dev/job=moves"})
	require.NoError(t, err)
	require.NotEmpty(t, newPods.Items)
	for _, p := range newPods.Items {
		require.True(t, oldEnd.Before(p.CreationTimestamp.Time.Add(time.Second)),
			"the old run ended (%s) before the new one began (%s)", oldEnd, p.CreationTimestamp)
	}

	// b's control plane and worker back: b is READY, and what the moved
	// job left there goes.
	restarted, err := second.RestartExited(ctx)
	require.NoError(t, err)
	require.Contains(t, restarted, "kube-apiserver")
	// A kube-apiserver just started refuses by RBAC for a moment (its
	// caches fill): wait until it grants b's worker identity what it had.
	workerCfg, err := clientcmd.BuildConfigFromFlags("", deploytest.WorkerKubeconfig(t, second))
	require.NoError(t, err)
	asWorker := kubernetes.NewForConfigOrDie(workerCfg)
	require.Eventually(t, func() bool {
		_, err := asWorker.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	}, 60*time.Second, 200*time.Millisecond, "b's kube-apiserver authorizes its worker again")
	e.StartWorker(t, bArgs...)
	waitClusterState(t, admin, "b", pb.ClusterState_CLUSTER_STATE_READY, 60*time.Second)
	require.Eventually(t, func() bool { return len(podsIn(t, second.Client(), e.ns, "moves")) == 0 }, 90*time.Second, 200*time.Millisecond,
		"b's worker deletes the moved job's old pod")
}
