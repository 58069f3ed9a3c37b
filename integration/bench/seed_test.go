//go:build bench || integration

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/trainyard/trainyard/integration/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// A tenant's history, made fast: finished jobs as Trainyard leaves them by
// default (CleanPodPolicy Running: the job row SUCCEEDED and its finished
// pods kept; the job's EndpointSlice went when the last replica stopped
// running), without running them. Running 2,000 jobs
// through the worker and kwok would take longer than the whole bench.
//
//   - The rows go into Postgres in one INSERT: final, inactive, not cleaned
//     up, so no worker claims them and the orphan sweep keeps their objects.
//   - Each pod is Trainyard's rendering of the bench's job (kube.RenderPod,
//     labels included: the informers of the worker and of Trainyard's
//     scheduler hold it, as they would), created already bound to one of
//     the CPU nodes (no kube-scheduler work), and the bench at once writes
//     the status a kubelet leaves on a replica that exited 0: Succeeded,
//     the container terminated. The pods are history
//     (cluster.AnnotationHistory): kwok never runs them, so nothing but
//     that write makes their status, and kwok writes no log object or
//     status patch of its own for them (it did, racing the bench's write,
//     before 2026-12-04: seeding 8,000 pods took 88 s).
//   - No EndpointSlice: Trainyard deletes a job's slice when the job ends
//     with no replica running (job.Plan's cleanup; until 2026-12-05 the
//     job's own Service, which took its slice with it). Before 2026-12-04
//     it kept the Service until the TTL, and the bench seeded one per job
//     with its emptied EndpointSlice: 2,000 Services at the 10,000 level,
//     which every pod change in the namespace made the controller manager
//     scan.
//
// So the API server, etcd, the controller manager, the schedulers and the
// worker hold what they would hold for that history, and nobody spends CPU
// making it but the seeding.

// seedParallelism is how many seeding calls are in flight at once.
const seedParallelism = 32

// seeder adds finished jobs to a tenant's namespace.
type seeder struct {
	kc     kubernetes.Interface
	nodes  []string // the seeded pods are bound to these, in turn
	dbURL  string
	tenant string
	ns     string
	jobs   int // seeded so far
}

// seed adds jobs until the namespace holds at least pods seeded finished
// pods, and returns how long it took.
func (s *seeder) seed(b testing.TB, pods int) time.Duration {
	want := (pods + podsPerJob - 1) / podsPerJob
	if want <= s.jobs {
		return 0
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	jobs := make([]job.Job, 0, want-s.jobs)
	for i := s.jobs; i < want; i++ {
		jobs = append(jobs, job.Job{Tenant: s.tenant, Name: fmt.Sprintf("seed-%05d", i), UID: uuid.NewString(), Spec: benchSpec()})
	}
	s.insertRows(ctx, b, jobs)

	work := make(chan func() error)
	errs := make(chan error, seedParallelism)
	var wg sync.WaitGroup
	for range seedParallelism {
		wg.Go(func() {
			for fn := range work {
				if err := fn(); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	n := 0
	for _, j := range jobs {
		for _, r := range j.Spec.Replicas {
			for i := range r.Count {
				node := s.nodes[n%len(s.nodes)]
				n++
				work <- func() error { return s.createFinishedPod(ctx, j, r.Type, i, node) }
			}
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("seeding finished jobs: %v", err)
	default:
	}
	s.jobs = want
	return time.Since(start)
}

// insertRows writes the jobs as finished: SUCCEEDED, inactive, their
// objects kept (not cleaned up).
func (s *seeder) insertRows(ctx context.Context, b testing.TB, jobs []job.Job) {
	now := time.Now().UTC()
	status, err := json.Marshal(job.Status{
		State: job.Succeeded, StartTime: &now, CompletionTime: &now,
		Conditions: []job.Condition{{Type: job.CondSucceeded, Status: true, Reason: "Seeded", LastTransitionTime: now}},
	})
	if err != nil {
		b.Fatal(err)
	}
	spec, err := json.Marshal(benchSpec())
	if err != nil {
		b.Fatal(err)
	}
	uids, names := make([]string, len(jobs)), make([]string, len(jobs))
	for i, j := range jobs {
		uids[i], names[i] = j.UID, j.Name
	}
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		b.Fatalf("seeding job rows: %v", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `
		INSERT INTO jobs (tenant_id, uid, name, creator, spec, status, state, admitted, active,
		                  create_time, update_time, start_time, finish_time)
		SELECT $1, u, n, 'bench-seed', $4, $5, 'SUCCEEDED', true, false, $6, $6, $6, $6
		FROM unnest($2::uuid[], $3::text[]) AS t(u, n)`,
		s.tenant, uids, names, spec, status, now)
	if err != nil {
		b.Fatalf("seeding job rows: %v", err)
	}
}

// createFinishedPod creates a replica pod bound to node and writes the
// status a kubelet leaves on a replica that exited 0.
func (s *seeder) createFinishedPod(ctx context.Context, j job.Job, t job.ReplicaType, i int32, node string) error {
	pod, err := kube.RenderPod(j, s.ns, t, i, 0, kube.PodOptions{})
	if err != nil {
		return err
	}
	pod.Spec.NodeName = node
	pod.Annotations = map[string]string{cluster.AnnotationHistory: "true"} // the bench's spec has none
	pod, err = s.kc.CoreV1().Pods(s.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	at := metav1.NewTime(time.Now().Truncate(time.Second))
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodSucceeded,
		StartTime: &at,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: at},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: at},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: kube.ContainerName, Image: benchImage, ImageID: benchImage,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: at, FinishedAt: at,
			}},
		}},
	}
	_, err = s.kc.CoreV1().Pods(s.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// cpuNodes are the cluster's CPU nodes (cluster.DefaultNodes: kwok-cpu-*).
func cpuNodes(b testing.TB, kc kubernetes.Interface) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "trainyard.dev/pool=cpu"})
	if err != nil || len(list.Items) == 0 {
		b.Fatalf("the cluster's CPU nodes (trainyard.dev/pool=cpu): %d, %v", len(list.Items), err)
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}

// trim deletes the finished pods the blocks and the probe left in the
// namespaces (everything but the seeded jobs' pods, whose names start with
// "seed-"), so that a level and each of its pairs of blocks start with the
// seeded pods and no more, and returns how many it deleted. Without it the
// blocks' pods piled up: at 30 s per path a level's blocks leave 3,000, and
// the cluster's finished pods passed the pod garbage collector's threshold
// (12,500) in the middle of the 10,000 level, whose force deletes of
// hundreds of pods then loaded the control plane during whichever path was
// running (seen in the controller manager's log during Trainyard's blocks).
//
// The deletes have no grace period, and trim returns once the bench's
// informer has delivered every one of them: a graceful delete of a pod on
// a node is two writes, the second kwok's, which came seconds later. The
// block after a trim then started while kwok still removed its hundreds
// of pods, and every pod watch of the cluster (the worker's, the
// bench's) delivered its first events up to half a second late
// (2026-12-04: the five jobs submitted first in such a block, 180-540 ms
// to their pods against 40 at p50; single-pod probe creates 420 ms to the
// informer at p99 in the same block).
func (s *seeder) trim(b testing.TB, watch *podWatch, namespaces ...string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var doomed []types.NamespacedName
	for _, ns := range namespaces {
		pods, err := s.kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			b.Fatalf("listing the pods of %s: %v", ns, err)
		}
		for _, p := range pods.Items {
			finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			if finished && p.DeletionTimestamp == nil && !strings.HasPrefix(p.Name, "seed-") {
				doomed = append(doomed, types.NamespacedName{Namespace: ns, Name: p.Name})
			}
		}
	}
	work := make(chan types.NamespacedName)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range seedParallelism {
		wg.Go(func() {
			for p := range work {
				if err := s.kc.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for _, p := range doomed {
		work <- p
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("deleting the earlier levels' pods: %v", err)
	default:
	}
	keys := make([]string, len(doomed))
	for i, p := range doomed {
		keys[i] = p.String()
	}
	watch.waitGone(b, keys, 2*time.Minute)
	return len(doomed)
}
