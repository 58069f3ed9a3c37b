//go:build integration || chaos

package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// giveUp bounds one submission's retries: past it the submission counts as
// never acknowledged (which the report shows), not as lost.
const giveUp = 2 * time.Minute

// shape is a kind of job in the load: small CPU-only replicas that run for
// a second or two, some failing a number of times first (restarted under
// OnFailure), so that restarts are counted under faults too.
type shape struct {
	name     string
	replicas []replica
}

type replica struct {
	typ          pb.ReplicaType
	count        int32
	runFor       string
	failAttempts int32 // each pod of it fails this many times, then succeeds
}

// restarts is how many restarts a job of the shape must count: one per
// failed attempt of each pod, no more, no fewer.
func (sh shape) restarts() int32 {
	var n int32
	for _, r := range sh.replicas {
		n += r.count * r.failAttempts
	}
	return n
}

// shapes are cycled through by each tenant.
var shapes = []shape{
	{"one", []replica{{pb.ReplicaType_REPLICA_TYPE_WORKER, 1, "1s", 0}}},
	{"chief+2", []replica{{pb.ReplicaType_REPLICA_TYPE_CHIEF, 1, "2s", 0}, {pb.ReplicaType_REPLICA_TYPE_WORKER, 2, "2s", 0}}},
	{"one", []replica{{pb.ReplicaType_REPLICA_TYPE_WORKER, 1, "1s", 0}}},
	{"fail-once", []replica{{pb.ReplicaType_REPLICA_TYPE_WORKER, 1, "1s", 1}}},
	{"2x fail-twice", []replica{{pb.ReplicaType_REPLICA_TYPE_WORKER, 2, "1s", 2}}},
}

var probeShape = shape{"probe", []replica{{pb.ReplicaType_REPLICA_TYPE_WORKER, 1, "1s", 0}}}

func (sh shape) spec() *pb.JobSpec {
	// All workers must succeed, so that every pod's failures are restarted
	// and counted to the end (with the default policy the job ends when
	// worker-0 does, and another worker's restart may be cut short).
	spec := &pb.JobSpec{RunPolicy: &pb.RunPolicy{BackoffLimit: new(sh.restarts() + 2)},
		SuccessPolicy: pb.SuccessPolicy_SUCCESS_POLICY_ALL_WORKERS}
	for _, r := range sh.replicas {
		ann := map[string]string{cluster.AnnotationRunFor: r.runFor}
		if r.failAttempts > 0 {
			ann[cluster.AnnotationFailAttempts] = fmt.Sprint(r.failAttempts)
		}
		spec.Replicas = append(spec.Replicas, &pb.ReplicaSpec{
			Type: r.typ, Count: r.count, Image: "tensorflow/tensorflow:2.16.1", Command: []string{"python", "train.py"},
			Resources:      &pb.Resources{Cpu: "100m", Memory: "64Mi"},
			RestartPolicy:  pb.RestartPolicy_RESTART_POLICY_ON_FAILURE,
			PodAnnotations: ann,
		})
	}
	return spec
}

// submission is one job the load asked for.
type submission struct {
	tenant, id string
	shape      shape
	acked      bool // CreateJob answered OK (to some attempt)
	uid        string
	attempts   int
}

func (s *submission) name() string { return harness.JobName(s.tenant, s.id) }

// apiError is one failed call.
type apiError struct {
	at     time.Time
	method string
	code   codes.Code
	msg    string
}

// load submits jobs from several tenants through both API servers, in
// turn, and records every submission and every error.
type load struct {
	clients []pb.JobServiceClient
	tenants []string
	every   time.Duration
	next    atomic.Uint64 // round robin over clients

	mu   sync.Mutex
	subs []*submission
	errs []apiError
	acks []ack
}

// ack is one acknowledged CreateJob call: when it was sent and answered.
type ack struct{ sent, answered time.Time }

func newLoad(clients []pb.JobServiceClient, tenants []string, every time.Duration) *load {
	return &load{clients: clients, tenants: tenants, every: every}
}

func (l *load) client() pb.JobServiceClient {
	return l.clients[l.next.Add(1)%uint64(len(l.clients))]
}

// run starts one submitter per tenant; the channel closes once ctx ended
// and every submission in flight is acknowledged or given up.
func (l *load) run(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	for i, tenant := range l.tenants {
		wg.Go(func() {
			tick := time.NewTicker(l.every)
			defer tick.Stop()
			for n := 0; ; n++ {
				sh := shapes[(n+i)%len(shapes)]
				l.submit(tenant, fmt.Sprintf("j%04d", n), sh)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// submit creates a job with a request id, retrying on any error (the id
// makes a retry of a create that did commit return that job) until it is
// acknowledged or giveUp passed.
func (l *load) submit(tenant, id string, sh shape) *submission {
	sub := &submission{tenant: tenant, id: id, shape: sh}
	l.mu.Lock()
	l.subs = append(l.subs, sub)
	l.mu.Unlock()
	req := &pb.CreateJobRequest{Parent: harness.TenantName(tenant), JobId: id, RequestId: uuid.NewString(),
		Job: &pb.Job{Spec: sh.spec()}}
	began := time.Now()
	for {
		sub.attempts++
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		j, err := l.client().CreateJob(ctx, req)
		cancel()
		if err == nil {
			l.mu.Lock()
			sub.acked, sub.uid = true, j.GetUid()
			l.acks = append(l.acks, ack{sent: sent, answered: time.Now()})
			l.mu.Unlock()
			return sub
		}
		l.failed("CreateJob", err)
		if time.Since(began) > giveUp {
			return sub
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (l *load) failed(method string, err error) {
	st, _ := status.FromError(err)
	l.mu.Lock()
	l.errs = append(l.errs, apiError{at: time.Now(), method: method, code: st.Code(), msg: st.Message()})
	l.mu.Unlock()
}

// probe submits a job as a client would at the moment of a fault and
// waits until it SUCCEEDED: the end-to-end path (API, Postgres, scheduler,
// worker, Kubernetes, status back) works again. The channel closes then.
func (l *load) probe(n int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		sub := l.submit(l.tenants[0], fmt.Sprintf("probe-%03d", n), probeShape)
		if !sub.acked {
			return
		}
		deadline := time.Now().Add(convergeTimeout)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			j, err := l.client().GetJob(ctx, &pb.GetJobRequest{Name: sub.name()})
			cancel()
			switch {
			case err != nil:
				l.failed("GetJob", err)
			case j.GetStatus().GetState() == pb.JobState_JOB_STATE_SUCCEEDED:
				close(done)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return done
}

// firstAck is the time from t until the first acknowledgement of a
// CreateJob sent at t or later (one sent before may have committed before
// t), or -1 if there was none.
func (l *load) firstAck(t time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := time.Duration(-1)
	for _, a := range l.acks {
		if d := a.answered.Sub(t); !a.sent.Before(t) && (first < 0 || d < first) {
			first = d
		}
	}
	return first
}

// snapshot returns the submissions and errors so far.
func (l *load) snapshot() ([]submission, []apiError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	subs := make([]submission, len(l.subs))
	for i, s := range l.subs {
		subs[i] = *s
	}
	return subs, append([]apiError(nil), l.errs...)
}
