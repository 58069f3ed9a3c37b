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

// fifo is a slice-backed queue, as client-go's default one: a pop
// reslices past the head (clearing its slot), and the next growth of the
// slice leaves the popped part behind.
type fifo[K any] []K

func (f *fifo[K]) len() int { return len(*f) }

func (f *fifo[K]) push(k K) { *f = append(*f, k) }

func (f *fifo[K]) pop() K {
	var zero K
	k := (*f)[0]
	(*f)[0] = zero
	*f = (*f)[1:]
	return k
}
