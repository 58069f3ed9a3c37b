// Package gpuutil reads what each running job's GPUs really do, from the
// NVIDIA DCGM exporter's series in Prometheus, and keeps it with the job:
// mean and p95 utilisation and mean and largest framebuffer memory per
// replica (GetJob), GPU-hours used beside allocated (the usage ledger),
// and the IdleGPUs condition for a job whose GPUs all idle.
//
//	dcgm-exporter ──scrape──► Prometheus ◄──/api/v1/query── Poller (every --gpu-poll-interval)
//	                                                           │ one transaction per job and window,
//	                                                           ▼ fenced on sampled_to
//	                           Postgres: job_gpu_replicas (sums), job_gpu (sampled_to, idle_since),
//	                                     usage_hourly.gpu_used_seconds and gpu_idle_seconds,
//	                                     jobs.status IdleGPUs + event
//
// # Where it runs
//
// On the worker that holds the scheduler lease (cmd/trainyard worker
// --prometheus-url; scheduler.Config.OnLead), not on every worker: one
// reader for every running job whichever worker owns it, so a job is read
// once, and one query covers many jobs of a namespace. The lease exists
// already (the EndpointSlice controller runs on it too). A fail-over loses
// nothing: the next leader reads from each job's sampled_to.
//
// # Reading exactly once
//
// Each poll reads, per job, the raw samples of (sampled_to, t], t being
// the clock less Config.Lag (so the scrapes stamped before t are in), as
// one instant query of a range selector evaluated at t:
//
//	{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED",namespace="ty-ml",
//	 pod=~"(?:a|b)-(?:chief|worker|ps|evaluator)-[0-9]+"}[60000ms]
//
// Range selectors are left-open since Prometheus 3, so successive windows
// neither miss nor repeat a sample. Jobs of a namespace whose windows
// match share a query (up to 50 jobs). The figures are sums (samples,
// sum, a histogram of whole percents for an exact p95, framebuffer sum and
// max), added in place, and sampled_to moves in the same transaction,
// fenced on its old value: a second leader's late write of the same window
// fails (store.ErrGPUWindowMoved). A job first seen long after its start
// is caught up an hour at a time. The figures outlive Prometheus's
// retention and the job.
//
// Pods are joined to replicas by name (job.PodName) in the tenant's
// namespace, with the exporter's pod and namespace labels: the scrape must
// keep them (honor_labels: true, as the dcgm-exporter's ServiceMonitor
// sets).
//
// # Idle GPUs
//
// A running job is idle when no sample of any of its GPUs has been at or
// above its tenant's threshold (tenant.Scheduling.IdleGPUPercent, default
// 5 %) for the tenant's idle time (IdleGPUSeconds, default 30 min) —
// counted from the last busy sample, or the first sample. A job without
// recent samples (Config.Stale) keeps its verdict: no data is not
// idleness. On a change the job gets the IdleGPUs condition (true, or
// false with reason GPUsActive) and an event; the IdleGPUs event is the
// webhook topic job.idle_gpus. The job's version moves, so its worker's
// next save reloads it and keeps the condition. A job with one busy
// replica is not idle; each replica's figures show which GPUs idle. A
// tenant with IdleGPUStopSeconds (at least its idle time) has a job idle
// that long cancelled (store.GPUIdleStop: a cancel request, an
// IdleGPUsStopped event; the worker stops the pods gracefully, and the
// job ends CANCELLED, webhook topic job.cancelled). The condition stays
// on a job after it ends: the last verdict.
//
// # GPU-hours used
//
// Each window adds its job's GPUs (its usage span's) × its seconds × its
// samples' mean utilisation to the ledger's hour (split at UTC hours). A
// window without samples counts at the job's mean so far while samples
// are recent (a poll shorter than the scrape interval falls between
// scrapes), and not at all otherwise: used counts what was measured.
//
// # GPU-hours held idle
//
// A window that begins with the job flagged IdleGPUs adds its job's GPUs
// × its seconds to the hour's GPU-seconds held idle: the verdict is judged
// at window ends, so the flag holds over whole windows, from the one after
// the poll that set it through the one whose poll cleared it (or the job's
// last). The flag is read in the window's own transaction (job_gpu.
// idle_since), so a new leader counts on from where the last one stopped,
// and a window is counted once. The grace before the flag (the tenant's
// idle time) is not idle time here: what is counted is what the IdleGPUs
// condition showed. The usage API's gpuHoursIdle, per tenant with
// tenants/-, is the platform's report of it.
//
// # Metrics
//
// trainyard_tenant_gpus_used (each GPU's latest utilisation summed, beside
// the scheduler's trainyard_tenant_gpus_allocated),
// trainyard_tenant_idle_gpu_jobs, trainyard_gpu_poll_errors_total and
// trainyard_gpu_poll_duration_seconds; leader only.
//
// Tests: gpuutil_test.go (the query, the tally, the windows, the idle
// rule) without I/O; poller_integration_test.go with Postgres and a real
// Prometheus (integration/prometheus) scraping a DCGM-shaped exporter.
package gpuutil
