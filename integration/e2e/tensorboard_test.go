//go:build integration

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// TensorBoard through the API server (issue 10): the real server and
// worker, deploy/'s RBAC for both (the API server port-forwards with the
// one right the worker's RoleBinding gives it in the tenant namespace), the
// local cluster's API server and simulated kubelet, which forwards the
// TensorBoard pod's port 6006 to a server this test runs in its place.

// fakeTensorBoard answers like TensorBoard: an index page with relative
// links, a JSON list, and a POST endpoint (the time series plugin's).
type fakeTensorBoard struct {
	mu      sync.Mutex
	headers []http.Header
	addr    *net.TCPAddr
}

func startFakeTensorBoard(t *testing.T) *fakeTensorBoard {
	t.Helper()
	f := &fakeTensorBoard{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		fmt.Fprint(w, `<html><script src="./index.js"></script><a href="data/runs">runs</a></html>`)
	})
	mux.HandleFunc("GET /data/runs", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `["train","eval"] %s`, r.URL.RawQuery)
	})
	mux.HandleFunc("POST /data/plugin/timeseries/timeSeries", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "echo %s", b)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	f.addr = ln.Addr().(*net.TCPAddr)
	return f
}

func (f *fakeTensorBoard) record(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.headers = append(f.headers, r.Header.Clone())
}

// forwardPod points port-forwards to pod's 6006 at target (a kwok
// PortForward object, which the simulated kubelet follows).
func forwardPod(t *testing.T, c *cluster.Cluster, ns, pod string, target *net.TCPAddr) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	pf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
		"metadata": map[string]any{"name": pod, "namespace": ns},
		"spec": map[string]any{"forwards": []any{map[string]any{
			"ports":  []any{int64(6006)},
			"target": map[string]any{"address": target.IP.String(), "port": int64(target.Port)},
		}}},
	}}
	_, err = dyn.Resource(cluster.KwokPortForwardResource()).Namespace(ns).Create(ctxT(t), pf, metav1.CreateOptions{})
	require.NoError(t, err)
}

// checkpointClaim makes a PersistentVolumeClaim bound to a PersistentVolume
// of its own, so that pods mounting it can be scheduled.
func checkpointClaim(t *testing.T, c *cluster.Cluster, ns, name string) {
	t.Helper()
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
		},
	}
	_, err := c.Client().CoreV1().PersistentVolumes().Create(ctxT(t), pv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Client().CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			StorageClassName: &empty,
			VolumeName:       pv.Name,
		},
	}
	_, err = c.Client().CoreV1().PersistentVolumeClaims(ns).Create(ctxT(t), pvc, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestTensorBoardProxy(t *testing.T) {
	c := harness.Cluster(t)
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR), harness.Subject("vera", pb.Role_ROLE_VIEWER))
	env.CreateTenant(t, "beta", harness.Subject("bob", pb.Role_ROLE_EDITOR))
	ns := env.Namespace("acme")
	t.Cleanup(func() {
		_ = c.Client().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		_ = c.Client().CoreV1().Namespaces().Delete(context.Background(), env.Namespace("beta"), metav1.DeleteOptions{})
	})
	require.Eventually(t, func() bool {
		_, err := c.Client().RbacV1().RoleBindings(ns).Get(ctxT(t), kube.APITensorBoardName, metav1.GetOptions{})
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "the worker never bound the API server to port-forward in %s", ns)
	checkpointClaim(t, c, ns, "ckpt")
	tb := startFakeTensorBoard(t)
	forwardPod(t, c, ns, "board-tensorboard", tb.addr)

	jobs := env.Jobs(t, env.Token("alice"))
	_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "board", Job: &pb.Job{Spec: &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Image: "tensorflow/tensorflow:2.16.1",
			PodAnnotations: map[string]string{"sim.trainyard.dev/run-forever": "true"}}},
		Checkpoint:  &pb.CheckpointVolume{ClaimName: "ckpt"},
		Tensorboard: &pb.TensorBoard{Enabled: true, LogDir: "logs"},
	}}})
	require.NoError(t, err)
	harness.WaitJob(t, jobs, "tenants/acme/jobs/board", 2*time.Minute, harness.InState(pb.JobState_JOB_STATE_RUNNING))

	base := env.HTTPURL + "/v1/tenants/acme/jobs/board/tensorboard"
	// send makes req (redirects not followed) and returns the response
	// with its body read.
	send := func(req *http.Request) (*http.Response, string) {
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	get := func(token, method, url, body string) (int, string, http.Header) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Cookie", "session=secret-cookie")
		resp, b := send(req)
		return resp.StatusCode, b, resp.Header
	}
	viewer := env.Token("vera")

	// A viewer reaches it, once the TensorBoard pod runs and the kubelet forwards.
	var code int
	var page string
	require.Eventually(t, func() bool {
		code, page, _ = get(viewer, http.MethodGet, base+"/", "")
		return code == http.StatusOK
	}, 60*time.Second, 200*time.Millisecond, "last answer %d: %s", code, page)
	require.Contains(t, page, `<a href="data/runs">`)

	// Relative URLs resolve under the prefix; the bare prefix redirects to it.
	code, _, hdr := get(viewer, http.MethodGet, base, "")
	require.Equal(t, http.StatusMovedPermanently, code)
	require.Equal(t, "/v1/tenants/acme/jobs/board/tensorboard/", hdr.Get("Location"))
	code, body, _ := get(viewer, http.MethodGet, base+"/data/runs?experiment=x%2Fy", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `["train","eval"] experiment=x%2Fy`, body)
	code, body, _ = get(viewer, http.MethodPost, base+"/data/plugin/timeseries/timeSeries", `requests=[{"plugin":"scalars"}]`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `echo requests=[{"plugin":"scalars"}]`, body)

	// A browser: :open puts the bearer token in a cookie for this job's
	// proxy path only, and a link then works with the cookie alone.
	req, err := http.NewRequest(http.MethodPost, base+":open", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewer)
	resp, opened := send(req)
	require.Equal(t, http.StatusOK, resp.StatusCode, opened)
	require.JSONEq(t, `{"url":"/v1/tenants/acme/jobs/board/tensorboard/"}`, opened)
	require.Len(t, resp.Cookies(), 1)
	cookie := resp.Cookies()[0]
	require.Equal(t, viewer, cookie.Value)
	require.Equal(t, "/v1/tenants/acme/jobs/board/tensorboard/", cookie.Path)
	require.True(t, cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	withCookie := func(c *http.Cookie, method, url string) (int, string) {
		req, err := http.NewRequest(method, url, nil)
		require.NoError(t, err)
		req.AddCookie(c)
		resp, b := send(req)
		return resp.StatusCode, b
	}
	code, body = withCookie(cookie, http.MethodGet, base+"/data/runs")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, `["train","eval"] `, body)
	// The cookie can not open anything itself, and another tenant's
	// member's token is refused in a cookie as in a header.
	code, body = withCookie(cookie, http.MethodPost, base+":open")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = withCookie(&http.Cookie{Name: cookie.Name, Value: env.Token("bob")}, http.MethodGet, base+"/")
	require.Equal(t, http.StatusNotFound, code, body)

	// The caller's credentials never reach TensorBoard.
	tb.mu.Lock()
	for _, h := range tb.headers {
		require.Empty(t, h.Get("Authorization"))
		require.Empty(t, h.Get("Cookie"))
	}
	tb.mu.Unlock()

	// Another tenant's member: 404, as GetJob answers. No token: 401.
	code, body, _ = get(env.Token("bob"), http.MethodGet, base+"/", "")
	require.Equal(t, http.StatusNotFound, code, body)
	code, body, _ = get("", http.MethodGet, base+"/", "")
	require.Equal(t, http.StatusUnauthorized, code, body)

	// A job without TensorBoard: 404 that says so.
	_, err = jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/acme", JobId: "plain", Job: &pb.Job{Spec: &pb.JobSpec{
		Replicas: []*pb.ReplicaSpec{{Type: pb.ReplicaType_REPLICA_TYPE_CHIEF, Image: "tensorflow/tensorflow:2.16.1"}}}}})
	require.NoError(t, err)
	code, body, _ = get(viewer, http.MethodGet, env.HTTPURL+"/v1/tenants/acme/jobs/plain/tensorboard/", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "has no TensorBoard")
}
