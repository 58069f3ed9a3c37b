//go:build integration

package chaos

import (
	"testing"
	"time"
)

// TestChaosSmoke is the short run inside `make test`: one fault of each
// kind under load, and every check of the full run (TestChaos, make chaos).
func TestChaosSmoke(t *testing.T) {
	faults := []faultKind{faultKillWorker, faultKillAPI, faultPauseWorker, faultPostgres, faultFailover, faultKube}
	rep := run(t, Config{
		Tenants: 3, SubmitEvery: 1500 * time.Millisecond, Baseline: 1,
		Faults: faults, Gap: time.Second, Down: time.Second, LeaseTTL: 3 * time.Second,
	})
	t.Log("\n" + rep.table())
	rep.require(t, len(faults))
}
