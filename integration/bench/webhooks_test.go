//go:build bench || integration

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/api"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/webhook"
	"github.com/trainyard/trainyard/internal/webhook/deliver"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Webhooks (issue 43): what the outbox costs submits, and how soon a job's
// end reaches a receiver.
//
//	submit   gRPC CreateJob at cfg.clients clients for cfg.storeFor into a
//	         tenant without webhooks; into one whose webhook wants
//	         job.created while no deliverer runs (what the outbox costs
//	         the submit path: every submit writes an outbox row); and
//	         again with the deliverer sending them meanwhile (on this
//	         machine it shares the two cores with serve and Postgres)
//	drain    how fast the deliverer empties the first "on" phase's backlog
//	         (deliveries a second, one receiver, PerReceiver 16)
//	end→2xx  jobs of the webhook's tenant end (JobSave SUCCEEDED, as a
//	         worker saves it) at rate per second for a while; each
//	         delivery's time from the save to the receiver's 2xx
//
// The deliverer runs in this process (deliver.Deliverer, as `trainyard
// webhooks` runs it) against a local receiver; the signing secret comes
// from a static source (no cluster needed).

type webhookResult struct {
	clients         int
	d               time.Duration
	off, on, onSend float64 // jobs/s
	drained         int
	drain           time.Duration
	rate, ended     int
	endToReceiver   latencies
	received, extra int64
	load            string
}

type staticSecret string

func (s staticSecret) SecretValue(context.Context, string, string, string) ([]byte, error) {
	return []byte(s), nil
}

func benchWebhooks(b *testing.B, cfg config, rep *report) {
	r := measureWebhooks(b, cfg.clients, cfg.storeFor, 100, 10*time.Second)
	b.ReportMetric(r.endToReceiver.p99.Seconds()*1000, "end-to-2xx-p99-ms")
	b.ReportMetric(r.on/r.off, "submit-on/off")
	b.ReportMetric(r.onSend/r.off, "submit-sending/off")
	rep.sections = append(rep.sections, r.print)
}

func (r webhookResult) print(out io.Writer) {
	fmt.Fprintf(out, "\nWebhooks (issue 43): %d clients for %s per submit path; %d jobs ending at %d/s, one webhook each; load average %s at start\n",
		r.clients, r.d, r.ended, r.rate, r.load)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "path\tjobs/s\tvs off\t\n")
	fmt.Fprintf(tw, "gRPC CreateJob, no webhook\t%.0f\t\t\n", r.off)
	fmt.Fprintf(tw, "gRPC CreateJob, webhook on job.created (outbox written, no deliverer)\t%.0f\t%s\t\n", r.on, ratio(r.on, r.off))
	fmt.Fprintf(tw, "gRPC CreateJob, webhook on job.created, the deliverer sending on the same cores\t%.0f\t%s\t\n", r.onSend, ratio(r.onSend, r.off))
	tw.Flush()
	fmt.Fprintf(out, "backlog drained: %d deliveries in %s (%.0f/s)\n", r.drained, r.drain.Round(time.Millisecond), float64(r.drained)/r.drain.Seconds())
	fmt.Fprintf(out, "job end → receiver 2xx: p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms (%d delivered; target p99 < 1000 ms)\n",
		ms(r.endToReceiver.p50), ms(r.endToReceiver.p90), ms(r.endToReceiver.p99), ms(r.endToReceiver.max), r.endToReceiver.n)
}

func measureWebhooks(tb testing.TB, clients int, d time.Duration, rate int, endFor time.Duration) webhookResult {
	env := harness.Start(tb, harness.Options{ServeArgs: []string{"--webhook-allow-loopback"}})
	env.CreateTenant(tb, "hooks-off", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	env.CreateTenant(tb, "hooks-on", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, withQuery(env.DatabaseURL, "pool_max_conns", "24"))
	if err != nil {
		tb.Fatalf("store: %v", err)
	}
	defer st.Close()

	// The receiver: when each job's job.succeeded arrived.
	var (
		mu       sync.Mutex
		ended    = map[string]time.Time{}
		received atomic.Int64
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ce struct{ Type, Subject string }
		_ = json.NewDecoder(r.Body).Decode(&ce)
		received.Add(1)
		if ce.Type == webhook.CloudEventType(webhook.TopicJobSucceeded) {
			mu.Lock()
			if _, ok := ended[ce.Subject]; !ok {
				ended[ce.Subject] = time.Now()
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	if _, err := st.WebhookCreate(ctx, webhook.Webhook{Tenant: "hooks-on", ID: "ci", URL: recv.URL,
		EventTypes: []string{webhook.TopicJobCreated, webhook.TopicJobSucceeded}}); err != nil {
		tb.Fatalf("webhook: %v", err)
	}
	listener, err := store.NewListener(env.DatabaseURL, store.ListenerConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = listener.Run(ctx) }()
	dl, err := deliver.New(deliver.Config{ID: "bench", Store: st, Secrets: staticSecret(webhook.NewSecret()),
		Render: deliver.Render{Job: api.RenderJob, Tenant: api.RenderTenant}, Policy: webhook.Policy{AllowLoopback: true},
		Wake: listener, PerReceiver: 16})
	if err != nil {
		tb.Fatal(err)
	}
	res := webhookResult{clients: clients, d: d, rate: rate, load: loadavg()}
	jobs := env.Jobs(tb, env.Token("alice"))
	phase := 0
	submit := func(tenantID string) (float64, []string) {
		phase++
		var (
			n     atomic.Int64
			wg    sync.WaitGroup
			idsMu sync.Mutex
			ids   []string
		)
		stop := time.Now().Add(d)
		for c := range clients {
			wg.Go(func() {
				for i := 0; time.Now().Before(stop); i++ {
					id := fmt.Sprintf("p%d-j%d-%d", phase, c, i)
					_, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Parent: harness.TenantName(tenantID), JobId: id,
						Job: &pb.Job{Spec: benchSpecPB()}})
					if err != nil {
						tb.Errorf("CreateJob: %v", err)
						return
					}
					n.Add(1)
					idsMu.Lock()
					ids = append(ids, id)
					idsMu.Unlock()
				}
			})
		}
		wg.Wait()
		return float64(n.Load()) / d.Seconds(), ids
	}
	// drained waits until the receiver has had n messages.
	drained := func(n int64) {
		deadline := time.Now().Add(2 * time.Minute)
		for received.Load() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if received.Load() < n {
			tb.Fatalf("the receiver had %d of %d messages", received.Load(), n)
		}
	}
	res.off, _ = submit("hooks-off")
	var ids []string
	res.on, ids = submit("hooks-on")

	dctx, dstop := context.WithCancel(ctx)
	ddone := make(chan struct{})
	began := time.Now()
	go func() { _ = dl.Run(dctx); close(ddone) }()
	defer func() { dstop(); <-ddone }()
	drained(int64(len(ids)))
	res.drained, res.drain = len(ids), time.Since(began)

	var more []string
	res.onSend, more = submit("hooks-on")
	drained(int64(len(ids) + len(more)))
	ids = append(ids, more...)

	// End jobs of hooks-on at rate per second, as their worker would.
	want := min(len(ids), int(float64(rate)*endFor.Seconds()))
	ids = ids[:want]
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `INSERT INTO worker_leases VALUES ('bench-worker', now() + interval '1 hour')`); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE jobs SET worker_id = 'bench-worker', version = version + 1
		WHERE tenant_id = 'hooks-on' AND name = ANY ($1)`, ids); err != nil {
		tb.Fatal(err)
	}
	saved := make([]time.Time, len(ids))
	tick := time.NewTicker(time.Second / time.Duration(rate))
	var wg sync.WaitGroup
	for i, id := range ids {
		<-tick.C
		wg.Go(func() {
			j, err := st.JobGet(ctx, "hooks-on", id)
			if err != nil {
				tb.Errorf("JobGet: %v", err)
				return
			}
			w, err := st.JobLoad(ctx, "hooks-on", j.UID)
			if err != nil {
				tb.Errorf("JobLoad: %v", err)
				return
			}
			stt := w.Job.Status
			stt.State, stt.Reason = job.Succeeded, job.ReasonSucceeded
			saved[i] = time.Now()
			if _, err := st.JobSave(ctx, store.JobSaveParams{WorkerID: "bench-worker", Tenant: "hooks-on", UID: j.UID, Version: w.Version,
				Status: stt, Events: []job.Event{{Reason: job.ReasonSucceeded}}, Done: true}); err != nil {
				tb.Errorf("JobSave: %v", err)
			}
		})
	}
	tick.Stop()
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(ended)
		mu.Unlock()
		if n >= len(ids) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lat []time.Duration
	mu.Lock()
	for i, id := range ids {
		if t, ok := ended[id]; ok {
			lat = append(lat, t.Sub(saved[i]))
		}
	}
	mu.Unlock()
	if len(lat) < len(ids) {
		tb.Errorf("%d of %d jobs' ends reached the receiver", len(lat), len(ids))
	}
	res.ended, res.endToReceiver, res.received = len(ids), summarize(lat), received.Load()
	return res
}
