//go:build bench || integration

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgWaits is what the backends of one database were doing, sampled from
// pg_stat_activity: for each "state wait_event_type:wait_event" the
// average number of backends in it.
type pgWaits struct {
	samples int
	counts  map[string]int
}

// samplePG samples the database of dbURL every 50 ms until the returned
// stop is called, which returns the samples. Backends in a transaction
// waiting for their client's next statement show as "idle in transaction
// Client:ClientRead"; running on CPU as "active CPU".
func samplePG(b testing.TB, dbURL string) (stop func() pgWaits) {
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatalf("pg_stat_activity sampler: %v", err)
	}
	w := pgWaits{counts: map[string]int{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer conn.Close(context.Background())
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `
				SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)
				FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()
				  AND state IN ('active', 'idle in transaction')
				GROUP BY 1`)
			if err != nil {
				return
			}
			w.samples++
			for rows.Next() {
				var k string
				var n int
				if rows.Scan(&k, &n) == nil {
					w.counts[k] += n
				}
			}
			rows.Close()
		}
	})
	b.Cleanup(func() { cancel(); wg.Wait() }) // a run that fails before stop
	return func() pgWaits {
		cancel()
		wg.Wait()
		return w
	}
}

// merge adds o's samples to w's.
func (w *pgWaits) merge(o pgWaits) {
	if w.counts == nil {
		w.counts = map[string]int{}
	}
	w.samples += o.samples
	for k, n := range o.counts {
		w.counts[k] += n
	}
}

// String lists the states by average backends, largest first.
func (w pgWaits) String() string {
	if w.samples == 0 {
		return "no samples"
	}
	type kv struct {
		k string
		v float64
	}
	var all []kv
	var total float64
	for k, n := range w.counts {
		v := float64(n) / float64(w.samples)
		total += v
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k, b.k)
	})
	parts := []string{fmt.Sprintf("%.2f in all", total)}
	for i, e := range all {
		if e.v < 0.01 || i == 4 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}
