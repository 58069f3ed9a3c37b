//go:build integration

package console

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/auth/oidctest"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// consoleEnv is Trainyard with two tenants: vision (alice edits; a quota
// of 2 GPUs) and speech (bob edits), and one browser.
type consoleEnv struct {
	*harness.Env
	browser *browser
	alice   pb.JobServiceClient
}

func startConsole(t *testing.T) *consoleEnv {
	t.Helper()
	// Dev auth turns the console's token field on; the tokens pasted into
	// it are the test issuer's JWTs, which carry an expiry.
	devTokens := filepath.Join(t.TempDir(), "tokens.yaml")
	require.NoError(t, os.WriteFile(devTokens, []byte("tokens:\n  - {token: carol-local-token, subject: carol}\n"), 0o600))
	env := harness.Start(t, harness.Options{Cluster: true, Workers: 1, ServeArgs: []string{"--dev-auth", devTokens},
		DatabaseProxy: true}) // for JobsPageComesUpAfterAnOutage
	env.CreateTenantWith(t, "vision", &pb.Tenant{
		DisplayName: "Vision team",
		Quota:       &pb.Quota{Gpu: 2, Cpu: "32", Memory: "128Gi", Pods: 20},
		Members:     []*pb.Member{harness.Subject("alice", pb.Role_ROLE_EDITOR), harness.Group("vision-admins", pb.Role_ROLE_ADMIN)},
		Clusters:    []string{"default"}, // the tenant page shows its allowed clusters
	})
	env.CreateTenant(t, "speech", harness.Subject("bob", pb.Role_ROLE_EDITOR))
	ns := env.Namespace("vision")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range []string{ns, env.Namespace("speech")} {
			_ = env.Cluster.Client().CoreV1().Namespaces().Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	// A secret, for the tenant page; its namespace comes from the worker.
	require.Eventually(t, func() bool {
		_, err := env.Tenants(t, env.AdminToken()).PutSecret(ctxT(t), &pb.PutSecretRequest{Secret: &pb.Secret{
			Name: "tenants/vision/secrets/hf-token", Data: map[string]string{"token": "hf_not_a_real_token"},
		}})
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the worker never provisioned namespace %s", ns)
	return &consoleEnv{Env: env, browser: newBrowser(t), alice: env.Jobs(t, env.Token("alice"))}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// submit creates a job in vision as alice.
func (e *consoleEnv) submit(t *testing.T, id string, replicas ...*pb.ReplicaSpec) {
	t.Helper()
	_, err := e.alice.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/vision", JobId: id, Job: &pb.Job{
		Labels: map[string]string{"team": "vision"},
		Spec:   &pb.JobSpec{Replicas: replicas, RunPolicy: &pb.RunPolicy{BackoffLimit: new(int32(0)), TtlSecondsAfterFinished: new(int32(0))}},
	}})
	require.NoError(t, err, "create job %s", id)
}

func replica(t pb.ReplicaType, gpu int32, annotations map[string]string) *pb.ReplicaSpec {
	return &pb.ReplicaSpec{
		Type: t, Count: 1, Image: "tensorflow/tensorflow:2.16.1", Command: []string{"python", "train.py"},
		Resources: &pb.Resources{Cpu: "1", Memory: "2Gi", Gpu: gpu}, PodAnnotations: annotations,
	}
}

func (e *consoleEnv) waitState(t *testing.T, id string, states ...pb.JobState) {
	t.Helper()
	harness.WaitJob(t, e.alice, harness.JobName("vision", id), 90*time.Second, harness.InState(states...))
}

// mnistYAML is what alice pastes: 1 chief + 1 worker with a GPU, which
// waits for quota while warmup holds both of the tenant's GPUs.
const mnistYAML = `displayName: MNIST from the console
labels:
  team: vision
spec:
  replicas:
    - type: CHIEF
      image: tensorflow/tensorflow:2.16.1
      command: [python, /app/train.py]
      resources: {cpu: 1, memory: 2Gi}
      podAnnotations: {sim.trainyard.dev/run-for: 3s}
    - type: WORKER
      image: tensorflow/tensorflow:2.16.1
      command: [python, /app/train.py]
      resources: {cpu: 2, memory: 4Gi, gpu: 1}
      podAnnotations: {sim.trainyard.dev/run-for: 3s}
`

// tfjobYAML is an unmodified Kubeflow TFJob; its name becomes the job's id.
const tfjobYAML = `apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: from-kubeflow
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations: {sim.trainyard.dev/run-for: 2s}
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [python, /opt/mnist.py]
`

// TestConsole walks the console through a working day, one step a
// subtest, in one browser: each step builds on the jobs of the last.
func TestConsole(t *testing.T) {
	e := startConsole(t)
	aliceTab := e.browser.tab(t, e.HTTPURL)
	// The tokens pasted into the browser, to look for in the logs after.
	aliceToken, bobToken, adminToken := e.Token("alice"), e.Token("bob"), e.AdminToken()

	t.Run("SignInWithToken", func(t *testing.T) {
		alice := aliceTab.in(t)
		alice.open("/tenants/vision/jobs")
		alice.waitJS(`location.pathname === "/signin"`, 10*time.Second)
		alice.signIn(aliceToken)
		alice.waitText("main h1", "Jobs in vision", 10*time.Second)
		require.Equal(t, "/tenants/vision/jobs", alice.location(), "back where the sign-in started")
		require.Contains(t, alice.text("header .who"), "alice")
	})

	t.Run("SignInWithTheIssuer", func(t *testing.T) {
		// Authorization code with PKCE against the test issuer, which
		// logs alice in at once and sends the browser back with a code.
		tb := e.browser.tab(t, e.HTTPURL)
		tb.open("/tenants/vision/jobs")
		tb.click(`main.signin button.primary`)
		tb.waitText("main h1", "Jobs in vision", 20*time.Second)
		require.Equal(t, "/tenants/vision/jobs", tb.location())
		require.Empty(t, eval[string](tb, `location.search`), "the code is gone from the address bar")
		require.Equal(t, 1, e.Issuer.TokenRequests("authorization_code"))
		tb.click(`header.top button`) // sign out
		tb.waitJS(`location.pathname === "/signin"`, 10*time.Second)
	})

	t.Run("SubmitFromYAMLAppearsLiveAndRunsToSuccess", func(t *testing.T) {
		alice := aliceTab.in(t)
		e.submit(t, "warmup", replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 2, map[string]string{cluster.AnnotationRunFor: "15s"}))
		e.waitState(t, "warmup", pb.JobState_JOB_STATE_RUNNING)
		alice.waitText(`tr[data-job="warmup"] [data-testid=state]`, "RUNNING", 20*time.Second)
		alice.waitText(`tr[data-job="warmup"] [data-testid=cluster]`, "default", 10*time.Second) // where it runs, a column

		// Every state the list shows for mnist, as it shows it: the page
		// is never reloaded, so each one came from the watch.
		eval[bool](alice, `(() => {
			window.__states = [];
			new MutationObserver(() => {
				const s = document.querySelector('tr[data-job="mnist"] [data-testid=state]');
				const v = s && s.innerText;
				if (v && window.__states[window.__states.length - 1] !== v) window.__states.push(v);
			}).observe(document.body, { subtree: true, childList: true, characterData: true });
			return true;
		})()`)
		alice.click(`a[href="/tenants/vision/submit"].button`)
		alice.setValue("#jobfile", mnistYAML)
		alice.setValue(`input[placeholder="generated when empty"]`, "mnist")
		alice.click(`form.submit button[type=submit]`)
		alice.waitJS(`location.pathname === "/tenants/vision/jobs"`, 10*time.Second)
		alice.waitText(`tr[data-job="mnist"] [data-testid=state]`, "QUEUED", 20*time.Second)
		alice.waitText(`tr[data-job="mnist"]`, "quota", 20*time.Second)
		alice.screenshot("jobs.png", false)

		admin := e.browser.tab(t, e.HTTPURL)
		admin.signIn(adminToken)
		admin.open("/tenants/vision")
		admin.waitText(".quota", "2 of 2", 20*time.Second)
		admin.waitText("main", "hf-token", 10*time.Second) // secrets come in their own call
		require.Equal(t, "default", admin.text(`[data-testid=tenant-clusters]`), "the clusters the tenant is allowed")
		admin.screenshot("tenant.png", false)

		alice.waitJS(`window.__states.includes("SUCCEEDED")`, 90*time.Second)
		states := eval[[]string](alice, `window.__states`)
		require.Equal(t, []string{"QUEUED", "RUNNING", "SUCCEEDED"}, without(states, "STARTING"), "states shown: %v", states)
	})

	t.Run("ValidationErrorNextToItsField", func(t *testing.T) {
		alice := aliceTab.in(t)
		alice.open("/tenants/vision/submit")
		alice.setValue("#jobfile", strings.Replace(mnistYAML, "gpu: 1", "gpu: -1", 1))
		alice.click(`form.submit button[type=submit]`)
		sel := `.violation[data-field="spec.replicas[1].resources.gpu"]`
		alice.waitJS(`!!document.querySelector(`+jsString(sel)+`)`, 10*time.Second)
		line := eval[string](alice, `document.querySelector(`+jsString(sel)+`).closest("li").querySelector("code").innerText`)
		require.Contains(t, line, "gpu: -1", "the violation stands under the line of its field")
		require.Equal(t, "/tenants/vision/submit", alice.location(), "nothing was submitted")

		// What the server's job-file reader (jobs:parse) refuses is shown
		// the same way: the typo's line, with the suggestion.
		alice.setValue("#jobfile", strings.Replace(mnistYAML, "gpu: 1", "gpus: 1", 1))
		alice.click(`form.submit button[type=submit]`)
		sel = `.violation[data-field="spec.replicas[1].resources.gpus"]`
		alice.waitJS(`!!document.querySelector(`+jsString(sel)+`)`, 10*time.Second)
		line = eval[string](alice, `document.querySelector(`+jsString(sel)+`).closest("li").querySelector("code").innerText`)
		require.Contains(t, line, "gpus: 1")
		require.Contains(t, eval[string](alice, `document.querySelector(`+jsString(sel)+`).innerText`), "did you mean gpu?")
		require.Equal(t, "/tenants/vision/submit", alice.location(), "nothing was submitted")
	})

	t.Run("ReplicaLogsLiveAndAfterCleanup", func(t *testing.T) {
		alice := aliceTab.in(t)
		e.submit(t, "flaky",
			replica(pb.ReplicaType_REPLICA_TYPE_CHIEF, 0, map[string]string{cluster.AnnotationRunFor: "12s", cluster.AnnotationExitCode: "1"}),
			replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 0, map[string]string{cluster.AnnotationRunForever: "true"}))
		alice.open("/tenants/vision/jobs/flaky")
		alice.waitText(`[data-testid=job-state]`, "RUNNING", 30*time.Second)
		require.Equal(t, "default", alice.text(`[data-testid=job-cluster]`), "the cluster that runs it")
		alice.waitJS(`document.querySelector("pre.log").dataset.status === "streaming" &&
			document.querySelector("pre.log").innerText.includes("`+cluster.LogLineStep+`10 ")`, 20*time.Second)
		require.Contains(t, alice.text(`[data-testid=job-state]`), "RUNNING", "the log was read live, while the replica ran")
		require.Contains(t, alice.text(`code.command`), "tyctl jobs logs flaky --tenant vision --replica chief-0 --follow")

		alice.click(`tr[data-replica="chief-0"] details summary`)
		require.Contains(t, alice.text(`tr[data-replica="chief-0"] pre.tfconfig`), `"chief"`)

		alice.waitText(`[data-testid=job-state]`, "FAILED", 60*time.Second)
		// The timeline drew the run and the end from the job's events.
		alice.waitJS(`!!document.querySelector('figure.jobline .jobline-seg[data-state=RUNNING]') &&
			!!document.querySelector('figure.jobline .jobline-seg[data-state=FAILED]') &&
			!!document.querySelector('figure.jobline .jobline-mark[data-kind=end]')`, 20*time.Second)
		waitNoPods(t, e, "flaky")
		alice.click(`.log-controls input[type=checkbox]`) // stop following: read what is kept
		alice.waitText(`pre.log`, cluster.LogLineFailed, 20*time.Second)
		alice.waitText(`tr[data-replica="chief-0"]`, "Error", 10*time.Second)
		alice.screenshot("job.png", true)
	})

	t.Run("CancelFromTheList", func(t *testing.T) {
		alice := aliceTab.in(t)
		e.submit(t, "forever", replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 0, map[string]string{cluster.AnnotationRunForever: "true"}))
		alice.open("/tenants/vision/jobs")
		alice.waitText(`tr[data-job="forever"] [data-testid=state]`, "RUNNING", 30*time.Second)
		alice.click(`input[aria-label="Select forever"]`)
		alice.click(`.bulk button:not(.danger)`)
		alice.waitJS(`document.querySelector("dialog.confirm").open`, 5*time.Second)
		require.Contains(t, alice.text("dialog.confirm"), "forever")
		alice.click(`dialog.confirm button.danger`)
		alice.waitText(`tr[data-job="forever"] [data-testid=state]`, "CANCELLED", 30*time.Second)
		e.waitState(t, "forever", pb.JobState_JOB_STATE_CANCELLED)
	})

	t.Run("ImportAKubeflowTFJob", func(t *testing.T) {
		alice := aliceTab.in(t)
		alice.open("/tenants/vision/submit")
		alice.setValue("#jobfile", tfjobYAML)
		alice.waitText(`form.submit button[type=submit]`, "Import TFJob", 5*time.Second)
		alice.click(`form.submit button[type=submit]`)
		// It has no backoffLimit, which TFJob and Trainyard read
		// differently: imported, with that difference shown.
		alice.waitText(`form.submit [role=status]`, "Imported as from-kubeflow", 20*time.Second)
		require.Contains(t, alice.text(`ul.warnings`), "spec.runPolicy.backoffLimit")
		alice.click(`form.submit [role=status] a`)
		alice.waitText(`[data-testid=job-state]`, "SUCCEEDED", 60*time.Second)
	})

	t.Run("TensorBoardLinkCarriesTheSession", func(t *testing.T) {
		alice := aliceTab.in(t)
		_, err := e.alice.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/vision", JobId: "board", Job: &pb.Job{Spec: &pb.JobSpec{
			Replicas:    []*pb.ReplicaSpec{replica(pb.ReplicaType_REPLICA_TYPE_CHIEF, 0, map[string]string{cluster.AnnotationRunForever: "true"})},
			Checkpoint:  &pb.CheckpointVolume{ClaimName: "ckpt"},
			Tensorboard: &pb.TensorBoard{Enabled: true},
		}}})
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = e.alice.CancelJob(context.Background(), &pb.CancelJobRequest{Name: harness.JobName("vision", "board")})
		})
		alice.open("/tenants/vision/jobs/board")
		alice.waitJS(`!!document.querySelector("a.tensorboard")`, 20*time.Second)
		require.Equal(t, "/v1/tenants/vision/jobs/board/tensorboard/", eval[string](alice, `new URL(document.querySelector("a.tensorboard").href).pathname`))
		require.Empty(t, eval[string](alice, `document.cookie`), "the token's cookie is HttpOnly")
		// What the link's tab sends: the cookie and no Authorization. The
		// proxy lets it through (its TensorBoard pod has no kubelet port
		// forward here: 503, where a request without the session is 401);
		// another job's path does not get the cookie.
		eval[bool](alice, `(() => {
			window.__tb = {};
			for (const [k, p] of [["own", "board"], ["other", "mnist"]]) {
				fetch("/v1/tenants/vision/jobs/" + p + "/tensorboard/", { credentials: "same-origin" }).then(r => { window.__tb[k] = r.status; });
			}
			return true;
		})()`)
		alice.waitJS(`window.__tb.own !== undefined && window.__tb.other !== undefined`, 20*time.Second)
		require.Equal(t, map[string]int{"own": 503, "other": 401}, eval[map[string]int](alice, `window.__tb`))
	})

	t.Run("AnotherTenantsMemberSeesNone", func(t *testing.T) {
		bob := e.browser.tab(t, e.HTTPURL)
		bob.signIn(bobToken)
		bob.waitText("main h1", "Jobs in speech", 10*time.Second)
		bob.waitText("table.jobs", "No jobs yet", 10*time.Second)
		bob.waitJS(`document.querySelectorAll(".tenant-pick option").length > 0`, 10*time.Second) // the picker loads on its own
		options := eval[[]string](bob, `[...document.querySelectorAll(".tenant-pick option")].map(o => o.value)`)
		require.Equal(t, []string{"speech"}, options)

		for _, path := range []string{"/tenants/vision/jobs", "/tenants/vision/jobs/mnist", "/tenants/vision"} {
			bob.open(path)
			bob.waitJS(`!!document.querySelector("main [role=alert]")`, 10*time.Second)
			text := bob.pageText()
			for _, secret := range []string{"warmup", "flaky", "forever", "from-kubeflow", "hf-token", "MNIST from the console"} {
				require.NotContains(t, text, secret, "%s shows vision's %s to bob", path, secret)
			}
		}
	})

	t.Run("TokensNeverInTheLogs", func(t *testing.T) {
		for _, p := range append([]*harness.Process{e.Server}, e.Workers...) {
			for _, tok := range []string{aliceToken, bobToken, adminToken} {
				// A JWT's signature is what makes it a credential.
				require.NotContains(t, p.Logs(), tok[strings.LastIndex(tok, ".")+1:], "%s logged a token", p.Name)
			}
		}
	})

	t.Run("ExpiredTokenLeadsBackToSignIn", func(t *testing.T) {
		short := e.Issuer.Token(oidctest.Claims{Subject: "alice", Expiry: time.Now().Add(8 * time.Second)})
		tb := e.browser.tab(t, e.HTTPURL)
		tb.signIn(short)
		tb.waitText("main h1", "Jobs in vision", 10*time.Second)
		tb.waitJS(`location.pathname === "/signin"`, 20*time.Second)
		tb.waitText("[role=alert]", "expired", 5*time.Second)
		stored := eval[string](tb, `sessionStorage.getItem("trainyard.session") || ""`)
		require.Empty(t, stored, "the expired token is forgotten")
	})

	// Last: the database goes away for a moment, and every process sees it.
	t.Run("JobsPageComesUpAfterAnOutage", func(t *testing.T) {
		// The page's first list fails (503): it says so, lists again by
		// itself once the API answers, and its watch, which starts from
		// that list, then brings new jobs in.
		alice := aliceTab.in(t)
		e.DBProxy.SetDown(true)
		alice.open("/tenants/vision/jobs")
		alice.waitText("main [role=alert]", "unavailable", 15*time.Second)
		e.DBProxy.SetDown(false)
		alice.waitJS(`!!document.querySelector('tr[data-job="mnist"]')`, 20*time.Second)
		require.Empty(t, eval[string](alice, `document.querySelector("main [role=alert]")?.innerText ?? ""`), "the error is gone")
		e.submit(t, "after-outage", replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 0, nil))
		alice.waitJS(`!!document.querySelector('tr[data-job="after-outage"]')`, 20*time.Second)
	})

	// Last too: event retention deletes every event of the installation.
	t.Run("JobPageListsAgainWhenItsPositionExpires", func(t *testing.T) {
		// A finished job's page re-opens its watch after its last event
		// (the server ends a final job's watch at once). Once retention
		// has deleted the events, that position is refused (OUT_OF_RANGE):
		// the page reads the events and the job again, and shows what is
		// kept (nothing) instead of retrying the old position for ever.
		alice := aliceTab.in(t)
		alice.open("/tenants/vision/jobs/mnist")
		alice.waitText(`[data-testid=job-state]`, "SUCCEEDED", 20*time.Second)
		alice.waitJS(`document.querySelectorAll("ol.timeline li").length > 0`, 10*time.Second)
		srv, _, _ := e.StartServer(t, "--event-retention", "1ms")
		srv.WaitFor(t, regexp.MustCompile(`msg="expired job events" deleted=[1-9]`), 30*time.Second)
		alice.waitJS(`document.querySelectorAll("ol.timeline li").length === 0`, 20*time.Second)
		require.Equal(t, "SUCCEEDED", alice.text(`[data-testid=job-state]`), "the job itself is read again")
	})

	// After it: a second retention server.
	t.Run("JobsPageListsAgainWhenItsPositionExpires", func(t *testing.T) {
		// The jobs page's watch is cut off (the database goes away); while
		// it is, a job is submitted and retention deletes its events, through
		// servers of their own on the database itself. When the database
		// comes back, the page's resumed watch is refused (OUT_OF_RANGE): it
		// lists again and shows the job, which it could learn of no other
		// way (its events are gone). The page lists only the job's label,
		// so that it shows no queued job and does not re-read its list
		// every 10 s for their positions.
		alice := aliceTab.in(t)
		alice.open("/tenants/vision/jobs?labels=away%3Dyes")
		alice.waitText("td.empty", "No jobs match this filter", 20*time.Second)
		e.DBProxy.SetDown(true)
		_, addr, _ := e.StartServer(t, "--database-url", e.DBProxy.DirectURL)
		direct := pb.NewJobServiceClient(harness.Dial(t, addr, e.Token("alice")))
		_, err := direct.CreateJob(ctxT(t), &pb.CreateJobRequest{Parent: "tenants/vision", JobId: "while-away", Job: &pb.Job{
			Labels: map[string]string{"away": "yes"},
			Spec:   &pb.JobSpec{Replicas: []*pb.ReplicaSpec{replica(pb.ReplicaType_REPLICA_TYPE_WORKER, 0, nil)}},
		}})
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond) // its events older than the retention below
		srv, _, _ := e.StartServer(t, "--database-url", e.DBProxy.DirectURL, "--event-retention", "1ms")
		srv.WaitFor(t, regexp.MustCompile(`msg="expired job events" deleted=[1-9]`), 30*time.Second)
		require.False(t, eval[bool](alice, `!!document.querySelector('tr[data-job="while-away"]')`))
		e.DBProxy.SetDown(false)
		alice.waitJS(`!!document.querySelector('tr[data-job="while-away"]')`, 30*time.Second)
	})
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// waitNoPods waits until the worker has removed the job's pods.
func waitNoPods(t *testing.T, e *consoleEnv, jobID string) {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{kube.LabelJob: jobID}).String()
	require.Eventually(t, func() bool {
		pods, err := e.Cluster.Client().CoreV1().Pods(e.Namespace("vision")).List(ctxT(t), metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(pods.Items) == 0
	}, 60*time.Second, 100*time.Millisecond, "job %s still has pods", jobID)
}
