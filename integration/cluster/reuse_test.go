//go:build integration

package cluster_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/trainyard/trainyard/integration/cluster"
)

// Trainyard's worker restarts a replica by deleting its pod and creating a
// new pod of the same name as soon as its informer shows the old one gone.
// kwok v0.8.0 keys its pod work by namespace/name, so work meant for the old
// pod must never reach the new one: the new pod is neither deleted nor left
// Pending, and its status, exit code and log are its own.
//
// Each cycle recreates a name four times, each time the moment the watch
// delivers the predecessor's deletion, and each pod's outcome differs from its
// predecessor's:
//
//	P  run-forever, deleted as soon as it is created (unscheduled, bound and
//	   Pending, or just Running)
//	A  exit-code 1, run-for 300ms, deleted once Running after a random 0-400ms
//	   (so before, during or after its exit: kwok deletes it, the API server
//	   does, or kwok's exit is in flight); its log is failed.log
//	B  exits 0 after 200ms: Succeeded, succeeded.log; deleted once Succeeded
//	C  exits 2+i after 200ms: Failed, failed.log; deleted once Failed (a
//	   Failed pod deleted and recreated at once: the next cycle's P)
//
// Several names run side by side, as a job's replicas do.
func TestPodNameReusedAtOnce(t *testing.T) {
	const slots, cycles = 10, 5 // 50 cycles, 200 pods, 190 of them recreations
	ns := newNamespace(t)
	w := watchPodsByUID(t, ns)
	dyn, err := dynamic.NewForConfig(tc.RESTConfig())
	require.NoError(t, err)
	r := &reuseRun{ns: ns, w: w, logs: dyn.Resource(cluster.KwokLogsResource()).Namespace(ns)}

	began := time.Now()
	var wg sync.WaitGroup
	for s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("worker-%d", s)
			for c := range cycles {
				i := s*cycles + c
				if err := r.cycle(name, i); err != nil {
					r.fail(fmt.Sprintf("cycle %d (%s): %v", i, name, err))
					r.forceRemove(name)
				}
			}
			r.forceRemove(name)
		}()
	}
	wg.Wait()
	t.Logf("%d cycles, %d pods created under %d names in %s: %d failed cycles; %d log reads at the terminal state were not yet final",
		slots*cycles, r.created(), slots, time.Since(began).Round(time.Millisecond), len(r.failures), r.lateLogs())
	for _, f := range r.failures {
		t.Error(f)
	}
}

type reuseRun struct {
	ns   string
	w    *podsByUID
	logs dynamic.ResourceInterface

	mu       sync.Mutex
	failures []string
	pods     int
	late     int
}

func (r *reuseRun) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func (r *reuseRun) created() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods
}

func (r *reuseRun) lateLogs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.late
}

// reuseWait bounds every wait of a cycle; a pod here runs for at most 300ms.
const reuseWait = 20 * time.Second

func (r *reuseRun) cycle(name string, i int) error {
	// P: deleted the moment it is created (unscheduled, bound and Pending, or
	// just Running).
	pending, err := r.create(name, i, map[string]string{cluster.AnnotationRunForever: "true"})
	if err != nil {
		return err
	}
	if err := r.remove(name, pending); err != nil {
		return fmt.Errorf("P: %w", err)
	}

	// A: will fail with exit code 1; deleted while Running or just after.
	a, err := r.create(name, i, map[string]string{
		cluster.AnnotationExitCode: "1",
		cluster.AnnotationRunFor:   "300ms",
	})
	if err != nil {
		return err
	}
	p, err := r.w.wait(a, "Running", func(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodPending })
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ContainerID != containerID(a, "tensorflow") {
		return fmt.Errorf("A: container statuses of another pod: %+v", p.Status.ContainerStatuses)
	}
	if err := r.ownLog(a, cluster.LogLineFailed); err != nil {
		return fmt.Errorf("A: %w", err)
	}
	time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
	if err := r.remove(name, a); err != nil {
		return fmt.Errorf("A: %w", err)
	}

	// B: recreated at once, succeeds.
	if err := r.runToEnd(name, i, "B", map[string]string{
		cluster.AnnotationRunFor: "200ms",
	}, corev1.PodSucceeded, 0, cluster.LogLineSucceeded); err != nil {
		return err
	}

	// C: recreated at once, fails with its own code; the next cycle's P
	// replaces it the moment it is gone.
	code := 2 + i
	return r.runToEnd(name, i, "C", map[string]string{
		cluster.AnnotationRunFor:   "200ms",
		cluster.AnnotationExitCode: fmt.Sprint(code),
	}, corev1.PodFailed, int32(code), cluster.LogLineFailed)
}

// runToEnd creates the pod, waits until it is terminal, checks that the
// phase, exit code, container ID and log are its own, and deletes it.
func (r *reuseRun) runToEnd(name string, i int, role string, annotations map[string]string, phase corev1.PodPhase, code int32, lastLine string) error {
	uid, err := r.create(name, i, annotations)
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	p, err := r.w.wait(uid, "terminal", terminal)
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	if p.Status.Phase != phase {
		return fmt.Errorf("%s: phase %s, want %s: %s", role, p.Status.Phase, phase, describe(p))
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
		return fmt.Errorf("%s: container statuses %+v", role, p.Status.ContainerStatuses)
	}
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term.ExitCode != code {
		return fmt.Errorf("%s: exit code %d, want %d", role, term.ExitCode, code)
	}
	// The simulated kubelet derives container IDs from the pod's UID: a
	// status written for the predecessor would carry the predecessor's.
	if want := containerID(uid, "tensorflow"); term.ContainerID != want {
		return fmt.Errorf("%s: container ID %s belongs to another pod (want %s)", role, term.ContainerID, want)
	}
	if err := r.ownLog(uid, lastLine); err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	return r.remove(name, uid)
}

func containerID(uid types.UID, container string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + container))
	return "containerd://" + hex.EncodeToString(sum[:])
}

func (r *reuseRun) create(name string, i int, annotations map[string]string) (types.UID, error) {
	p := replicaPod(name, label(cluster.AttemptLabel, fmt.Sprint(i)))
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), reuseWait)
	defer cancel()
	got, err := tc.Client().CoreV1().Pods(r.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	r.mu.Lock()
	r.pods++
	r.mu.Unlock()
	return got.UID, nil
}

// remove deletes the pod as Trainyard's worker does (default grace period,
// UID precondition, background propagation) and returns once the watch has
// delivered its deletion.
func (r *reuseRun) remove(name string, uid types.UID) error {
	ctx, cancel := context.WithTimeout(context.Background(), reuseWait)
	defer cancel()
	err := tc.Client().CoreV1().Pods(r.ns).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions:     metav1.NewUIDPreconditions(string(uid)),
		PropagationPolicy: new(metav1.DeletePropagationBackground),
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return r.w.waitGone(uid)
}

// ownLog checks that the pod's log ends with lastLine and that its kwok Logs
// object is owned by this pod, not by its predecessor. Both may take a
// moment: kwok's server reads Logs objects through an informer, and the
// object of a predecessor may still be on its way out.
func (r *reuseRun) ownLog(uid types.UID, lastLine string) error {
	p := r.w.get(uid)
	first := true
	var got, owners string
	deadline := time.Now().Add(10 * time.Second)
	for {
		log, err := readLog(p.Name, r.ns)
		if err == nil {
			l := lines(log)
			got = l[len(l)-1]
			if obj, err := r.logs.Get(context.Background(), p.Name, metav1.GetOptions{}); err == nil {
				owners = strings.Join(ownerUIDs(obj), ",")
			} else {
				owners = err.Error()
			}
			if got == lastLine && owners == string(uid) {
				return nil
			}
		} else {
			got = err.Error()
		}
		if first {
			first = false
			if terminal(p) {
				r.mu.Lock()
				r.late++
				r.mu.Unlock()
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("log of %s ends %q (want %q), its Logs object is owned by %q (want %s)", p.Name, got, lastLine, owners, uid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLog(name, ns string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := tc.Client().CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return string(data), err
}

// forceRemove deletes whatever pod has the name, so that the next cycle
// starts from a free name.
func (r *reuseRun) forceRemove(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), reuseWait)
	defer cancel()
	zero := int64(0)
	_ = tc.Client().CoreV1().Pods(r.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	for ctx.Err() == nil {
		if _, err := tc.Client().CoreV1().Pods(r.ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// podsByUID records, per UID, the latest version of every pod in a
// namespace that a watch delivers and which of them were deleted: pods of
// one name are told apart.
type podsByUID struct {
	mu      sync.Mutex
	latest  map[types.UID]*corev1.Pod
	deleted map[types.UID]bool
}

func watchPodsByUID(t *testing.T, ns string) *podsByUID {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &podsByUID{latest: map[types.UID]*corev1.Pod{}, deleted: map[types.UID]bool{}}
	list, err := tc.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			wi, err := tc.Client().CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				if ev.Type == watch.Bookmark {
					continue
				}
				w.mu.Lock()
				w.latest[p.UID] = p.DeepCopy()
				if ev.Type == watch.Deleted {
					w.deleted[p.UID] = true
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *podsByUID) get(uid types.UID) *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest[uid]
}

var errDeleted = errors.New("deleted, not by the test")

// wait returns the pod once its latest version satisfies ok; it fails at
// once if the pod is deleted (only the test deletes pods, after waiting).
func (w *podsByUID) wait(uid types.UID, what string, ok func(*corev1.Pod) bool) (*corev1.Pod, error) {
	deadline := time.Now().Add(reuseWait)
	for {
		w.mu.Lock()
		p, gone := w.latest[uid], w.deleted[uid]
		w.mu.Unlock()
		switch {
		case p != nil && !gone && ok(p):
			return p, nil
		case gone:
			return nil, fmt.Errorf("pod %s (%s) %w while waiting for %s; last seen %s", podName(p), uid, errDeleted, what, describe(p))
		case time.Now().After(deadline):
			return nil, fmt.Errorf("pod %s (%s) not %s after %s; last seen %s", podName(p), uid, what, reuseWait, describe(p))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *podsByUID) waitGone(uid types.UID) error {
	deadline := time.Now().Add(reuseWait)
	for {
		w.mu.Lock()
		p, gone := w.latest[uid], w.deleted[uid]
		w.mu.Unlock()
		if gone {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s (%s) still there %s after its deletion; last seen %s", podName(p), uid, reuseWait, describe(p))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func podName(p *corev1.Pod) string {
	if p == nil {
		return "<unseen>"
	}
	return p.Name
}
