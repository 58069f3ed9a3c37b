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

// --bursty runs every policy on the bursty trace and prints the figures
// of issue 42 with its targets.
func TestSimulateBursty(t *testing.T) {
	var out bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetArgs([]string{"simulate", "--bursty", "--nodes", "8", "--jobs", "120"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^cohort-history +120 +0 `,
		`(?m)^POLICY +GPU BUSY +SHARE JAIN +TO NOMINAL P50`,
		`(?m)^vision +cohort +\d+ `,
		`(?m)^1 GPU +scheduler `,
		`(?m)^cohort +utilisation [+-]\d+\.\d points over scheduler \(target \+20\): (MET|NOT MET)$`,
		`(?m)^cohort-history +GPU-hours lost to preemption \d+\.\d\d% \(target < 2%\): (MET|NOT MET)$`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
}
