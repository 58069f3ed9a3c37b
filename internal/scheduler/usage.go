package scheduler

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/kube"
)

// usage follows the pod informer and keeps, per node and per Trainyard
// job, what the pods bound there take, updated event by event (as
// kube-scheduler's cache is). A cycle then copies a few sums instead of
// walking every pod of the cluster, finished ones included: with ten
// thousand pods that walk cost more than the decision itself, on every
// cycle.
type usage struct {
	mu    sync.Mutex
	pods  map[string]podUse // by namespace/name: what it contributes now
	nodes map[string]job.Vector
	jobs  map[string]*jobUse // by job uid
}

// podUse is one pod's contribution.
type podUse struct {
	node   string
	req    job.Vector
	job    string // Trainyard job uid, "" for others' pods
	group  string // replica type, or "tensorboard"
	active bool   // takes its requests on the node (bound, not finished)
	placed bool   // a Trainyard pod on a node, or finished for good
}

// jobUse is what a Trainyard job's pods take: per node, and how many of
// each group are placed.
type jobUse struct {
	onNodes map[string]job.Vector
	placed  map[string]int32
}

func newUsage() *usage {
	return &usage{pods: map[string]podUse{}, nodes: map[string]job.Vector{}, jobs: map[string]*jobUse{}}
}

// useOf is what a pod contributes: nothing until it is bound; a finished
// pod takes nothing, but a Trainyard pod that succeeded still counts as
// placed (its replica needs no room any more).
func useOf(pod *corev1.Pod) podUse {
	if pod.Spec.NodeName == "" {
		return podUse{}
	}
	u := podUse{node: pod.Spec.NodeName, job: pod.Labels[kube.LabelJobUID], active: !finished(pod)}
	if u.job != "" {
		u.group = pod.Labels[kube.LabelReplicaType]
		if pod.Labels[kube.LabelComponent] == kube.ComponentTensorBoard {
			u.group = kube.ComponentTensorBoard
		}
		u.placed = u.active || pod.Status.Phase == corev1.PodSucceeded
	}
	if u.active {
		u.req = podRequests(pod)
	}
	return u
}

// set records a pod's new contribution (zero: none, the pod is gone) and
// reports whether it freed capacity on a node: only then may a waiting
// job fit where it did not.
func (u *usage) set(key string, now podUse) (freed bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	old := u.pods[key]
	u.apply(old, -1)
	u.apply(now, 1)
	if now == (podUse{}) {
		delete(u.pods, key)
	} else {
		u.pods[key] = now
	}
	return old.active && (!now.active || now.node != old.node)
}

func (u *usage) apply(p podUse, sign int64) {
	if p.node == "" {
		return
	}
	req := p.req.Times(sign)
	if p.active {
		u.nodes[p.node] = u.nodes[p.node].Add(req)
	}
	if p.job == "" {
		return
	}
	ju := u.jobs[p.job]
	if ju == nil {
		ju = &jobUse{onNodes: map[string]job.Vector{}, placed: map[string]int32{}}
		u.jobs[p.job] = ju
	}
	if p.active {
		ju.onNodes[p.node] = ju.onNodes[p.node].Add(req)
		if ju.onNodes[p.node].IsZero() {
			delete(ju.onNodes, p.node)
		}
	}
	if p.placed {
		ju.placed[p.group] += int32(sign)
		if ju.placed[p.group] == 0 {
			delete(ju.placed, p.group)
		}
	}
	if len(ju.onNodes) == 0 && len(ju.placed) == 0 {
		delete(u.jobs, p.job)
	}
}

// handler keeps the usage in step with the pod informer and wakes the
// loop when capacity is freed.
func (u *usage) handler(wake func()) cache.ResourceEventHandler {
	update := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		key, err := cache.MetaNamespaceKeyFunc(pod)
		if err != nil {
			return
		}
		if u.set(key, useOf(pod)) {
			wake()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, cur any) { update(cur) },
		DeleteFunc: func(obj any) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err == nil && u.set(key, podUse{}) {
				wake()
			}
		},
	}
}

// nodeUsed is what the pods on a node take.
func (u *usage) nodeUsed(name string) job.Vector {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.nodes[name]
}

// jobsUsed is, per node, what Trainyard jobs' pods take: what a
// cluster's agent publishes beside the nodes' usage (cluster.Node.Jobs).
func (u *usage) jobsUsed() map[string]job.Vector {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]job.Vector{}
	for _, ju := range u.jobs {
		for n, v := range ju.onNodes {
			out[n] = out[n].Add(v)
		}
	}
	return out
}

// job returns a copy of a Trainyard job's usage.
func (u *usage) job(uid string) (onNodes map[string]job.Vector, placed map[string]int32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ju := u.jobs[uid]
	if ju == nil {
		return nil, nil
	}
	onNodes = make(map[string]job.Vector, len(ju.onNodes))
	for n, v := range ju.onNodes {
		onNodes[n] = v
	}
	placed = make(map[string]int32, len(ju.placed))
	for g, c := range ju.placed {
		placed[g] = c
	}
	return onNodes, placed
}
