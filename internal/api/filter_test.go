package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// filterCases are TestParseJobFilter's table and FuzzParseJobFilter's seeds.
var filterCases = map[string]struct {
	in   string
	want jobFilter
	bad  string
}{
	"empty":           {in: "", want: jobFilter{}},
	"state":           {in: "state = RUNNING", want: jobFilter{States: []job.State{job.Running}}},
	"enum spelling":   {in: "state=JOB_STATE_FAILED", want: jobFilter{States: []job.State{job.Failed}}},
	"lower case":      {in: "state = queued", want: jobFilter{States: []job.State{job.Queued}}},
	"or of states":    {in: "state = QUEUED OR state = RUNNING", want: jobFilter{States: []job.State{job.Queued, job.Running}}},
	"parenthesised":   {in: "(state = QUEUED OR state = RUNNING) AND labels.team = nlp", want: jobFilter{States: []job.State{job.Queued, job.Running}, LabelEquals: map[string]string{"team": "nlp"}}},
	"quoted label":    {in: `labels.team = "vision"`, want: jobFilter{LabelEquals: map[string]string{"team": "vision"}}},
	"label with path": {in: `labels.example.com/owner = "a-b"`, want: jobFilter{LabelEquals: map[string]string{"example.com/owner": "a-b"}}},
	"has label":       {in: "labels.team:*", want: jobFilter{LabelExists: []string{"team"}}},
	"creator":         {in: `creator = "alice@example.com" AND state = RUNNING`, want: jobFilter{Creator: "alice@example.com", States: []job.State{job.Running}}},
	"everything": {
		in:   `state = SUCCEEDED AND labels.team = "nlp" AND labels.sweep:*`,
		want: jobFilter{States: []job.State{job.Succeeded}, LabelEquals: map[string]string{"team": "nlp"}, LabelExists: []string{"sweep"}},
	},
	"unknown state":   {in: "state = DONE", bad: "unknown state"},
	"unknown field":   {in: "owner = bob", bad: "cannot parse"},
	"state twice":     {in: "state = QUEUED AND state = RUNNING", bad: "may test state once"},
	"or across kinds": {in: "state = QUEUED OR labels.team = nlp", bad: "cannot parse"},
	"too long":        {in: strings.Repeat("labels.a = b AND ", 200) + "labels.a = b", bad: "longer than"},
}

func TestParseJobFilter(t *testing.T) {
	for name, tc := range filterCases {
		t.Run(name, func(t *testing.T) {
			got, err := parseJobFilter("filter", tc.in)
			if tc.bad != "" {
				require.Equal(t, codes.InvalidArgument, status.Code(err))
				require.Contains(t, status.Convert(err).Message(), tc.bad)
				return
			}
			require.NoError(t, err)
			require.Empty(t, cmp.Diff(tc.want, got))
		})
	}
}

func TestJobFilterMatches(t *testing.T) {
	j := job.Job{Labels: map[string]string{"team": "nlp"}, Status: job.Status{State: job.Running}}
	require.True(t, jobFilter{}.matches(j))
	require.True(t, jobFilter{States: []job.State{job.Queued, job.Running}}.matches(j))
	require.False(t, jobFilter{States: []job.State{job.Queued}}.matches(j))
	require.True(t, jobFilter{LabelEquals: map[string]string{"team": "nlp"}, LabelExists: []string{"team"}}.matches(j))
	require.False(t, jobFilter{LabelEquals: map[string]string{"team": "cv"}}.matches(j))
	require.False(t, jobFilter{LabelExists: []string{"sweep"}}.matches(j))
	require.False(t, jobFilter{Creator: "bob"}.matches(j))
	require.True(t, jobFilter{Creator: "bob"}.matches(job.Job{Creator: "bob"}))
}

// FuzzParseJobFilter: the parser never panics on what passes the text
// boundary; what it accepts has only known states and label keys and
// values the store can query (no NUL), and it refuses with
// INVALID_ARGUMENT naming the field.
func FuzzParseJobFilter(f *testing.F) {
	for _, tc := range filterCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if checkText(&pb.ListJobsRequest{Filter: in}) != nil {
			return // the text boundary refuses it before any parser runs
		}
		got, err := parseJobFilter("filter", in)
		if err != nil {
			require.Equal(t, codes.InvalidArgument, status.Code(err))
			require.Equal(t, "filter", badRequest(t, err).GetFieldViolations()[0].GetField())
			return
		}
		for _, st := range got.States {
			_, known := stateToPB[st]
			require.True(t, known, "state %q", st)
		}
		for k, v := range got.LabelEquals {
			require.NotEmpty(t, k)
			require.NotContains(t, k+v, "\x00")
		}
		for _, k := range got.LabelExists {
			require.NotEmpty(t, k)
		}
		// A filter that parses matches a job deterministically.
		j := job.Job{Labels: got.LabelEquals, Status: job.Status{State: job.Running}}
		require.Equal(t, got.matches(j), got.matches(j))
	})
}
