//go:build integration

package store

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tenant"
	"github.com/trainyard/trainyard/internal/webhook"
)

func (b *testBundle) webhookCreate(t testing.TB, tenantID, id string, topics []string, selector map[string]string) {
	t.Helper()
	_, err := b.store.WebhookCreate(b.ctx, webhook.Webhook{Tenant: tenantID, ID: id, URL: "https://example.com/" + id,
		EventTypes: topics, LabelSelector: selector})
	require.NoError(t, err)
}

// outbox lists a webhook's deliveries as "topic subject", oldest first.
func (b *testBundle) outbox(t testing.TB, tenantID, webhookID string) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT topic || ' ' || subject FROM webhook_deliveries
		WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY id`, tenantID, webhookID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// save writes the job's next status with one event, as its worker.
func (b *testBundle) save(t testing.TB, w *WorkerJob, state job.State, reason string, events ...job.Event) error {
	t.Helper()
	st := w.Job.Status
	st.State, st.Reason = state, reason
	if len(events) == 0 {
		events = []job.Event{{Reason: reason}}
	}
	v, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: w.WorkerID, Tenant: w.Job.Tenant, UID: w.Job.UID,
		Version: w.Version, Status: st, Events: events, Done: state.Final()})
	if err == nil {
		w.Version, w.Job.Status = v, st
	}
	return err
}

func TestWebhookOutboxIsWrittenWithTheEvents(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.tenantCreate(t, "b")
	b.webhookCreate(t, "a", "all", webhook.Topics, nil)
	b.webhookCreate(t, "a", "ml-done", []string{webhook.TopicJobSucceeded, webhook.TopicJobFailed}, map[string]string{"team": "ml"})

	j, _, err := b.store.JobCreate(b.ctx, JobCreateParams{Job: job.Job{Tenant: "a", Name: "train", Spec: testSpec(),
		Labels: map[string]string{"team": "ml"}}})
	require.NoError(t, err)
	other := b.jobCreate(t, "a", "other", 0) // no labels: not for ml-done
	b.jobCreate(t, "b", "train", 0)          // tenant b has no webhooks
	b.admit(t, keyOf(j))
	w := b.own(t, "w", keyOf(j))
	require.NoError(t, b.save(t, &w, job.Running, job.ReasonRunning))
	require.NoError(t, b.save(t, &w, job.Restarting, job.ReasonRestarting))
	// A save that fails (a stale version) writes neither events nor messages.
	stale := w
	stale.Version--
	require.ErrorIs(t, b.save(t, &stale, job.Failed, job.ReasonReplicaFailed), ErrConflict)
	// The pass that ends the job has another event first: only the one
	// with the job's final reason is its end.
	require.NoError(t, b.save(t, &w, job.Succeeded, job.ReasonSucceeded,
		job.Event{Reason: job.ReasonAllReplicasReady}, job.Event{Reason: job.ReasonSucceeded}))
	_, err = b.store.JobCancel(b.ctx, "a", "other")
	require.NoError(t, err)

	require.Equal(t, []string{
		"job.created train", "job.created other", "job.admitted train", "job.running train",
		"job.replica_restarted train", "job.succeeded train", "job.cancelled other",
	}, b.outbox(t, "a", "all"))
	require.Equal(t, []string{"job.succeeded train"}, b.outbox(t, "a", "ml-done"))
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_deliveries WHERE tenant_id = 'b'`))
	_ = other

	// A quota change is a message too, in TenantUpdate's transaction.
	_, err = b.store.TenantUpdate(b.ctx, "a", func(tn *tenant.Tenant) error { tn.Quota.GPU = 8; return nil })
	require.NoError(t, err)
	require.Len(t, b.outbox(t, "a", "all"), 8)
	require.Equal(t, "tenant.quota_changed a", b.outbox(t, "a", "all")[7])

	// The messages carry the job as each event left it.
	msgs, err := b.store.DeliveryClaim(b.ctx, "d1", 100, 100, time.Minute, nil)
	require.NoError(t, err)
	byMsg := map[string]OutboxMessage{}
	for _, m := range msgs {
		byMsg[m.Webhook+" "+m.Topic+" "+m.Subject] = m
	}
	require.Equal(t, job.Queued, byMsg["all job.created train"].Job.Status.State)
	require.Equal(t, map[string]string{"team": "ml"}, byMsg["all job.created train"].Job.Labels)
	require.Equal(t, job.Succeeded, byMsg["ml-done job.succeeded train"].Job.Status.State)
	require.Equal(t, j.UID, byMsg["ml-done job.succeeded train"].Job.UID)
	require.Equal(t, "ty-a", byMsg["ml-done job.succeeded train"].Namespace)
	require.EqualValues(t, 8, byMsg["all tenant.quota_changed a"].TenantSnapshot.Quota.GPU)
	require.NotEmpty(t, byMsg["all job.created train"].MessageID)
}

func TestDeliveryClaimKeepsEachJobsOrder(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.webhookCreate(t, "a", "h", webhook.Topics, nil)
	j1 := b.jobCreate(t, "a", "one", 0)
	j2 := b.jobCreate(t, "a", "two", 0)
	b.admit(t, keyOf(j1), keyOf(j2))
	// Outbox per job: created, admitted.

	claim := func(holder string, full ...string) []OutboxMessage {
		t.Helper()
		room := map[string]int{}
		for _, w := range full {
			room[w] = 0
		}
		msgs, err := b.store.DeliveryClaim(b.ctx, holder, 10, 10, time.Minute, room)
		require.NoError(t, err)
		return msgs
	}
	topics := func(msgs []OutboxMessage) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Topic+" "+m.Subject)
		}
		return out
	}
	// Only the head of each job's line.
	first := claim("d1")
	require.Equal(t, []string{"job.created one", "job.created two"}, topics(first))
	// In flight: nobody else gets them, nor what follows them.
	require.Empty(t, claim("d2"))
	// One delivered, one failed: "one" moves on, "two" waits for its retry.
	require.NoError(t, b.store.DeliveryFinish(b.ctx, "d1", first[0].ID, Attempt{Outcome: Delivered, StatusCode: 204, Latency: 3 * time.Millisecond}))
	require.NoError(t, b.store.DeliveryFinish(b.ctx, "d1", first[1].ID, Attempt{Outcome: Retry, StatusCode: 503, RetryAfter: time.Hour}))
	require.Equal(t, []string{"job.admitted one"}, topics(claim("d2")))
	d, err := b.store.DeliveryGet(b.ctx, "a", "h", first[1].ID)
	require.NoError(t, err)
	require.Equal(t, webhook.Pending, d.State)
	require.EqualValues(t, 1, d.Attempts)
	require.EqualValues(t, 503, d.LastStatusCode)
	d, err = b.store.DeliveryGet(b.ctx, "a", "h", first[0].ID)
	require.NoError(t, err)
	require.Equal(t, webhook.Succeeded, d.State)
	require.Equal(t, 3*time.Millisecond, d.LastLatency)

	// A finish by a holder whose lease was taken over is refused.
	b.exec(t, `UPDATE webhook_deliveries SET lease_expires_at = now() - interval '1 s' WHERE lease_holder = 'd2'`)
	again := claim("d3")
	require.Equal(t, []string{"job.admitted one"}, topics(again), "a dead deliverer's message is claimed again")
	require.ErrorIs(t, b.store.DeliveryFinish(b.ctx, "d2", again[0].ID, Attempt{Outcome: Delivered}), ErrLeaseLost)
	// Busy receivers are skipped and handed back untried.
	require.NoError(t, b.store.DeliveryRelease(b.ctx, "d3", []int64{again[0].ID}))
	require.Empty(t, claim("d4", "a/h"))
	require.Len(t, claim("d4"), 1)
	require.NoError(t, b.store.DeliveryRelease(b.ctx, "d4", []int64{again[0].ID}))
	// A webhook gets no more than its room, the limit no more than limit.
	msgs, err := b.store.DeliveryClaim(b.ctx, "d4", 10, 10, time.Minute, map[string]int{"a/h": 1})
	require.NoError(t, err)
	require.Len(t, msgs, 1)

	// Given up once the next try would be past a day since it was written.
	b.exec(t, `UPDATE webhook_deliveries SET create_time = now() - interval '23 hours', lease_holder = 'd5',
		lease_expires_at = now() + interval '1 minute', next_attempt_time = now() WHERE id = $1`, first[1].ID)
	require.NoError(t, b.store.DeliveryFinish(b.ctx, "d5", first[1].ID, Attempt{Outcome: Retry, StatusCode: 500, RetryAfter: 2 * time.Hour}))
	d, err = b.store.DeliveryGet(b.ctx, "a", "h", first[1].ID)
	require.NoError(t, err)
	require.Equal(t, webhook.Failed, d.State)
	require.Equal(t, []string{"job.admitted two"}, topics(claim("d6")), "a given-up message unblocks its job")

	// Redelivery by hand: the same message, pending again.
	r, err := b.store.DeliveryRedeliver(b.ctx, "a", "h", first[1].ID)
	require.NoError(t, err)
	require.Equal(t, first[1].MessageID, r.MessageID)
	require.Equal(t, webhook.Pending, r.State)
	require.Zero(t, r.Attempts)
}

func TestDeliveryGoneDisablesTheWebhook(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.webhookCreate(t, "a", "h", webhook.Topics, nil)
	b.jobCreate(t, "a", "one", 0)
	msgs, err := b.store.DeliveryClaim(b.ctx, "d", 10, 10, time.Minute, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.NoError(t, b.store.DeliveryFinish(b.ctx, "d", msgs[0].ID, Attempt{Outcome: Gone, StatusCode: 410}))
	h, err := b.store.WebhookGet(b.ctx, "a", "h")
	require.NoError(t, err)
	require.Equal(t, webhook.Disabled, h.State)
	require.Contains(t, h.StateReason, "410")
	// A disabled webhook gets no new messages and sends none, pings aside.
	b.jobCreate(t, "a", "two", 0)
	require.Len(t, b.outbox(t, "a", "h"), 1)
	b.exec(t, `UPDATE webhook_deliveries SET next_attempt_time = now()`)
	msgs, err = b.store.DeliveryClaim(b.ctx, "d", 10, 10, time.Minute, nil)
	require.NoError(t, err)
	require.Empty(t, msgs)
	ping, err := b.store.DeliveryPing(b.ctx, "a", "h")
	require.NoError(t, err)
	msgs, err = b.store.DeliveryClaim(b.ctx, "d", 10, 10, time.Minute, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, ping.MessageID, msgs[0].MessageID)
	require.Equal(t, webhook.TopicPing, msgs[0].Topic)
	// Enabled again: the message waiting since the 410 goes.
	_, err = b.store.WebhookUpdate(b.ctx, "a", "h", false, func(w *webhook.Webhook) error { w.State = webhook.Active; return nil })
	require.NoError(t, err)
	msgs, err = b.store.DeliveryClaim(b.ctx, "d", 10, 10, time.Minute, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "job.created", msgs[0].Topic)
}

// Concurrent claimers never hold one message at once, and every message
// is claimed.
func TestDeliveryClaimConcurrent(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.webhookCreate(t, "a", "h", []string{webhook.TopicJobCreated}, nil)
	const jobs = 40
	for i := range jobs {
		b.jobCreate(t, "a", "j"+string(rune('a'+i%26))+string(rune('a'+i/26)), 0)
	}
	var (
		mu   sync.Mutex
		seen = map[int64]string{}
		wg   sync.WaitGroup
	)
	for c := range 4 {
		wg.Go(func() {
			holder := "d" + string(rune('0'+c))
			for {
				msgs, err := b.store.DeliveryClaim(b.ctx, holder, 3, 3, time.Minute, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(msgs) == 0 {
					return
				}
				for _, m := range msgs {
					mu.Lock()
					if prev, ok := seen[m.ID]; ok {
						t.Errorf("delivery %d claimed by %s and %s", m.ID, prev, holder)
					}
					seen[m.ID] = holder
					mu.Unlock()
					if err := b.store.DeliveryFinish(b.ctx, holder, m.ID, Attempt{Outcome: Delivered, StatusCode: 200}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, jobs)
}

func TestDeliveryRetentionKeepsPending(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.webhookCreate(t, "a", "h", webhook.Topics, nil)
	b.jobCreate(t, "a", "one", 0)
	b.jobCreate(t, "a", "two", 0)
	msgs, err := b.store.DeliveryClaim(b.ctx, "d", 1, 1, time.Minute, nil)
	require.NoError(t, err)
	require.NoError(t, b.store.DeliveryFinish(b.ctx, "d", msgs[0].ID, Attempt{Outcome: Delivered, StatusCode: 200}))
	n, err := b.store.DeliveryDeleteBefore(b.ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Len(t, b.outbox(t, "a", "h"), 1, "the pending one stays")
}

func TestWebhookTopicsOfFailureAndPreemption(t *testing.T) {
	b := setup(t)
	b.tenantCreate(t, "a")
	b.webhookCreate(t, "a", "h", webhook.Topics, nil)
	pre := b.jobCreate(t, "a", "pre", 0)
	fail := b.jobCreate(t, "a", "fail", 0)
	b.admit(t, keyOf(pre), keyOf(fail))

	w := b.own(t, "w", keyOf(pre))
	st := w.Job.Status
	st.State, st.Reason = job.Queued, job.ReasonPreempted
	_, err := b.store.JobSave(b.ctx, JobSaveParams{WorkerID: "w", Tenant: "a", UID: pre.UID, Version: w.Version, Status: st,
		Events: []job.Event{{Type: job.EventWarning, Reason: job.ReasonPreempted}}, Requeue: &Requeue{}})
	require.NoError(t, err)

	w = b.own(t, "w", keyOf(fail))
	// Failed with a reason of job.Fail's (any reason the job's status carries).
	require.NoError(t, b.save(t, &w, job.Failed, "DependencyFailed"))
	var got []string
	for _, s := range b.outbox(t, "a", "h") {
		if s != "job.created pre" && s != "job.created fail" && s != "job.admitted pre" && s != "job.admitted fail" {
			got = append(got, s)
		}
	}
	require.Equal(t, []string{"job.preempted pre", "job.failed fail"}, got)
}
