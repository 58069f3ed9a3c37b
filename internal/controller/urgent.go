package controller

import "k8s.io/client-go/util/workqueue"

// urgentFirst is the order of a Loop's queue when Config.Urgent is set: a
// key urgent when it was added is handed out before every other key, and
// each class keeps the order keys were added in. The workqueue calls it
// under its own lock, and keeps its dedup rule: a key is in the queue at
// most once, and never while it is being synced.
//
// A key's class is fixed when it is pushed. A key added again while it
// waits (workqueue calls Touch) stays where it is: the worker's urgent keys
// are jobs it has just claimed, which nothing else has queued.
type urgentFirst[K comparable] struct {
	urgent func(K) bool
	hi, lo fifo[K]
}

var _ workqueue.Queue[string] = (*urgentFirst[string])(nil)

func (q *urgentFirst[K]) Touch(K) {}

func (q *urgentFirst[K]) Push(k K) {
	if q.urgent(k) {
		q.hi.push(k)
		return
	}
	q.lo.push(k)
}

func (q *urgentFirst[K]) Len() int { return q.hi.len() + q.lo.len() }

func (q *urgentFirst[K]) Pop() K {
	if q.hi.len() > 0 {
		return q.hi.pop()
	}
	return q.lo.pop()
}

// fifo is a slice-backed queue whose popped slots are released as it
// drains, so a burst of thousands of keys does not stay allocated.
type fifo[K any] struct {
	items []K
	head  int
}

func (f *fifo[K]) len() int { return len(f.items) - f.head }

func (f *fifo[K]) push(k K) { f.items = append(f.items, k) }

func (f *fifo[K]) pop() K {
	var zero K
	k := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	if f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	} else if f.head > 1024 && f.head > len(f.items)/2 {
		f.items, f.head = append(f.items[:0:0], f.items[f.head:]...), 0
	}
	return k
}
