// Package job is Trainyard's domain: the training job (spec, defaults,
// validation, names, TF_CONFIG, resource demand and the resource dimensions,
// queue reasons) and the decisions that run it.
// It does no I/O and imports nothing else of Trainyard's.
//
// # Plan: the reconcile loop's decisions
//
// The worker's reconcile loop is an impure shell around one pure function:
//
//	Plan(PlanInput{Job, Admitted, Deleted, Observed, Now}) → PlanResult{Status, Events, Actions, Requeue, RequeueAfter, Forget}
//
// The worker reads the job row from Postgres and the job's pods and
// TensorBoard Service from its informers, calls Plan,
// and applies the result in this order:
//
//  1. run the CaptureLogTail actions, writing each log tail into the
//     matching Status.Replicas[i].LastTermination (by pod name);
//  2. write Status and Events to Postgres in one transaction, fenced by its
//     claim on the job;
//  3. run the remaining actions in order; AlreadyExists on create and
//     NotFound on delete are success.
//
// Why pure: every behaviour users complain about in TFJob (restarts that
// escape backoffLimit, deadlines that fire late, exit codes lost with their
// pods, finished workers restarted) is a decision, and decisions in a pure
// function are table-tested without a cluster, replayed after a crash, and
// deterministic: the same input gives the same output, in the same order.
// Plan reads no clock but in.Now, has no randomness, and never writes into
// its input. Persisting before acting is what makes a crash harmless: the
// next pass sees the decision in Postgres and the world only partly
// changed, and converges.
//
// # Phases
//
//	          admitted              all running
//	QUEUED ────────────► STARTING ──────────────► RUNNING
//	                        │                      ▲    │
//	                        │ restart  all running │    │ restart
//	                        │                      │    ▼
//	                        └───────────────────► RESTARTING ◄─┐
//	                                                 └─────────┘ restart
//
//	STARTING, RUNNING, RESTARTING ── success policy met ──────────────────► SUCCEEDED
//	STARTING, RUNNING, RESTARTING ── failure not restarted, backoff limit,
//	                                  deadline ────────────────────────────► FAILED
//	any state not final ──────────── cancel, or delete of the job ─────────► CANCELLED
//	STARTING, RUNNING, RESTARTING ── preempted, or pods unschedulable past
//	                                  the timeout; once its pods are gone ─► QUEUED (plan_requeue.go)
//	any state not final ──────────── suspended (Status.SuspendRequested);
//	                                  once its pods are gone ─────────────► SUSPENDED
//	SUSPENDED ────────────────────── resumed (by the store) ──────────────► QUEUED
//
// A suspension takes the requeue's path (SIGTERM and the grace period, time
// to checkpoint) and ends in SUSPENDED instead of QUEUED: unadmitted, its
// quota released, restarts and requeues untouched. Plan changes nothing
// for a SUSPENDED job but a cancel. A resume before the pods are gone
// makes the stop a plain requeue.
//
// QUEUED waits for the scheduler (internal/admission): Plan changes nothing
// until PlanInput.Admitted. A job past admission goes back only by a
// requeue, which is not a failure: restarts are untouched. On admission the
// job becomes STARTING and its StartTime (from which activeDeadlineSeconds
// counts) is set — the scheduler writes that status (Admit) with its
// decision — and then the worker creates every replica pod (chief, workers, PS, evaluator,
// by index) and the TensorBoard are created; the slice controller (package
// worker/endpoints, not Plan) writes the job's EndpointSlice as the pods
// get addresses.
// STARTING and RESTARTING end when every replica that has not succeeded has
// its current pod Running; a pod in phase Unknown or pending again does not
// move a RUNNING job back. Each state change emits one event; entering
// RESTARTING is reported by the restart events themselves.
//
// Final states are final: Plan never creates a pod for a SUCCEEDED, FAILED
// or CANCELLED job, never records a termination for it, and leaves its
// status (replicas, counts, conditions) as it was when it ended; a cancel
// request arriving after the end is ignored. Only cleanup remains.
//
// Precedence within a pass: delete > cancel > success > deadline >
// replica decisions. A success recorded before a deadline wins over the
// deadline.
//
// # Restarts
//
// Pods run with restartPolicy Never; a restart is a delete and a create
// under the same name. Each pod is labelled with its attempt, the replica's
// restart count when the pod was created. The replica's current attempt is
// its persisted ReplicaStatus.Restarts, so:
//
//   - a pod of another attempt is stale: Plan deletes it (unless it is
//     already terminating) and waits for it to go before creating the
//     replacement under the same name;
//   - a replica with no pod and no recorded end of its current attempt gets
//     a pod of the current attempt (AlreadyExists after a crash is adoption);
//   - a restart is one write: ReplicaStatus.Restarts+1 and Status.Restarts+1
//     in the same status that the delete of the old pod follows. A worker
//     that crashes between the two finds the old attempt's pod stale and
//     deletes it; nothing is counted twice, nothing is lost.
//
// Every restart counts against RunPolicy.BackoffLimit, a total over the
// job, whatever caused it (unlike TFJob, kubeflow/training-operator#2045):
// restart policy OnFailure or ExitCode, Always after a success, and a
// running pod that vanished. A restart due when Status.Restarts has reached
// the limit fails the job instead (BackoffLimitExceeded). Restarts of one
// pass are all or nothing: if any replica ends the job in that pass, none
// of the pass's restarts is counted.
//
// # Terminations are kept before they are acted on
//
// When the current attempt's pod of a replica ends (Succeeded or Failed)
// and its end is not recorded yet, the pass records it
// (ReplicaStatus.LastTermination with exit code, reason, message, finish
// time and Attempt), asks for the failed pod's log tail (CaptureLogTail),
// sets Requeue, and decides nothing about any replica. The next pass
// decides on what is now in Postgres, so the failure message can quote the
// log, and no pod is deleted before its end is kept (TFJob #536, #1749).
// Cancel, deadline and delete do not wait: they record and end the job in
// the same pass, which is safe because the worker captures log tails before
// it deletes anything.
//
// A replica whose pod was seen Running and is gone without a trace
// (deleted behind Trainyard's back, lost with its node) is recorded as a
// failure with exit code -1 and reason PodMissing, so its restart is
// counted like any other. A pod that vanishes before it was seen running is
// simply created again.
//
// Decisions on a recorded end, by restart policy:
//
//	Never      failure → job FAILED (ReplicaFailed)
//	OnFailure  failure → restart
//	ExitCode   failure → restart if the code is retryable, else FAILED:
//	           the listed RetryableExitCodes, or by default 128..255
//	           (killed by a signal: OOM, preemption, SIGTERM); an end
//	           without an exit code (-1: eviction, lost node) is always
//	           retryable, as in TFJob, list or not, because it says
//	           nothing about the program
//	Always     failure or success → restart, while the job is not final
//
// A succeeded replica is not restarted except under Always, and never once
// the job is final (TFJob #1997); if its pod disappears it is not
// recreated. Success policy ChiefOrWorker0: the chief succeeded, or worker 0
// when there is no chief; AllWorkers: the chief (if any) and every worker
// succeeded. Only ends recorded by an earlier pass count.
//
// # Timers
//
// activeDeadlineSeconds counts from StartTime. Before it passes, every
// plan of a running job sets RequeueAfter to exactly the time left, so the
// worker's timer fails the job on time even when nothing else happens
// (TFJob #3358). ttlSecondsAfterFinished counts from CompletionTime; while
// objects are kept for it, RequeueAfter is the time left.
//
// # Cleanup
//
// When a job is final, its objects follow CleanPodPolicy:
//
//	None     everything is kept (until the TTL, or until the job is deleted)
//	Running  pods still Pending, Running or Unknown are deleted, and the
//	         TensorBoard (a running pod too); finished pods are kept
//	All      every pod and the TensorBoard are deleted
//
// The job's EndpointSlice (its replicas' DNS names under the namespace's
// Service of replicas) is not Plan's: the slice controller lists the
// replicas that run and deletes the slice once the job has no pod.
//
// A cancelled job, a job whose TTL has passed and a deleted job lose
// everything, whatever the policy. Status.CleanedUp is set once nothing of
// the job is left in Kubernetes. Forget tells the worker that the job needs
// no more passes: it is final, every deletion it asked for has completed,
// and no TTL is pending for what is kept — or it was deleted and nothing is
// left, when the worker purges its row.
//
// # Conditions and events
//
// Conditions (Queued, Admitted, Running, Restarting, Succeeded, Failed,
// Cancelled, Unschedulable, ContainersWaiting, AllReplicasReady) change LastTransitionTime
// only when their status flips; a condition that never held is not added
// as false.
// Unschedulable holds the scheduler's message for the first pending pod it
// cannot place; its Warning event is emitted when the condition turns true,
// not on every pass. ContainersWaiting does the same for a pending pod
// whose container the kubelet reports stuck (ImagePullBackOff,
// CreateContainerConfigError, ...; ObservedPod.Waiting), with the kubelet's
// reason.
// AllReplicasReady holds while every unfinished replica with a readiness
// probe has its pod running and ready (plan_ready.go); RUNNING never waits
// for it. Health probes and how a liveness failure becomes a counted
// restart: probes.go.
package job
