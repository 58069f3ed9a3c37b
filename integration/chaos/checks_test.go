//go:build integration || chaos

package chaos

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// report is what a run found. Every list must be empty for the run to pass.
type report struct {
	duration            time.Duration
	faults              []faultRun
	tenants             int
	acked, neverAcked   int
	jobsInPostgres      int
	pods                int      // distinct pods (UIDs) the recorder saw
	lost                []string // acknowledged, then not found (or another job under the name)
	createdTwice        []string // a pod identity (job, replica, attempt) with two UIDs
	twoLive             []string // a pod name with two live pods at once
	admittedTwice       []string
	stuck               []string // not final after the settle timeout
	notSucceeded        []string // final, but not SUCCEEDED: nothing in the load should fail
	restartsExpected    int
	restartsCounted     int
	restartsOff         []string // a job or replica whose restart count is not its failures
	attemptsOff         []string // a replica whose pods were not exactly attempts 0..K, once each
	unavailableInFaults int
	unavailableOutside  int
	otherErrors         []apiError
	relists             int
	exited              map[string]int // control plane components restarted after exiting by themselves
}

// check gathers the report after the run settled: jobs through the API,
// pods from the recorder, admissions from Postgres.
func (s *suite) check() *report {
	t := s.t
	subs, errs := s.load.snapshot()
	pods, overlaps, relists := s.pods.history()
	r := &report{faults: s.faults, tenants: s.cfg.Tenants, twoLive: overlaps, relists: relists}
	s.mu.Lock()
	r.exited = maps.Clone(s.exited)
	s.mu.Unlock()
	for _, lives := range pods {
		r.pods += len(lives)
	}
	client := s.load.client()
	for _, sub := range subs {
		if !sub.acked {
			r.neverAcked++
			continue
		}
		r.acked++
		j, err := getJob(client, sub.name())
		switch {
		case status.Code(err) == codes.NotFound:
			r.lost = append(r.lost, sub.name())
			continue
		case err != nil:
			t.Fatalf("reading %s after the run: %v", sub.name(), err)
		case j.GetUid() != sub.uid:
			r.lost = append(r.lost, fmt.Sprintf("%s (uid %s, acknowledged %s)", sub.name(), j.GetUid(), sub.uid))
			continue
		}
		st := j.GetStatus()
		switch st.GetState() {
		case pb.JobState_JOB_STATE_SUCCEEDED:
		case pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED:
			r.notSucceeded = append(r.notSucceeded, fmt.Sprintf("%s %s: %s", sub.name(), st.GetState(), st.GetMessage()))
		default:
			r.stuck = append(r.stuck, fmt.Sprintf("%s %s", sub.name(), st.GetState()))
			s.describe(sub, j)
		}
		want := sub.shape.restarts()
		r.restartsExpected += int(want)
		r.restartsCounted += int(st.GetRestarts())
		if st.GetRestarts() != want {
			r.restartsOff = append(r.restartsOff, fmt.Sprintf("%s: %d restarts, want %d", sub.name(), st.GetRestarts(), want))
		}
		r.checkReplicas(sub, j, pods, s.env.Namespace(sub.tenant))
	}
	r.admittedTwice = s.admittedTwice()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&r.jobsInPostgres); err != nil {
		t.Fatalf("counting jobs: %v", err)
	}
	for _, e := range errs {
		switch {
		case e.code != codes.Unavailable:
			r.otherErrors = append(r.otherErrors, e)
		case s.duringFault(e.at):
			r.unavailableInFaults++
		default:
			r.unavailableOutside++
		}
	}
	return r
}

// checkReplicas compares each replica's restarts and pods with its shape:
// a replica failing K times has restarts K and exactly the pods of
// attempts 0..K, one each.
func (r *report) checkReplicas(sub submission, j *pb.Job, pods map[string][]podLife, ns string) {
	restarts := map[string]int32{}
	for _, rs := range j.GetStatus().GetReplicas() {
		restarts[fmt.Sprintf("%s/%d", rs.GetType(), rs.GetIndex())] = rs.GetRestarts()
	}
	for _, rep := range sub.shape.replicas {
		for i := range rep.count {
			if got := restarts[fmt.Sprintf("%s/%d", rep.typ, i)]; got != rep.failAttempts {
				r.restartsOff = append(r.restartsOff, fmt.Sprintf("%s %s-%d: %d restarts, want %d", sub.name(), rep.typ, i, got, rep.failAttempts))
			}
			name := job.PodName(sub.id, replicaType(rep.typ), i)
			seen := map[string]int{}
			for _, l := range pods[ns+"/"+name] {
				seen[l.attempt]++
			}
			for a, n := range seen {
				if n > 1 {
					r.createdTwice = append(r.createdTwice, fmt.Sprintf("%s/%s attempt %s: %d pods", ns, name, a, n))
				}
			}
			for a := range rep.failAttempts + 1 {
				if seen[strconv.Itoa(int(a))] == 0 {
					r.attemptsOff = append(r.attemptsOff, fmt.Sprintf("%s/%s: no pod of attempt %d (saw %v)", ns, name, a, seen))
				}
			}
			if len(seen) > int(rep.failAttempts)+1 {
				r.attemptsOff = append(r.attemptsOff, fmt.Sprintf("%s/%s: attempts %v, want 0..%d", ns, name, seen, rep.failAttempts))
			}
		}
	}
}

// replicaType is the domain's name of a replica type: CHIEF is "chief".
func replicaType(t pb.ReplicaType) job.ReplicaType {
	return job.ReplicaType(strings.ToLower(strings.TrimPrefix(t.String(), "REPLICA_TYPE_")))
}

func getJob(c pb.JobServiceClient, name string) (*pb.Job, error) {
	var err error
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var j *pb.Job
		j, err = c.GetJob(ctx, &pb.GetJobRequest{Name: name})
		cancel()
		if status.Code(err) != codes.Unavailable {
			return j, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// admittedTwice lists jobs with more than one Admitted event: two
// schedulers (or one, twice) admitted them. Nothing in the load is
// preempted or requeued, so one admission each is right.
func (s *suite) admittedTwice() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := s.db.Query(ctx, `SELECT tenant_id || '/' || job_name, count(*) FROM job_events
		WHERE reason = 'Admitted' GROUP BY tenant_id, job_uid, job_name HAVING count(*) > 1`)
	if err != nil {
		s.t.Fatalf("reading admissions: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s: %d admissions", name, n))
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	return out
}

// duringFault reports whether at lies between a fault's injection and its
// convergence.
func (s *suite) duringFault(at time.Time) bool {
	for _, f := range s.faults {
		if f.kind != faultNone && !at.Before(f.at) && at.Before(f.at.Add(f.converge)) {
			return true
		}
	}
	return false
}

// describe logs what the cluster and Trainyard say of a job that did not
// end: its replicas' status and its pods as they are and as recorded.
func (s *suite) describe(sub submission, j *pb.Job) {
	ns := s.env.Namespace(sub.tenant)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (uid %s) is %s:\n", sub.name(), j.GetUid(), j.GetStatus().GetState())
	for _, rs := range j.GetStatus().GetReplicas() {
		fmt.Fprintf(&b, "  replica %s-%d: %s, restarts %d, pod %s on %q\n", rs.GetType(), rs.GetIndex(), rs.GetState(),
			rs.GetRestarts(), rs.GetPod(), rs.GetNode())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := s.env.Cluster.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelJobUID + "=" + j.GetUid()})
	if err != nil {
		fmt.Fprintf(&b, "  listing pods: %v\n", err)
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  pod %s uid %s attempt %s: phase %s, node %q, deleting %v, rv %s, conditions %v\n", p.Name, p.UID,
			p.Labels[kube.LabelAttempt], p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, p.ResourceVersion, p.Status.Conditions)
	}
	history, _, _ := s.pods.history()
	for name, lives := range history {
		if strings.HasPrefix(name, ns+"/"+sub.id+"-") {
			fmt.Fprintf(&b, "  recorded %s: %+v\n", name, lives)
		}
	}
	s.t.Log(b.String())
}
