//go:build chaos

package chaos

import (
	"fmt"
	"testing"
	"time"
)

// TestChaos is `make chaos`: 60 faults, one after another, under a steady
// load from three tenants. Per ten faults: two kills of an API server,
// three of a worker, two workers frozen past their leases, a Postgres crash,
// a Postgres fail-over and a control plane crash.
func TestChaos(t *testing.T) {
	round := []faultKind{faultKillWorker, faultKillAPI, faultPauseWorker, faultFailover, faultPostgres,
		faultKillWorker, faultKillAPI, faultKube, faultKillWorker, faultPauseWorker}
	var faults []faultKind
	for range 6 {
		faults = append(faults, round...)
	}
	rep := run(t, Config{
		Tenants: 3, SubmitEvery: 1500 * time.Millisecond, Baseline: 3,
		Faults: faults, Gap: 3 * time.Second, Down: time.Second, LeaseTTL: 3 * time.Second,
	})
	fmt.Println(rep.table())
	rep.require(t, 50)
}
