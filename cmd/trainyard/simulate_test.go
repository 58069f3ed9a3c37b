package main

import (
	"bytes"
	"regexp"
	"testing"
)

// The two gangs of the example trace deadlock under quota-only admission
// and both finish under the scheduler; the table says so.
func TestSimulateTrace(t *testing.T) {
	var out bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetArgs([]string{"simulate", "--trace", "../../internal/sim/testdata/two-gangs.json", "--horizon", "24h"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^scheduler +2 +0 +3h0m0s +75\.0% +0\.0% `,
		`(?m)^quota-fifo +0 +2 +0s +0\.0% +100\.0% `,
		`(?m)^vision +scheduler +2 +0s +2h0m0s +2h0m0s$`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
	root = newRoot()
	root.SetArgs([]string{"simulate", "--nodes", "2"})
	if err := root.Execute(); err == nil {
		t.Error("--nodes 2 was accepted")
	}
}
