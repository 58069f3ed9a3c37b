// Package chaos runs Trainyard's real processes under a steady load and
// breaks them, one fault after another, then checks that nothing a client
// was told happened was lost or done twice.
//
//	make chaos                                       60 faults, about 6 minutes; prints the table
//	go test -tags integration -run TestChaosSmoke    one fault of each kind (part of make test, under a minute)
//
// # What runs
//
//	load: 3 tenants, one job each 1.5 s ─► API server 1 ─┐   (in turn; a submit
//	      (request id: a retry of a create       │        │    retries on any error
//	       that committed returns that job)      ▼        │    until acknowledged)
//	                                       API server 2 ──┤
//	                                                      ▼
//	       the suite's own Postgres: a primary and a synchronous streaming standby
//	       (initdb, pg_basebackup -R; free ports, never 5432), given to every process
//	       as both hosts with target_session_attrs=read-write
//	                                                      ▲
//	        worker 1 (job leases, scheduler lease) ───────┤   --lease-ttl 3s
//	        worker 2 (job leases, scheduler lease) ───────┘   --scheduler-lease-ttl 3s
//	                          │
//	                          ▼
//	        the package's own local control plane (etcd, kube-apiserver, ..., kwok)
//	                          ▲
//	        pod recorder: one watch on every Trainyard pod, resumed across restarts
//
// The processes run as deploy/'s identities, as in the end-to-end suite.
// Jobs are small CPU-only replicas whose simulated pods run for a second or
// two (sim.trainyard.dev/run-for); a fifth of them have one replica fail
// once, another fifth two workers that each fail twice
// (sim.trainyard.dev/fail-attempts, restart policy OnFailure, success when
// all workers succeed), so restarts happen during faults and must be
// counted exactly.
//
// # Faults
//
// One at a time: a fault is injected, undone, and the suite waits until
// the system is whole again before the next (after a random pause of up to
// Config.Gap). That makes the time to converge a measure of one fault, not
// of a pile-up; the load never stops meanwhile.
//
//	kill -9 API server              SIGKILL; restarted after 1 s on the same ports
//	kill -9 worker                  SIGKILL (the scheduler's leader every other time); a new
//	                                worker (new id) after 1 s; the dead one's jobs wait for
//	                                their leases to expire
//	SIGSTOP worker past its lease   frozen for lease + 2 s (the leader every other time),
//	                                then SIGCONT: its jobs and lease are someone else's by then,
//	                                and its fenced writes must fail
//	Postgres crash + restart        SIGQUIT to the primary's postmaster (immediate shutdown:
//	                                no checkpoint, WAL replayed at start), started again at
//	                                once; the standby streams from it again
//	Postgres fail-over              SIGQUIT to the primary; the standby promoted (pg_ctl
//	                                promote) and, having no standby of its own, not waiting
//	                                for one; after Config.Down the old primary rewound
//	                                (pg_rewind -R) and started as the new primary's
//	                                synchronous standby. Trainyard is told nothing: its
//	                                connections find the writable host by themselves
//	etcd + kube-apiserver crash     cluster.Restart: SIGKILL both, start etcd, then the API
//	                                server, on the same ports and data
//
// Converged means all of: a probe job submitted at the moment of the fault
// has SUCCEEDED (the whole path — API, Postgres, scheduler, worker,
// Kubernetes, status back — works again); every API server and worker
// answers /readyz; every one's notification listener is connected to the
// primary; a live worker holds the scheduler lease; and no active
// job is held by a dead worker or under an expired lease (a dead or frozen
// worker's jobs were taken over). The time is from injection, so it includes the time the
// component was out. Baseline rows measure the same with no fault.
//
// The fail-over is what Patroni or CloudNativePG does, with the suite as
// the manager: every commit waits for the standby (synchronous_commit on,
// synchronous_standby_names '*'), so the promoted standby has every commit a
// client was told of; whatever the old primary wrote past that (commits it
// had not replicated, and had not acknowledged) pg_rewind takes away. The
// new primary runs without a synchronous standby until the old one rejoins,
// like Patroni's synchronous_mode without synchronous_mode_strict (and
// CloudNativePG's dataDurability preferred): a second failure in that window
// could lose commits, which is why the rejoin is part of the fault and no
// other fault comes before convergence. The report gives, per fail-over, the
// time from the primary's death to the first acknowledged CreateJob sent
// after it.
//
// # What is checked
//
// After the load stops and every job has ended:
//
//   - acknowledged jobs lost: every job CreateJob acknowledged is there,
//     through the API, with the uid it was acknowledged with; and Postgres
//     holds exactly as many jobs as were acknowledged (no retry made a
//     second job);
//   - pods created twice under one identity: two pods (UIDs) with the same
//     name and attempt label;
//   - replicas with two live pods at once: a pod appearing under a name
//     whose previous pod had not been deleted yet;
//   - jobs admitted twice: more than one Admitted event (two schedulers);
//   - jobs that never reached a final state, and jobs that ended other than
//     SUCCEEDED (nothing in the load should fail);
//   - restarts counted once each: a job's restarts equal its replicas'
//     failures, each replica's likewise, and each replica had exactly the
//     pods of attempts 0..K, one each;
//   - API errors other than UNAVAILABLE (from the load's submits and the
//     probes' reads), and UNAVAILABLE during faults and outside them.
//
// The pod recorder reads the cluster, not Trainyard. When the restarted API
// server cannot resume its watch (410: its watch cache starts afresh), it
// lists and compares; a pod created and deleted wholly inside that gap
// would be missed, but pods are only made through the API server, which
// was down for most of it, and a missing attempt shows as a miscount. The
// table counts those relists.
//
// # What it found
//
// The first runs failed jobs with "pods is forbidden: User
// system:serviceaccount:trainyard:trainyard-worker cannot create resource
// pods": a kube-apiserver that has just started denies every request until
// its RBAC caches are filled, and the worker treated RBAC's Forbidden as
// terminal. It is retried now (kube.IsTerminal). The harness therefore
// logs, rather than fails on, RBAC refusals in this suite
// (harness.Options.RestartsAPIServer); the end-to-end suite still pins
// deploy/'s rights.
//
// And kube-scheduler exited a minute after one etcd + kube-apiserver crash
// ("Pod updated on a different node than previously added to. Scheduler
// cache is corrupted"): it exits on purpose, for its supervisor (a
// kubelet, for a static pod) to restart it, and this cluster had none, so
// every pod after it stayed Pending. The suite now restarts any control
// plane component that exits by itself (cluster.RestartExited, every half
// second) and the table says which did.
//
// A worker killed in the middle of a DELETE of a failed pod left the pod
// marked deleted (no grace period) but never removed — the API server's
// delete is two writes, and the request died between them — and the job,
// waiting for the old attempt's pod to go before creating the next, stayed
// RESTARTING. Kubernetes' remedy is to delete again; the worker does so
// after 5 s (job.StalledDeleteAfter).
package chaos
