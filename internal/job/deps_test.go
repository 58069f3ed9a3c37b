package job

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestDependencyCheck(t *testing.T) {
	obs := func(s State, started bool) DependencyObserved { return DependencyObserved{State: s, Started: started} }
	gone := DependencyObserved{State: Succeeded, Started: true, Gone: true}
	cases := map[string]struct {
		cond DependencyCondition
		obs  DependencyObserved
		want Verdict
	}{
		"default is SUCCEEDED: queued":          {"", obs(Queued, false), DependencyPending},
		"default is SUCCEEDED: succeeded":       {"", obs(Succeeded, true), DependencyMet},
		"SUCCEEDED: running":                    {DependsSucceeded, obs(Running, true), DependencyPending},
		"SUCCEEDED: suspended waits":            {DependsSucceeded, obs(Suspended, true), DependencyPending},
		"SUCCEEDED: failed":                     {DependsSucceeded, obs(Failed, true), DependencyNever},
		"SUCCEEDED: cancelled":                  {DependsSucceeded, obs(Cancelled, false), DependencyNever},
		"SUCCEEDED: deleted after success":      {DependsSucceeded, gone, DependencyNever},
		"FINISHED: running":                     {DependsFinished, obs(Running, true), DependencyPending},
		"FINISHED: failed":                      {DependsFinished, obs(Failed, true), DependencyMet},
		"FINISHED: cancelled before start":      {DependsFinished, obs(Cancelled, false), DependencyMet},
		"FINISHED: deleted":                     {DependsFinished, gone, DependencyNever},
		"STARTED: queued":                       {DependsStarted, obs(Queued, false), DependencyPending},
		"STARTED: starting":                     {DependsStarted, obs(Starting, true), DependencyPending},
		"STARTED: running":                      {DependsStarted, obs(Running, true), DependencyMet},
		"STARTED: restarting":                   {DependsStarted, obs(Restarting, true), DependencyMet},
		"STARTED: succeeded":                    {DependsStarted, obs(Succeeded, true), DependencyMet},
		"STARTED: failed after its start":       {DependsStarted, obs(Failed, true), DependencyMet},
		"STARTED: cancelled before it started":  {DependsStarted, obs(Cancelled, false), DependencyNever},
		"STARTED: failed by its own dependency": {DependsStarted, obs(Failed, false), DependencyNever},
		"STARTED: requeued after preemption":    {DependsStarted, obs(Queued, true), DependencyPending},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, Dependency{Job: "prep", Condition: tc.cond}.Check(tc.obs))
		})
	}
}

func TestDependencyMessages(t *testing.T) {
	d := Dependency{Job: "prep"}
	require.Equal(t, "job prep to succeed", d.Describe())
	require.Equal(t, "job prep to start", Dependency{Job: "prep", Condition: DependsStarted}.Describe())
	require.Equal(t, "dependency prep ended FAILED; it can no longer succeed", d.NeverMessage(DependencyObserved{State: Failed}))
	require.Equal(t, "dependency prep was deleted before it succeeded", d.NeverMessage(DependencyObserved{Gone: true}))
}

func TestFailDependency(t *testing.T) {
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	queued := Status{State: Queued, Conditions: []Condition{{Type: CondQueued, Status: true, LastTransitionTime: now.Add(-time.Hour)}}}

	st, ev := FailDependency(queued, false, "dependency prep ended FAILED; it can no longer succeed", now)
	require.Equal(t, Failed, st.State)
	require.Equal(t, ReasonDependencyFailed, st.Reason)
	require.Equal(t, now, *st.CompletionTime)
	require.Equal(t, []EventDraft{{Type: EventWarning, Reason: ReasonDependencyFailed, Message: "dependency prep ended FAILED; it can no longer succeed"}}, ev)
	for _, c := range st.Conditions {
		switch c.Type {
		case CondQueued:
			require.False(t, c.Status)
		case CondFailed:
			require.True(t, c.Status)
			require.Equal(t, ReasonDependencyFailed, c.Reason)
		}
	}
	require.True(t, queued.Conditions[0].Status, "the input is not written")

	st, _ = FailDependency(queued, true, "m", now)
	require.Equal(t, Cancelled, st.State)
	require.Equal(t, ReasonDependencyFailed, st.Reason)

	done := Status{State: Succeeded}
	st, ev = FailDependency(done, false, "m", now)
	require.Equal(t, done, st)
	require.Empty(t, ev)
}

func TestParseOutputs(t *testing.T) {
	cases := map[string]struct {
		msg  string
		want map[string]string
	}{
		"empty":      {"", nil},
		"plain text": {"Error: out of memory", nil},
		"key=value lines": {"model_uri = s3://bucket/model/7\naccuracy=0.93\n\nnot a pair\n",
			map[string]string{"model_uri": "s3://bucket/model/7", "accuracy": "0.93"}},
		"value with =": {"args=--lr=0.1", map[string]string{"args": "--lr=0.1"}},
		"JSON object": {`{"modelUri": "s3://b/m", "accuracy": 0.93, "ok": true, "tags": ["a"]}`,
			map[string]string{"modelUri": "s3://b/m", "accuracy": "0.93", "ok": "true", "tags": `["a"]`}},
		"bad keys dropped": {"1st=x\nwith space=y\nwith-dash=z\n_x=1\ngood=1",
			map[string]string{"good": "1"}},
		"long value dropped":   {"big=" + strings.Repeat("x", MaxOutputValue+1) + "\nsmall=1", map[string]string{"small": "1"}},
		"broken JSON is lines": {`{"a": 1`, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, ParseOutputs(tc.msg))
		})
	}
	var b strings.Builder
	for i := range MaxOutputs + 5 {
		b.WriteString("k")
		b.WriteString(strings.Repeat("a", i))
		b.WriteString("=v\n")
	}
	require.Len(t, ParseOutputs(b.String()), MaxOutputs)
}

func TestResultOfAndEnv(t *testing.T) {
	term := func(code int32, msg string) *Termination { return &Termination{ExitCode: code, Message: msg} }
	dep := Job{Name: "prep", UID: "u1", Status: Status{State: Succeeded, Reason: ReasonSucceeded, Replicas: []ReplicaStatus{
		{Type: Worker, Index: 0, LastTermination: term(0, "rows=100")},
		{Type: Chief, Index: 0, LastTermination: term(0, "dataset=gs://d/v3\nrows=1000\nROWS=1")},
		{Type: Worker, Index: 1, LastTermination: term(2, "")},
		{Type: PS, Index: 0},
	}}}
	r := ResultOf(Dependency{Job: "prep", UID: "u1"}, dep)
	require.Equal(t, DependencyResult{
		Job: "prep", UID: "u1", Condition: DependsSucceeded, State: Succeeded, Reason: ReasonSucceeded,
		ExitCodes: map[string]int32{"chief-0": 0, "worker-0": 0, "worker-1": 2},
		Outputs:   map[string]string{"dataset": "gs://d/v3", "rows": "1000", "ROWS": "1"},
	}, r, "the chief's message, not worker 0's")

	noChief := Job{Status: Status{State: Running, Replicas: []ReplicaStatus{{Type: Worker, Index: 1, LastTermination: term(0, "a=1")}, {Type: Worker, Index: 0}}}}
	r2 := ResultOf(Dependency{Job: "feature-build", Condition: DependsStarted}, noChief)
	require.Nil(t, r2.Outputs, "worker 0 has not ended")

	env := DependencyEnv([]DependencyResult{r, r2})
	got := map[string]string{}
	var names []string
	for _, e := range env {
		got[e.Name] = e.Value
		names = append(names, e.Name)
	}
	want := []string{
		"TRAINYARD_DEPENDENCIES",
		"TRAINYARD_DEP_PREP_STATE", "TRAINYARD_DEP_PREP_EXIT_CODE", "TRAINYARD_DEP_PREP_EXIT_CODES",
		"TRAINYARD_DEP_PREP_OUTPUT_ROWS", "TRAINYARD_DEP_PREP_OUTPUT_DATASET",
		"TRAINYARD_DEP_FEATURE_BUILD_STATE", "TRAINYARD_DEP_FEATURE_BUILD_EXIT_CODES",
	}
	require.Empty(t, cmp.Diff(want, names))
	require.Equal(t, "1", got["TRAINYARD_DEP_PREP_OUTPUT_ROWS"], "ROWS sorts before rows and wins")
	require.Equal(t, "chief-0=0,worker-0=0,worker-1=2", got["TRAINYARD_DEP_PREP_EXIT_CODES"])
	require.Equal(t, "0", got["TRAINYARD_DEP_PREP_EXIT_CODE"])
	require.Equal(t, "RUNNING", got["TRAINYARD_DEP_FEATURE_BUILD_STATE"])
	require.Contains(t, got["TRAINYARD_DEPENDENCIES"], `"outputs":{"ROWS":"1","dataset":"gs://d/v3","rows":"1000"}`)
	require.Nil(t, DependencyEnv(nil))
}

func TestValidateDependencies(t *testing.T) {
	cases := map[string]struct {
		deps   []Dependency
		policy OnDependencyFailure
		want   []FieldViolation
	}{
		"valid": {deps: []Dependency{{Job: "prep"}, {Job: "train", Condition: DependsStarted}}, policy: DependencyCancel},
		"bad name": {deps: []Dependency{{Job: "Prep_1"}},
			want: []FieldViolation{{"spec.dependsOn[0].job", ""}}},
		"missing name": {deps: []Dependency{{Condition: DependsFinished}},
			want: []FieldViolation{{"spec.dependsOn[0].job", "required"}}},
		"duplicate": {deps: []Dependency{{Job: "prep"}, {Job: "prep", Condition: DependsStarted}},
			want: []FieldViolation{{"spec.dependsOn[1].job", `"prep" is already given in spec.dependsOn[0]`}}},
		"bad condition": {deps: []Dependency{{Job: "prep", Condition: "DONE"}},
			want: []FieldViolation{{"spec.dependsOn[0].condition", `"DONE" is not a condition (SUCCEEDED, FINISHED or STARTED)`}}},
		"bad policy": {deps: []Dependency{{Job: "prep"}}, policy: "IGNORE",
			want: []FieldViolation{{"spec.onDependencyFailure", `"IGNORE" is not a policy (FAIL or CANCEL)`}}},
		"policy without deps": {policy: DependencyFail,
			want: []FieldViolation{{"spec.onDependencyFailure", "is set but spec.dependsOn is empty"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := valJob()
			j.Spec.Default()
			j.Spec.DependsOn, j.Spec.OnDependencyFailure = tc.deps, tc.policy
			got := Validate(j)
			require.Len(t, got, len(tc.want), "%v", got)
			for i, w := range tc.want {
				require.Equal(t, w.Field, got[i].Field)
				if w.Description != "" {
					require.Equal(t, w.Description, got[i].Description)
				}
			}
		})
	}
	j := valJob()
	j.Spec.Default()
	for i := range MaxDependencies + 1 {
		j.Spec.DependsOn = append(j.Spec.DependsOn, Dependency{Job: "j" + strings.Repeat("a", i)})
	}
	require.Equal(t, "spec.dependsOn", Validate(j)[0].Field)
}
