package webhook

import (
	"math/rand/v2"
	"time"
)

// Retry schedule: attempt n (1-based) failed → wait about
// BackoffBase·2^(n-1), capped at BackoffMax, jittered to between half and
// all of it; a message is given up once MaxAge has passed since it was
// written.
const (
	BackoffBase = 5 * time.Second
	BackoffMax  = 1 * time.Hour
	MaxAge      = 24 * time.Hour
)

// Backoff returns how long to wait after the attempts-th failed attempt,
// with "equal jitter": half fixed, half random, so retries of many
// messages to one receiver that failed together spread out.
func Backoff(attempts int32) time.Duration {
	d := BackoffMax
	if attempts >= 1 && attempts < 20 {
		d = min(BackoffBase<<(attempts-1), BackoffMax)
	}
	return d/2 + rand.N(d/2+1)
}

// GiveUp says whether a message written at created and failing at now is
// given up (FAILED) rather than retried at now+next.
func GiveUp(created, now time.Time, next time.Duration) bool {
	return now.Add(next).Sub(created) > MaxAge
}
