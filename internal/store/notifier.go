package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// txn is a transaction of the store with the NOTIFYs it wants sent once
// it has committed (inTx).
type txn struct {
	pgx.Tx
	notes map[note]struct{}
}

type note struct{ channel, payload string }

// notify asks for a NOTIFY on channel once tx has committed; nothing is sent
// if it rolls back. Identical ones are sent once.
func (tx *txn) notify(channel, payload string) {
	if tx.notes == nil {
		tx.notes = map[note]struct{}{}
	}
	tx.notes[note{channel, payload}] = struct{}{}
}

// notifier sends the NOTIFYs of committed transactions, coalesced.
//
// A NOTIFY inside the writing transaction costs its commit a turn on a
// lock that every notifying commit of the whole database cluster takes
// (the notification queue's): under load, commits then queue up behind
// each other — issue 11 measured 8 clients of one tenant at 0.11× pgbench's
// INSERT rate, and pgbench itself drops from 11,495 to 4,035 INSERTs/s with
// a pg_notify in each transaction. So the store sends them after commit
// instead, from one goroutine per Store: notifications that arrive while a
// send is in flight are folded into the next one (identical ones once), and
// each send is one statement (one short transaction) however many they are.
// When idle, a notification leaves at once.
//
// Each send is a transaction of its own, and under a steady write load
// the sender would send one per write statement, which cost the creates
// about a sixth of their rate (BenchmarkJobCreate/parallel, 8 callers:
// 183 µs a job against 153 µs with sends at most every 2 ms). So
// notifications that only wake a poller up early — new events for
// watchers, work for the scheduler (lazy) — wait until notifyLinger has
// passed since the last send began; those that hand work to a worker or
// change a tenant's access leave at once and take the lazy ones with them.
// (A 5 ms gap on every notification, 2026-12-03, bunched the workers'
// wake-ups: at 100 jobs/s their pods came in bursts.) The linger was 2 ms
// until a profile of `trainyard serve` taking CreateJobs from one client
// (500 a second) put a tenth of its CPU in the sender: nearly a send per
// create. At 10 ms the scheduler still hears of new jobs more often than
// it cycles (scheduler.DefaultMinInterval, 20 ms), a watcher gets a
// create's event at most 10 ms later, and a note after a quiet spell
// still leaves at once.
//
// What this gives up: a process that dies between a commit and the send
// loses the wake-up. Wake-ups were never the only signal — every reader
// polls on a timer and re-reads when it reconnects (doc.go,
// "Notifications") — so a lost one costs latency, never correctness.
type notifier struct {
	// exec sends one batch: channels[i] gets payloads[i].
	exec func(ctx context.Context, channels, payloads []string) error

	// linger is how long after a send began lazy notes may wait for
	// company (notifyLinger; 0 sends them at once).
	linger time.Duration

	mu       sync.Mutex
	pending  map[note]struct{}
	running  bool      // a goroutine is sending; it takes pending when it is done
	urgent   bool      // pending holds a note that must not wait
	lastSend time.Time // when the last send began
	hurry    chan struct{}

	sends, failures atomic.Int64 // for tests and metrics
}

// notifyLinger is how long lazy notes may wait for the next send (see
// notifier).
const notifyLinger = 10 * time.Millisecond

// lazy says whether a note on channel may wait for notifyLinger: it only
// wakes a reader that also polls (the scheduler, watch streams).
func lazy(channel string) bool {
	return channel == ChannelEvents || channel == ChannelSchedule || channel == ChannelFreed
}

// add queues notes for sending and starts a sender if none runs.
func (n *notifier) add(notes map[note]struct{}) {
	if len(notes) == 0 {
		return
	}
	n.mu.Lock()
	if n.pending == nil {
		n.pending = make(map[note]struct{}, len(notes))
	}
	urgent := false
	for k := range notes {
		n.pending[k] = struct{}{}
		urgent = urgent || !lazy(k.channel)
	}
	if urgent && !n.urgent {
		n.urgent = true
		if n.hurry != nil {
			select {
			case n.hurry <- struct{}{}:
			default:
			}
		}
	}
	start := !n.running
	if start {
		n.running = true
		n.hurry = make(chan struct{}, 1)
	}
	n.mu.Unlock()
	if start {
		go n.run()
	}
}

// run sends what is pending until nothing is: the goroutine lives only
// while there is something to send, so a Store needs no Close for it.
// Lazy notes wait for notifyLinger after the last send began, or for an
// urgent note.
func (n *notifier) run() {
	for {
		n.mu.Lock()
		if len(n.pending) == 0 {
			n.running = false
			n.mu.Unlock()
			return
		}
		if wait := n.linger - time.Since(n.lastSend); !n.urgent && wait > 0 {
			hurry := n.hurry
			n.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-hurry:
				t.Stop()
			}
			n.mu.Lock()
		}
		batch := n.pending
		n.pending, n.urgent, n.lastSend = nil, false, time.Now()
		select { // a hurry meant for this batch
		case <-n.hurry:
		default:
		}
		n.mu.Unlock()
		n.send(batch)
	}
}

func (n *notifier) send(batch map[note]struct{}) {
	channels, payloads := make([]string, 0, len(batch)), make([]string, 0, len(batch))
	for k := range batch {
		channels, payloads = append(channels, k.channel), append(payloads, k.payload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := n.exec(ctx, channels, payloads)
	n.sends.Add(1)
	if err != nil {
		// Lost: readers poll (see above). Not retried, so that a database
		// that is down does not pile notifications up in memory.
		n.failures.Add(1)
	}
}

// newNotifier sends through pool.
func newNotifier(pool *pgxpool.Pool) *notifier {
	return &notifier{linger: notifyLinger, exec: func(ctx context.Context, channels, payloads []string) error {
		// The send's own commit need not wait for its WAL to reach disk: a
		// wake-up lost in a crash costs what any lost one does (see above),
		// and the wait would hold up the commits of the writes it follows.
		_, err := pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true),
			(SELECT count(pg_notify(c, p)) FROM unnest($1::text[], $2::text[]) AS u(c, p))`, channels, payloads)
		return err
	}}
}
