package job_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trainyard/trainyard/internal/job"
)

// t0 is "now" in every case unless a case moves it; jobs started 10 minutes
// earlier.
var (
	t0      = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	started = t0.Add(-10 * time.Minute)
)

// jobBuilder builds a PlanInput: a job "tj" in some state with what the
// informers show for it.
type jobBuilder struct{ in job.PlanInput }

func newJob(reps ...job.ReplicaSpec) *jobBuilder {
	return &jobBuilder{in: job.PlanInput{
		Job: job.Job{
			UID: "uid-1", Tenant: "acme", Name: "tj",
			Spec: job.Spec{
				Replicas:      reps,
				RunPolicy:     job.RunPolicy{BackoffLimit: 3, CleanPodPolicy: job.CleanRunning},
				SuccessPolicy: job.SuccessChiefOrWorker0,
			},
			Status: job.Status{State: job.Queued, Conditions: []job.Condition{
				{Type: job.CondQueued, Status: true, Reason: "Submitted", LastTransitionTime: started.Add(-time.Minute)},
			}},
		},
		Admitted: true,
		Now:      t0,
	}}
}

// chiefWorkersPS is the usual job: chief (Never), 2 workers (OnFailure),
// 1 PS (Never), listed out of order on purpose.
func chiefWorkersPS() *jobBuilder {
	return newJob(
		replicaSpec(job.PS, 1, job.RestartNever),
		replicaSpec(job.Worker, 2, job.RestartOnFailure),
		replicaSpec(job.Chief, 1, job.RestartNever),
	)
}

func replicaSpec(t job.ReplicaType, n int32, rp job.RestartPolicy, retryable ...int32) job.ReplicaSpec {
	return job.ReplicaSpec{Type: t, Count: n, Image: "tf:2", Port: job.DefaultPort, RestartPolicy: rp, RetryableExitCodes: retryable}
}

// state puts the job in s as an earlier pass would have left it.
func (b *jobBuilder) state(s job.State) *jobBuilder {
	st := &b.in.Job.Status
	st.State = s
	if s == job.Queued {
		return b
	}
	start := started
	st.StartTime = &start
	st.Conditions = []job.Condition{
		{Type: job.CondQueued, Status: false, Reason: job.ReasonAdmitted, LastTransitionTime: started},
		{Type: job.CondAdmitted, Status: true, Reason: job.ReasonAdmitted, LastTransitionTime: started},
	}
	switch s {
	case job.Running:
		st.Conditions = append(st.Conditions, job.Condition{Type: job.CondRunning, Status: true, Reason: job.ReasonRunning, LastTransitionTime: started})
	case job.Restarting:
		st.Conditions = append(st.Conditions, job.Condition{Type: job.CondRestarting, Status: true, Reason: job.ReasonRestarting, LastTransitionTime: started})
	}
	if s.Final() {
		end := t0.Add(-time.Minute)
		st.CompletionTime = &end
	}
	return b
}

func (b *jobBuilder) observe(pods ...job.ObservedPod) *jobBuilder {
	b.in.Observed.Pods = pods
	if b.in.Job.Spec.TensorBoard != nil {
		b.in.Observed.TensorBoardPod, b.in.Observed.TensorBoardSvc = true, true
	}
	return b
}

// rep sets a replica's persisted status.
func (b *jobBuilder) rep(t job.ReplicaType, i, restarts int32, s job.ReplicaState, last *job.Termination) *jobBuilder {
	b.in.Job.Status.Replicas = append(b.in.Job.Status.Replicas, job.ReplicaStatus{
		Type: t, Index: i, Pod: job.PodName("tj", t, i), State: s, Restarts: restarts, LastTermination: last,
	})
	return b
}

func (b *jobBuilder) restarts(n int32) *jobBuilder { b.in.Job.Status.Restarts = n; return b }
func (b *jobBuilder) backoff(n int32) *jobBuilder  { b.in.Job.Spec.RunPolicy.BackoffLimit = n; return b }
func (b *jobBuilder) clean(p job.CleanPodPolicy) *jobBuilder {
	b.in.Job.Spec.RunPolicy.CleanPodPolicy = p
	return b
}
func (b *jobBuilder) success(p job.SuccessPolicy) *jobBuilder {
	b.in.Job.Spec.SuccessPolicy = p
	return b
}
func (b *jobBuilder) deadline(s int64) *jobBuilder {
	b.in.Job.Spec.RunPolicy.ActiveDeadlineSeconds = &s
	return b
}
func (b *jobBuilder) ttl(s int32) *jobBuilder {
	b.in.Job.Spec.RunPolicy.TTLSecondsAfterFinished = &s
	return b
}
func (b *jobBuilder) tensorBoard() *jobBuilder {
	b.in.Job.Spec.TensorBoard = &job.TensorBoard{Image: job.DefaultTensorBoardImage}
	return b
}
func (b *jobBuilder) now(t time.Time) *jobBuilder { b.in.Now = t; return b }
func (b *jobBuilder) notAdmitted() *jobBuilder    { b.in.Admitted = false; return b }
func (b *jobBuilder) cancel() *jobBuilder         { b.in.Job.Status.CancelRequested = true; return b }
func (b *jobBuilder) deleted() *jobBuilder        { b.in.Deleted = true; return b }
func (b *jobBuilder) nothingLeft() *jobBuilder    { b.in.Observed = job.Observed{}; return b }
func (b *jobBuilder) obj() job.PlanInput          { return b.in }

// pod builds an observed replica pod of job tj, attempt 0 unless told.
func pod(t job.ReplicaType, i int32, ph job.PodPhase, opts ...func(*job.ObservedPod)) job.ObservedPod {
	p := job.ObservedPod{Name: job.PodName("tj", t, i), Type: t, Index: i, Phase: ph}
	if ph != job.PodPending {
		p.Node = "node-a"
	}
	switch ph {
	case job.PodSucceeded:
		p.Terminated = &job.Termination{ExitCode: 0, Reason: "Completed", FinishTime: t0.Add(-time.Second)}
	case job.PodFailed:
		p.Terminated = &job.Termination{ExitCode: 1, Reason: "Error", FinishTime: t0.Add(-time.Second)}
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func attempt(a int32) func(*job.ObservedPod) {
	return func(p *job.ObservedPod) {
		p.Attempt = a
		if p.Terminated != nil {
			p.Terminated.Attempt = a
		}
	}
}

func exit(code int32, reason string) func(*job.ObservedPod) {
	return func(p *job.ObservedPod) { p.Terminated.ExitCode, p.Terminated.Reason = code, reason }
}

func deleting(p *job.ObservedPod) { p.Deleting = true }

// deletedAt marks a pod deleted without a grace period at t, and still there.
func deletedAt(t time.Time) func(*job.ObservedPod) {
	return func(p *job.ObservedPod) { p.Deleting, p.DeletedAt = true, t }
}

func unschedulable(msg string) func(*job.ObservedPod) {
	return func(p *job.ObservedPod) { p.Unschedulable = msg }
}

// term is a termination as an earlier pass recorded it.
func term(att, code int32, reason, logTail string) *job.Termination {
	return &job.Termination{Attempt: att, ExitCode: code, Reason: reason, LogTail: logTail, FinishTime: t0.Add(-time.Second)}
}

// allRunning are the pods of chiefWorkersPS, all running.
func allRunning() []job.ObservedPod {
	return []job.ObservedPod{pod(job.Chief, 0, job.PodRunning), pod(job.Worker, 0, job.PodRunning), pod(job.Worker, 1, job.PodRunning), pod(job.PS, 0, job.PodRunning)}
}

// withPod replaces the pod of the same replica in pods (or drops it when
// p has no name).
func withPod(pods []job.ObservedPod, p job.ObservedPod) []job.ObservedPod {
	out := slices.Clone(pods)
	for i := range out {
		if out[i].Type == p.Type && out[i].Index == p.Index {
			if p.Name == "" {
				// Clip so that appending to the result never writes into
				// another case's slice.
				return slices.Clip(slices.Delete(out, i, i+1))
			}
			out[i] = p
			return out
		}
	}
	return append(out, p)
}

func without(pods []job.ObservedPod, t job.ReplicaType, i int32) []job.ObservedPod {
	return withPod(pods, job.ObservedPod{Type: t, Index: i})
}

func createPod(t job.ReplicaType, i, att int32) job.Action {
	return job.Action{Kind: job.ActCreatePod, Type: t, Index: i, Attempt: att, Pod: job.PodName("tj", t, i)}
}
func deletePod(t job.ReplicaType, i, att int32) job.Action {
	return job.Action{Kind: job.ActDeletePod, Type: t, Index: i, Attempt: att, Pod: job.PodName("tj", t, i)}
}
func captureLog(t job.ReplicaType, i, att int32) job.Action {
	return job.Action{Kind: job.ActCaptureLogTail, Type: t, Index: i, Attempt: att, Pod: job.PodName("tj", t, i)}
}

var (
	createTB = job.Action{Kind: job.ActCreateTensorBoard}
	deleteTB = job.Action{Kind: job.ActDeleteTensorBoard}
)

// want is the part of a PlanResult a table case checks. Events are
// "Type/Reason"; Message is checked when set.
type want struct {
	State        job.State
	Reason       string
	Message      string
	Restarts     int32
	Actions      []job.Action
	Events       []string
	Requeue      bool
	RequeueAfter time.Duration
	Forget       bool
	CleanedUp    bool
}

func project(r job.PlanResult, w want) want {
	got := want{
		State: r.Status.State, Reason: r.Status.Reason, Restarts: r.Status.Restarts,
		Actions: r.Actions, Requeue: r.Requeue, RequeueAfter: r.RequeueAfter, Forget: r.Forget,
		CleanedUp: r.Status.CleanedUp,
	}
	if w.Message != "" {
		got.Message = r.Status.Message
	}
	for _, e := range r.Events {
		got.Events = append(got.Events, e.Type+"/"+e.Reason)
	}
	return got
}

func runTable(t *testing.T, cases map[string]struct {
	in   job.PlanInput
	want want
}) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := job.Plan(tc.in)
			if diff := cmp.Diff(tc.want, project(got, tc.want), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}
