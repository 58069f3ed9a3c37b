//go:build bench || integration

// Package bench measures Trainyard next to baselines measured in the same
// run, on the same Postgres and the same API server, and prints one
// comparison table. `make bench` runs it:
//
//	go test -tags bench -run '^$' -bench . -benchtime 1x -timeout 60m ./integration/bench/
//
// The build tag keeps it out of `go test ./...`; with -tags integration
// (make test) only smoke_test.go's tests run: each benchmark below at a size
// that takes seconds, checking that it works and counts right, not its
// figures. It needs Postgres
// (DATABASE_URL; the Makefile's default is 127.0.0.1:5432) and pgbench, and
// starts the local cluster of integration/cluster, or binds to
// TRAINYARD_CLUSTER_KUBECONFIG. Whatever it cannot start fails the run:
// nothing skips. The harness runs the real `trainyard serve` and `trainyard
// worker` (default flags) and drops the databases it created. Each section
// on the cluster starts on an empty one: a local cluster the bench started
// is stopped when the section ends and the next starts a new one (four
// seconds; harness.DiscardCluster); on a reused cluster the section deletes
// its namespaces, pods first, and waits until they are gone (their pods'
// deletion, or the pod garbage collector at 12,500 finished pods, would
// otherwise land in the next section's or run's measurement).
// Each sub-benchmark is one fixed-length measurement that ignores b.N,
// hence -benchtime 1x; its line carries the figures (ns/op is the mean
// latency), so `benchstat` can compare runs.
//
// # Store: BenchmarkTrainyard/store
//
// In one fresh database behind a `trainyard serve`, each path for
// TRAINYARD_BENCH_STORE_FOR (default 5s) with 1, 8 and TRAINYARD_BENCH_CLIENTS
// (default 32) clients:
//
//	pgbench-insert   baseline: pgbench, prepared, one INSERT per
//	                 transaction of a row like a job's (tenant, uuid key,
//	                 name, and the spec and status JSON the store wrote for
//	                 the bench's job) into a scratch table
//	store-JobCreate  store.JobCreate of a 1 chief + 4 worker job (one
//	                 statement: job row, first event; the NOTIFYs after
//	                 commit); with more than one client also with a tenant
//	                 per client
//	grpc-CreateJob   the same job through `trainyard serve` over gRPC with
//	                 an OIDC token (interceptors, authorization, validation,
//	                 then store.JobCreate)
//	rest-CreateJob   the same through serve's REST gateway (JSON body,
//	                 a kept-alive connection per client)
//	grpc-floor       the floor: this test binary run again as a gRPC
//	                 server whose CreateJob answers a job serve returned,
//	                 doing nothing (the same message sizes); and
//	grpc-floor-auth  the same, authenticating the token first (auth.OIDC,
//	                 as serve does), so the table shows what gRPC costs
//	                 here and what Trainyard adds on top (issue 47)
//
// The gRPC and REST rows report the server process's CPU per call and the
// bench's own (its clients share the two cores), and a line after the
// table the ratios issue 47 sets targets for: gRPC CreateJob against
// store.JobCreate, REST against gRPC.
//
// That `trainyard serve` runs with --tenant-concurrency at the most
// clients: the section measures what a submit costs, and the fairness
// limit (8 calls of a tenant at once by default) would cap its one tenant
// at 32 clients; the noisy section measures the limit.
// TRAINYARD_BENCH_SERVE_ARGS adds flags to it; with --pprof-addr
// 127.0.0.1:6063 there and TRAINYARD_BENCH_PROFILE_DIR set, each gRPC
// CreateJob row writes a CPU profile of serve over the row,
// store-grpc-clients=<n>-serve.pprof.
//
// Per-op latency is one call's (pgbench: per transaction, from its --log);
// throughput is calls over wall time. Meanwhile pg_stat_activity is
// sampled every 50 ms: what the database's backends wait on.
//
// # Noisy neighbour: BenchmarkTrainyard/noisy
//
// Issue 41: through one `trainyard serve`, tenant A submits with 64
// clients as fast as it can while tenant B submits 5 jobs a second (open
// loop), in three phases of twice TRAINYARD_BENCH_STORE_FOR: B alone, A
// alone, both. It prints B's p50 and p99 with A flooding against B alone
// (target: p99 within 2x) and A's throughput beside B against A alone
// (target: 0.8x). A's clients retry a RESOURCE_EXHAUSTED after 20 ms.
//
// # Dispatch: BenchmarkTrainyard/dispatch
//
// Sets of 1 chief + 4 worker pods at TRAINYARD_BENCH_RATE per second
// (default 10), open loop (a slow answer never delays the next submit),
// TRAINYARD_BENCH_DISPATCH_FOR (default 15s) per path and level, split into
// TRAINYARD_BENCH_BLOCKS (default 3) blocks per path. The paths run in
// pairs of blocks (raw, Trainyard; at the most seeded level a third,
// Trainyard in a tenant whose namespace holds no finished pods), each pair started by
// the next path in turn, so that all meet the same outside load on a
// shared machine and none always follows the same one. After every block
// the bench waits, at most 10 s in all and the same for every path, until
// the block's pods have finished and the worker owns no job, so every
// block starts on a quiet control plane. (At 30 s per path
// a block is 500 pods in 10 s, and on this project's 2-core machine kwok
// had not ended them 10 s later: every block then began on the last one's
// backlog. At 15 s, 250 pods, it mostly has.)
//
// Levels: the whole comparison runs once per entry of
// TRAINYARD_BENCH_SEEDED (default 0,2000,10000): that many finished pods
// already in the tenant's namespace, where both paths create. Before a
// level the bench seeds the difference (seed_test.go): finished jobs as
// Trainyard leaves them by default — a SUCCEEDED, inactive job row and five
// Succeeded pods (the EndpointSlice went when the job ended) — made
// directly (one INSERT; client-go creates of pods already bound to the CPU
// nodes, then a status update; the pods carry sim.trainyard.dev/history,
// so kwok never runs them), then waits until the namespace is quiet and the worker owns no
// job. Before that, and after each pair of blocks, it deletes the finished
// pods the blocks and the probe left (seeder.trim: without a grace period,
// waiting until the bench's informer has delivered every delete, so that
// no block starts while kwok still removes the last pair's pods), so every
// block meets the level's seeded pods and no more, and the cluster's
// finished pods
// stay under the pod garbage collector's threshold (12,500, oldest
// force-deleted first): before, at 30 s per path, the earlier levels'
// 6,000 pods, and then the 10,000 level's own 3,000, took it past it, and
// the collector's deletes of hundreds of pods loaded the control plane in
// the middle of the level's blocks. The probe
// (below) creates only while a path runs, for the same reason.
//
//	raw-client-go  baseline: per set, the 5 pods rendered with
//	               kube.RenderPod and created at once with client-go, as
//	               the worker's identity (its --kubeconfig: same API
//	               priority level and admission policies) and QPS/burst
//	               (200/400), in the tenant's namespace, without the
//	               managed-by label so the worker's informers never see
//	               them (their job uid is their own)
//	trainyard      CreateJob over gRPC to `trainyard serve`; one `trainyard
//	               worker` creates the 5 pods, then the EndpointSlice as
//	               they get addresses
//	trainyard-empty-ns  the same, at the most seeded level, in another tenant
//	               whose namespace is never seeded, every other job of
//	               Trainyard's blocks: its own figure on an empty namespace
//	               at the same moments (issue 13), beside "at 0", the first
//	               level's, measured minutes earlier on a cluster without
//	               the seeded history
//
// A set's latency runs from its start (raw: before rendering; Trainyard:
// the acknowledged CreateJob answer) to the moment the bench's own pod
// informer delivered its fifth pod; both paths are timed by that informer,
// so its delivery delay is in both. The worker's log line "job state
// changed ... from=QUEUED to=STARTING" (written after JobSave, before the
// creates; millisecond resolution) splits Trainyard's time into deciding
// and creating. A probe creates one pod every 250 ms in a second tenant's
// namespace while a path runs: its call and delivery times per path
// and level are the API server's own responsiveness while that path ran.
// Also reported, per level: CPU of every process (utime+stime from /proc)
// and of the machine, the worker's /metrics over the Trainyard blocks —
// its Kubernetes calls per job by verb and resource in the summary table
// — and pg_stat_activity samples of Trainyard's database; peak RSS (VmHWM)
// of the server and the worker over the run. With TRAINYARD_BENCH_PROFILE_DIR
// (and TRAINYARD_CLUSTER_PROFILING=1), a CPU profile of the API server over
// each block of the most seeded level, TRAINYARD_BENCH_PROFILE_SECONDS long
// (set it to the block's length), named dispatch-<level>-<path>-<pair>.
//
// # Many clusters: BenchmarkTrainyard/clusters
//
// Issue 45 (clusters_test.go): dispatch latency with two clusters against
// one, side by side. Two Trainyard installations run at once (each its own
// database, `trainyard serve` and tenant): "one cluster" has one worker in
// the local cluster; "two clusters" has a worker there and one in a second
// local control plane (harness.SecondCluster, registered as b), and its
// scheduler places each job whole in one of them. Both submit the dispatch
// section's 1 chief + 4 worker jobs at TRAINYARD_BENCH_RATE (10/s) each
// for TRAINYARD_BENCH_DISPATCH_FOR per path, in TRAINYARD_BENCH_BLOCKS
// blocks in which the two paths' sets take turns (so each set meets the
// same machine; TRAINYARD_BENCH_CLUSTERS_BLOCKS=1 gives each path blocks
// of its own), each block followed by a wait for quiet. Latency runs from
// the acknowledged CreateJob to the bench's informer (on whichever cluster
// the job went to) delivering the fifth pod. It prints p50 and p99 of
// both, their ratio (target: two clusters within 1.1×), how the
// two-cluster path's jobs spread, each set's stages (acknowledged →
// admitted → first pod → fifth pod), each worker's claim delay and pod
// create time, and each process's CPU. The
// second control plane is stopped when the section ends. Its smoke test,
// TestClustersSmoke, builds only with -tags bench (70 s here, mostly
// starting a second control plane and two installations: too long for
// make test): go test -tags bench -run TestClustersSmoke ./integration/bench/
//
// # Experiments: BenchmarkTrainyard/experiments
//
// Issue 46 (experiments_test.go): an experiment of
// TRAINYARD_BENCH_EXPERIMENT_TRIALS (default 100) simulated trials (one
// pod running TRAINYARD_BENCH_TRIAL_RUN_FOR, default 5s, and printing
// metrics curve q) at parallelism 10 until it ends, then the same jobs by
// a client that keeps 10 unfinished (WatchJobs; the next submit as one
// ends), on one local cluster with one worker. It prints both wall times
// and their ratio (target: the experiment within 1.2×) and the best trials.
//
// # Issue 11 and issue 8: batch, million, watchers, rates, memory, replicas, admission
//
// After the store table, in this order (each file's comment says more):
//
//	batch      batch_test.go     BatchCreateJobs of 1,000 jobs per call, 2 callers, beside
//	                             store.JobCreateMany and pgbench's multi-row INSERT of as many
//	                             like rows (the baseline)
//	million    million_test.go   1,000,000 jobs (TRAINYARD_BENCH_MILLION_JOBS) over 100 tenants,
//	                             half in one, seeded by COPY (indexes built after); ListJobs first and 10,000-deep pages
//	                             with and without filters, GetJob, ListJobEvents and a resumed
//	                             watch, 200 times each over gRPC, beside one SQL SELECT of GetJob's
//	                             row; then --event-retention's deletes with a writer beside
//	watchers   fanout_test.go    1,000 WatchJobs streams (TRAINYARD_BENCH_WATCHERS) on one server:
//	                             memory per stream, commit → last stream, beside one stream
//	rates      rates_test.go     the dispatch comparison above (5 s for quiet) at TRAINYARD_BENCH_RATES jobs/s
//	                             (50,100), nothing seeded, TRAINYARD_BENCH_RATES_FOR (10s)
//	                             per path
//	memory     memory_test.go    one worker owning 2,000 running 1 chief + 4 worker jobs
//	                             (TRAINYARD_BENCH_MEMORY_JOBS), beside itself idle
//	replicas   replicas_test.go  1 API server + 1 worker, then 3 + 3: CreateJob rate, dispatch
//	                             rate of 3,000 single-pod jobs, pod creates per job
//	admission  admission_test.go issue 8: 15,000 single-pod jobs over 30 tenants
//	                             (TRAINYARD_BENCH_ADMISSION_JOBS, _TENANTS) until every pod
//	                             exists, beside raw creates of the same pods, each phase on a
//	                             new cluster (on a reused one raw's pods are let run and then
//	                             deleted before Trainyard's phase); with
//	                             TRAINYARD_BENCH_ADMISSION_FINISHED=1 also until each phase's
//	                             pods have all run; Kueue's 351 s quoted;
//	                             TRAINYARD_BENCH_PROFILE_DIR (with
//	                             TRAINYARD_CLUSTER_PROFILING=1) takes a CPU profile of the
//	                             API server in each phase, TRAINYARD_BENCH_PROFILE_SECONDS
//	                             (30) long, 10 s in (profile_test.go)
//
// Every section on the cluster leaves nothing behind when it ends
// (leaveClusterEmpty): the next section's informers, kwok and pod garbage
// collector meet none of its pods. The report ends with each section's wall
// time.
//
// # Ratios
//
// Every ratio in the tables is the measured path's figure divided by its
// baseline's from the same run (the summary also divides Trainyard's by its
// own at the first level): above 1× is slower for a latency, below
// 1× is less for a throughput. Issue 4's figures for Kubeflow's
// training-operator (p50 18 s; raw 36 ms) are quoted, not measured here.
package bench
