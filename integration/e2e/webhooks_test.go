//go:build integration

package e2e

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/deploytest"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// receiver is a webhook receiver as a CI system would run one: it checks
// every request's Standard Webhooks signature with its own code (below,
// from the specification: HMAC-SHA256 over "id.timestamp.body" with the
// base64-decoded part of "whsec_...", compared with each "v1,<base64>" of
// webhook-signature, timestamp within 5 minutes), de-duplicates on
// webhook-id and keeps each job's event types in the order they first
// arrived. It can be taken down (its port refuses connections) and brought
// back on the same port.
type receiver struct {
	t    *testing.T
	key  []byte
	addr string

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	bodies map[string][]byte   // webhook-id → body (a repeat must be identical)
	byJob  map[string][]string // subject → types, first arrivals in order
	bad    []string
}

func newReceiver(t *testing.T, secret string) *receiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	r := &receiver{t: t, key: key, bodies: map[string][]byte{}, byJob: map[string][]string{}}
	r.up()
	t.Cleanup(r.down)
	return r
}

func (r *receiver) up() {
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	require.Eventually(r.t, func() bool {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	r.mu.Lock()
	r.addr, r.ln = ln.Addr().String(), ln
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	srv := r.srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (r *receiver) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		_ = r.srv.Close()
		r.srv = nil
	}
}

func (r *receiver) port() string {
	_, port, _ := net.SplitHostPort(r.addr)
	return port
}

// verify is the Standard Webhooks check, written from the specification.
func (r *receiver) verify(h http.Header, body []byte) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q", ts)
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s is off by %s", ts, d)
	}
	mac := hmac.New(sha256.New, r.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, b64, ok := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no valid v1 signature in %q", sigs)
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.verify(req.Header, body); err != nil {
		r.bad = append(r.bad, err.Error())
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	id := req.Header.Get("webhook-id")
	var ce struct {
		SpecVersion string          `json:"specversion"`
		Type        string          `json:"type"`
		Source      string          `json:"source"`
		Subject     string          `json:"subject"`
		ID          string          `json:"id"`
		Time        time.Time       `json:"time"`
		Data        json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &ce); err != nil || ce.SpecVersion != "1.0" || ce.ID != id || ce.Source == "" || ce.Time.IsZero() ||
		req.Header.Get("Content-Type") != "application/cloudevents+json" {
		r.bad = append(r.bad, fmt.Sprintf("not a structured CloudEvent with id %s: %s", id, body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if prev, ok := r.bodies[id]; ok {
		if string(prev) != string(body) {
			r.bad = append(r.bad, "webhook-id "+id+" came twice with different bodies")
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	r.bodies[id] = body
	if strings.HasPrefix(ce.Type, "dev.trainyard.job.") {
		var data struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(ce.Data, &data)
		if !strings.HasSuffix(data.Name, "/jobs/"+ce.Subject) {
			r.bad = append(r.bad, fmt.Sprintf("%s: data is not job %s: %s", id, ce.Subject, ce.Data))
		}
	}
	r.byJob[ce.Subject] = append(r.byJob[ce.Subject], strings.TrimPrefix(ce.Type, "dev.trainyard."))
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) events(subject string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byJob[subject])
}

func (r *receiver) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// tyctlAs runs tyctl against addr as user in tenant.
func tyctlAs(t *testing.T, env *harness.Env, addr, tenant, user string, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(harness.Binary(t)), "tyctl")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TYCTL_SERVER="+addr, "TYCTL_INSECURE=true", "TYCTL_TENANT="+tenant,
		"TYCTL_TOKEN="+env.Token(user), "TYCTL_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const hooksTenant = "hooks"

// Every event of the jobs a webhook selects reaches a real receiver, signed
// (checked by the receiver's own Standard Webhooks code), once per
// webhook-id and in order per job — also the events written while the
// receiver was down and the API server, the worker and the deliverer were
// killed. A webhook to a disallowed address is refused at creation, and at
// delivery once its host name resolves to a private address.
func TestWebhooksDeliverEveryEventThroughCrashes(t *testing.T) {
	c := harness.Cluster(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte("127.0.0.1 receiver.test\n"), 0o600))
	policy := []string{"--webhook-allow-loopback", "--webhook-hosts-file", hosts}
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1, ServeArgs: policy})
	env.CreateTenant(t, hooksTenant, harness.Subject("ada", pb.Role_ROLE_ADMIN))
	we := &workerEnv{Env: env, jobs: env.Jobs(t, env.Token("ada")), ns: env.Namespace(hooksTenant)}
	we.waitNamespace(t)

	// The deliverer, as deploy/ runs it: its own identity, which may only read Secrets.
	webhooksKubeconfig := deploytest.WebhooksKubeconfig(t, c)
	startDeliverer := func() *harness.Process {
		return harness.StartProcess(t, "webhooks", harness.Binary(t), append([]string{"webhooks",
			"--database-url", env.DatabaseURL, "--kubeconfig", webhooksKubeconfig, "--metrics-addr", "127.0.0.1:0"}, policy...)...)
	}
	deliverer := startDeliverer()

	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(raw)
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret), 0o600))
	recv := newReceiver(t, secret)
	url := "http://receiver.test:" + recv.port() + "/hooks/trainyard"

	// Created with tyctl by a tenant admin.
	out, err := tyctlAs(t, env, env.GRPCAddr, hooksTenant, "ada", "webhooks", "create", "ci", "--url", url,
		"--events", "all", "--selector", "pipeline=train", "--secret-file", secretFile)
	require.NoError(t, err, out)
	require.Contains(t, out, "webhook ci created")
	hooks := pb.NewWebhookServiceClient(env.Conn(t, env.Token("ada")))
	got, err := hooks.GetWebhook(ctxT(t), &pb.GetWebhookRequest{Name: "tenants/hooks/webhooks/ci"})
	require.NoError(t, err)
	require.Empty(t, got.GetSigningSecret(), "write-only")
	require.Equal(t, pb.WebhookState_WEBHOOK_STATE_ACTIVE, got.GetState())
	requireNotInDatabase(t, env.DatabaseURL, strings.TrimPrefix(secret, "whsec_"))

	submit := func(jobs pb.JobServiceClient, id string, labels map[string]string) {
		t.Helper()
		_, err := jobs.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: harness.TenantName(hooksTenant), JobId: id,
			Job: &pb.Job{Labels: labels, Spec: &pb.JobSpec{Replicas: []*pb.ReplicaSpec{
				rep(pb.ReplicaType_REPLICA_TYPE_WORKER, 1, annot(cluster.AnnotationRunFor, "2s"))}}}})
		require.NoError(t, err, "create job %s", id)
	}
	// What each job's events say the webhook gets: a job whose worker was
	// dead while it ran goes from STARTING to SUCCEEDED, never RUNNING.
	topics := map[string]string{"Queued": "job.created", "Admitted": "job.admitted", "JobRunning": "job.running", "JobSucceeded": "job.succeeded"}
	expected := func(jobs pb.JobServiceClient, id string) []string {
		t.Helper()
		resp, err := jobs.ListJobEvents(ctxT(t), &pb.ListJobEventsRequest{Parent: harness.JobName(hooksTenant, id)})
		require.NoError(t, err)
		var out []string
		for _, e := range resp.GetEvents() {
			if tp, ok := topics[e.GetReason()]; ok {
				out = append(out, tp)
			}
		}
		return out
	}
	delivered := 0
	waitEvents := func(jobs pb.JobServiceClient, ids []string, timeout time.Duration) {
		t.Helper()
		delivered = 0
		for _, id := range ids {
			want := expected(jobs, id)
			require.Contains(t, want, "job.succeeded")
			require.Eventually(t, func() bool { return len(recv.events(id)) >= len(want) }, timeout, 100*time.Millisecond,
				"job %s: the receiver has %v of %v", id, recv.events(id), want)
			require.Equal(t, want, recv.events(id), "job %s: every event once, in order", id)
			delivered += len(want)
		}
	}

	// While all runs.
	submit(we.jobs, "prep", map[string]string{"pipeline": "train"})
	submit(we.jobs, "train", map[string]string{"pipeline": "train"})
	submit(we.jobs, "other", map[string]string{"pipeline": "eval"}) // not selected
	for _, id := range []string{"prep", "train"} {
		we.wait(t, harness.JobName(hooksTenant, id), 90*time.Second, pb.JobState_JOB_STATE_SUCCEEDED)
	}
	waitEvents(we.jobs, []string{"prep", "train"}, 90*time.Second)

	// The receiver goes down; jobs run; every process is killed and started again.
	recv.down()
	submit(we.jobs, "publish", map[string]string{"pipeline": "train"})
	submit(we.jobs, "report", map[string]string{"pipeline": "train"})
	we.wait(t, harness.JobName(hooksTenant, "publish"), 60*time.Second, pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_SUCCEEDED)
	deliverer.Kill()
	env.Server.Kill()
	env.Workers[0].Kill()
	_, grpcAddr, _ := env.StartServer(t)
	env.StartWorker(t)
	deliverer = startDeliverer()
	jobs := pb.NewJobServiceClient(harness.Dial(t, grpcAddr, env.Token("ada")))
	for _, id := range []string{"publish", "report"} {
		harness.WaitJob(t, jobs, harness.JobName(hooksTenant, id), 90*time.Second, harness.InState(pb.JobState_JOB_STATE_SUCCEEDED))
	}
	require.Empty(t, recv.events("publish"), "the receiver was down")
	recv.up()
	waitEvents(jobs, []string{"prep", "train", "publish", "report"}, 120*time.Second)
	require.Empty(t, recv.events("other"), "the selector left it out")
	require.Empty(t, recv.problems())

	// The delivery log, by tyctl.
	out, err = tyctlAs(t, env, grpcAddr, hooksTenant, "ada", "webhooks", "deliveries", "ci", "--limit", "100")
	require.NoError(t, err, out)
	require.Contains(t, out, "job.succeeded")
	require.Contains(t, out, "SUCCEEDED")
	require.NotContains(t, out, "PENDING")
	hooks = pb.NewWebhookServiceClient(harness.Dial(t, grpcAddr, env.Token("ada")))
	list, err := hooks.ListWebhookDeliveries(ctxT(t), &pb.ListWebhookDeliveriesRequest{Parent: "tenants/hooks/webhooks/ci", PageSize: 100})
	require.NoError(t, err)
	require.Len(t, list.GetDeliveries(), delivered)
	retried := 0
	for _, d := range list.GetDeliveries() {
		require.Equal(t, pb.DeliveryState_DELIVERY_STATE_SUCCEEDED, d.GetState())
		require.EqualValues(t, 204, d.GetLastStatusCode())
		if d.GetAttempts() > 1 {
			retried++
		}
	}
	require.NotZero(t, retried, "deliveries while the receiver was down were retried")

	// A ping, and a redelivery by hand with the same webhook-id.
	out, err = tyctlAs(t, env, grpcAddr, hooksTenant, "ada", "webhooks", "ping", "ci")
	require.NoError(t, err, out)
	require.Contains(t, out, "webhook.ping")
	require.Contains(t, out, "204")
	first := list.GetDeliveries()[len(list.GetDeliveries())-1]
	again, err := hooks.RedeliverWebhookDelivery(ctxT(t), &pb.RedeliverWebhookDeliveryRequest{Name: first.GetName()})
	require.NoError(t, err)
	require.Equal(t, first.GetMessageId(), again.GetMessageId())
	require.Eventually(t, func() bool {
		d, err := hooks.GetWebhookDelivery(ctxT(t), &pb.GetWebhookDeliveryRequest{Name: first.GetName()})
		return err == nil && d.GetState() == pb.DeliveryState_DELIVERY_STATE_SUCCEEDED
	}, 30*time.Second, 100*time.Millisecond)
	require.Empty(t, recv.problems(), "the redelivery is the same message")

	// Outbound safety: refused at creation...
	for _, bad := range []string{"http://10.1.2.3/hook", "http://169.254.169.254/latest", "http://[::1]:80/"} {
		_, err := hooks.CreateWebhook(ctxT(t), &pb.CreateWebhookRequest{Parent: "tenants/hooks", WebhookId: "bad",
			Webhook: &pb.Webhook{Url: bad, EventTypes: []pb.WebhookEventType{pb.WebhookEventType_WEBHOOK_EVENT_TYPE_JOB_SUCCEEDED}, SigningSecret: secret}})
		if bad == "http://[::1]:80/" {
			require.NoError(t, err, "loopback is open in this test (--webhook-allow-loopback)")
			_, err = hooks.DeleteWebhook(ctxT(t), &pb.DeleteWebhookRequest{Name: "tenants/hooks/webhooks/bad"})
			require.NoError(t, err)
			continue
		}
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", bad, err)
		require.Contains(t, status.Convert(err).Message(), "webhook.url")
	}
	// ...and at delivery, once the receiver's name resolves to a private address.
	// (The receiver restarts too: a connection kept alive was checked when it
	// was made, and would still be used; a new one is checked again.)
	pings := len(recv.events("ci"))
	require.NoError(t, os.WriteFile(hosts, []byte("10.255.0.9 receiver.test\n"), 0o600))
	recv.down()
	recv.up()
	ping, err := hooks.PingWebhook(ctxT(t), &pb.PingWebhookRequest{Name: "tenants/hooks/webhooks/ci"})
	require.NoError(t, err)
	var refused *pb.WebhookDelivery
	require.Eventually(t, func() bool {
		refused, err = hooks.GetWebhookDelivery(ctxT(t), &pb.GetWebhookDeliveryRequest{Name: ping.GetName()})
		return err == nil && strings.Contains(refused.GetLastError(), "10.255.0.9")
	}, 60*time.Second, 100*time.Millisecond, "the ping: %v", refused)
	require.Equal(t, pb.DeliveryState_DELIVERY_STATE_PENDING, refused.GetState())
	require.Contains(t, refused.GetLastError(), "not allowed")
	require.Len(t, recv.events("ci"), pings, "the ping never reached the receiver")
	_, err = hooks.UpdateWebhook(ctxT(t), &pb.UpdateWebhookRequest{Webhook: &pb.Webhook{Name: "tenants/hooks/webhooks/ci", Url: url}})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "the same URL is refused now: %v", err)

	// Every change is in the audit log, without the secret.
	audit := pb.NewAuditServiceClient(harness.Dial(t, grpcAddr, env.Token("ada")))
	recs, err := audit.ListAuditRecords(ctxT(t), &pb.ListAuditRecordsRequest{Parent: "tenants/hooks"})
	require.NoError(t, err)
	actions := map[string]bool{}
	for _, r := range recs.GetAuditRecords() {
		actions[r.GetAction()] = true
		require.NotContains(t, jsonOf(t, r.GetDetails().AsMap()), strings.TrimPrefix(secret, "whsec_"))
	}
	for _, a := range []string{"webhook.create", "webhook.ping", "webhook.redeliver", "webhook.delete"} {
		require.True(t, actions[a], "audit log has no %s: %v", a, actions)
	}
	_ = deliverer
}
