package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/internal/job"
)

func TestUnfinishedStates(t *testing.T) {
	var quoted []string
	for _, s := range job.States {
		if !s.Final() && s != job.Suspended {
			quoted = append(quoted, fmt.Sprintf("'%s'", s))
		}
	}
	if want := "state IN (" + strings.Join(quoted, ", ") + ")"; sqlUnfinished != want {
		t.Fatalf("sqlUnfinished = %s, job.State.Final says %s", sqlUnfinished, want)
	}
}
