package job

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dependencies between jobs (spec.dependsOn): a job may wait for other jobs
// of its tenant, each until a condition holds. The rules, all pure:
//
//   - A dependency names a job that exists when the dependent is submitted
//     (the API resolves the name to the job's uid, Dependency.UID), so the
//     graph has no cycles by construction.
//   - While any dependency is not met the dependent waits with reason
//     DEPENDENCY, outside the scheduler's line: it holds no quota and no
//     place (internal/admission).
//   - Check says, from what the scheduler sees of the dependency, whether
//     the condition is met, may still be, or can never be. Never: the
//     dependent ends (FailDependency) FAILED, reason DependencyFailed, or
//     CANCELLED with OnDependencyFailure CANCEL.
//   - Dependencies gate a job's first admission only: one preempted and
//     requeued after is not held (nor failed) by them again.
//   - At admission, each dependency's result (ResultOf: state, exit codes,
//     outputs) is copied into the dependent's Status.Dependencies, so its
//     pods read them (env vars, DependencyEnv) however long the dependency
//     lives after.
//
// Outputs are how parameters flow forward: the termination message of a
// job's primary replica (CHIEF 0, else WORKER 0), which the container
// writes to /dev/termination-log and Kubernetes keeps in the pod's status,
// parsed as a JSON object or as key=value lines (ParseOutputs).

// DependencyCondition is when a dependency is met.
type DependencyCondition string

const (
	// DependsSucceeded: the dependency ended SUCCEEDED (the default).
	DependsSucceeded DependencyCondition = "SUCCEEDED"
	// DependsFinished: the dependency ended, whatever its end.
	DependsFinished DependencyCondition = "FINISHED"
	// DependsStarted: the dependency's replicas all ran (RUNNING), or it
	// ended after its admission.
	DependsStarted DependencyCondition = "STARTED"
)

// DependencyConditions lists the conditions.
var DependencyConditions = []DependencyCondition{DependsSucceeded, DependsFinished, DependsStarted}

// OnDependencyFailure is what becomes of a job whose dependency can never
// be met.
type OnDependencyFailure string

const (
	// DependencyFail ends it FAILED with reason DependencyFailed (the default).
	DependencyFail OnDependencyFailure = "FAIL"
	// DependencyCancel ends it CANCELLED with reason DependencyFailed.
	DependencyCancel OnDependencyFailure = "CANCEL"
)

// ReasonDependencyFailed is the reason of a job ended because a
// dependency can never be met.
const ReasonDependencyFailed = "DependencyFailed"

// Limits on dependencies and outputs.
const (
	MaxDependencies = 32
	MaxOutputs      = 32
	MaxOutputKey    = 63
	MaxOutputValue  = 1024 // bytes
)

// Dependency is one entry of spec.dependsOn.
type Dependency struct {
	// Job is the name of a job of the same tenant.
	Job       string              `json:"job"`
	Condition DependencyCondition `json:"condition,omitempty"`
	// UID is the job Job named at submission (output only): a job of the
	// same name submitted later is another job.
	UID string `json:"uid,omitempty"`
}

// Cond is the dependency's condition, defaulted.
func (d Dependency) Cond() DependencyCondition {
	if d.Condition == "" {
		return DependsSucceeded
	}
	return d.Condition
}

// Failure is spec.onDependencyFailure, defaulted.
func (s Spec) Failure() OnDependencyFailure {
	if s.OnDependencyFailure == "" {
		return DependencyFail
	}
	return s.OnDependencyFailure
}

// DependencyObserved is what the scheduler sees of a dependency.
type DependencyObserved struct {
	State State
	// Started: the dependency was admitted at some point (it has a start time).
	Started bool
	// Gone: deleted, or no such row any more.
	Gone bool
}

// Verdict is what a dependency's state means for its dependent.
type Verdict int

const (
	// DependencyPending: not met yet, may still be.
	DependencyPending Verdict = iota
	// DependencyMet: the condition holds.
	DependencyMet
	// DependencyNever: the condition can never hold.
	DependencyNever
)

// Check judges a dependency by what is seen of it. A deleted dependency
// can never be met (its results went with it), whatever its end; a
// SUSPENDED or requeued one is pending.
func (d Dependency) Check(o DependencyObserved) Verdict {
	if o.Gone {
		return DependencyNever
	}
	switch d.Cond() {
	case DependsFinished:
		if o.State.Final() {
			return DependencyMet
		}
	case DependsStarted:
		switch {
		case o.State == Running || o.State == Restarting:
			return DependencyMet
		case o.State.Final() && o.Started:
			return DependencyMet
		case o.State.Final():
			return DependencyNever // ended before it was ever admitted
		}
	default:
		switch o.State {
		case Succeeded:
			return DependencyMet
		case Failed, Cancelled:
			return DependencyNever
		}
	}
	return DependencyPending
}

// Describe says in words what the dependent waits for: "job prep to succeed".
func (d Dependency) Describe() string {
	switch d.Cond() {
	case DependsFinished:
		return fmt.Sprintf("job %s to finish", d.Job)
	case DependsStarted:
		return fmt.Sprintf("job %s to start", d.Job)
	}
	return fmt.Sprintf("job %s to succeed", d.Job)
}

// NeverMessage says why a dependency can never be met.
func (d Dependency) NeverMessage(o DependencyObserved) string {
	switch {
	case o.Gone:
		return fmt.Sprintf("dependency %s was deleted before %s", d.Job, d.condPhrase())
	case o.State == "":
		return fmt.Sprintf("dependency %s can no longer be met", d.Job)
	}
	return fmt.Sprintf("dependency %s ended %s; it can no longer %s", d.Job, o.State, d.condVerb())
}

func (d Dependency) condPhrase() string {
	switch d.Cond() {
	case DependsFinished:
		return "it finished"
	case DependsStarted:
		return "it started"
	}
	return "it succeeded"
}

func (d Dependency) condVerb() string {
	switch d.Cond() {
	case DependsFinished:
		return "finish"
	case DependsStarted:
		return "start"
	}
	return "succeed"
}

// FailDependency ends a waiting job whose dependency dep can never be met:
// FAILED (or CANCELLED with OnDependencyFailure CANCEL), reason
// DependencyFailed, the message naming the dependency. The Queued
// condition goes false. A job already final is returned unchanged.
func FailDependency(s Status, cancel bool, message string, now time.Time) (Status, []EventDraft) {
	p := &planner{in: PlanInput{Now: now}, status: copyStatus(s)}
	if p.status.State.Final() {
		return p.status, nil
	}
	p.setCondition(CondQueued, false, ReasonDependencyFailed, "")
	if cancel {
		p.finish(Cancelled, ReasonDependencyFailed, message, EventWarning)
	} else {
		p.finish(Failed, ReasonDependencyFailed, message, EventWarning)
	}
	return p.status, p.out.Events
}

// DependencyResult is what a dependent knows of one of its dependencies,
// copied into its status when it is admitted.
type DependencyResult struct {
	Job       string              `json:"job"`
	UID       string              `json:"uid,omitempty"`
	Condition DependencyCondition `json:"condition"`
	// State is the dependency's state when the dependent was admitted
	// (RUNNING for a STARTED dependency that had not ended then).
	State  State  `json:"state"`
	Reason string `json:"reason,omitempty"`
	// ExitCodes are the last exit codes of its replicas that ended, by
	// replica ("chief-0", "worker-1").
	ExitCodes map[string]int32 `json:"exitCodes,omitempty"`
	// Outputs are what its primary replica left in its termination message.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// ResultOf is the result of dependency d, the job dep as it is now.
func ResultOf(d Dependency, dep Job) DependencyResult {
	r := DependencyResult{Job: d.Job, UID: d.UID, Condition: d.Cond(), State: dep.Status.State, Reason: dep.Status.Reason}
	for _, rs := range dep.Status.Replicas {
		if t := rs.LastTermination; t != nil {
			if r.ExitCodes == nil {
				r.ExitCodes = map[string]int32{}
			}
			r.ExitCodes[fmt.Sprintf("%s-%d", rs.Type, rs.Index)] = t.ExitCode
		}
	}
	r.Outputs = Outputs(dep.Status)
	return r
}

// Outputs are a job's outputs: the termination message of its primary
// replica (CHIEF 0, else WORKER 0, else its first replica) parsed by
// ParseOutputs. Nil while that replica has not ended.
func Outputs(s Status) map[string]string {
	var primary *ReplicaStatus
	for i := range s.Replicas {
		r := &s.Replicas[i]
		switch {
		case r.Type == Chief && r.Index == 0:
			primary = r
		case r.Type == Worker && r.Index == 0 && (primary == nil || primary.Type != Chief):
			primary = r
		case primary == nil:
			primary = r
		}
	}
	if primary == nil || primary.LastTermination == nil {
		return nil
	}
	return ParseOutputs(primary.LastTermination.Message)
}

var outputKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// ParseOutputs reads a termination message as outputs: a JSON object
// (strings as they are, other values as their JSON text), or else lines of
// key=value (spaces around the key trimmed, the value the rest of the
// line). Keys are letters, digits and '_', starting with a letter, at
// most MaxOutputKey long; values at most MaxOutputValue bytes; at most
// MaxOutputs entries, the first in key order. Anything else is left out,
// so that any message is safe to parse: a plain error text gives none.
func ParseOutputs(msg string) map[string]string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return nil
	}
	raw := map[string]string{}
	var obj map[string]json.RawMessage
	if strings.HasPrefix(msg, "{") && json.Unmarshal([]byte(msg), &obj) == nil {
		for k, v := range obj {
			var s string
			if json.Unmarshal(v, &s) == nil {
				raw[k] = s
			} else {
				raw[k] = string(v)
			}
		}
	} else {
		for line := range strings.Lines(msg) {
			k, v, ok := strings.Cut(line, "=")
			if ok {
				raw[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	keys := make([]string, 0, len(raw))
	for k, v := range raw {
		if len(k) <= MaxOutputKey && outputKey.MatchString(k) && len(v) <= MaxOutputValue {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	out := make(map[string]string, min(len(keys), MaxOutputs))
	for _, k := range keys[:min(len(keys), MaxOutputs)] {
		out[k] = raw[k]
	}
	return out
}

// Environment variables a dependent's pods get (DependencyEnv).
const (
	// EnvDependencies holds every result as a JSON array.
	EnvDependencies = ReservedEnvPrefix + "DEPENDENCIES"
	envDepPrefix    = ReservedEnvPrefix + "DEP_"
)

// DependencyEnvName is the prefix of a dependency's variables:
// TRAINYARD_DEP_<NAME>_ with the job name upper-cased and '-' as '_'.
// Job names are DNS-1035 labels (no '_'), so two names never share one.
func DependencyEnvName(jobName string) string {
	return envDepPrefix + strings.ToUpper(strings.ReplaceAll(jobName, "-", "_")) + "_"
}

// DependencyEnv are the variables that tell a dependent's pods its
// dependencies' results, in a stable order:
//
//	TRAINYARD_DEPENDENCIES                   every result, a JSON array
//	TRAINYARD_DEP_<NAME>_STATE               SUCCEEDED, FAILED, RUNNING ...
//	TRAINYARD_DEP_<NAME>_EXIT_CODE           the primary replica's (chief-0, else worker-0)
//	TRAINYARD_DEP_<NAME>_EXIT_CODES          all, "chief-0=0,worker-0=0"
//	TRAINYARD_DEP_<NAME>_OUTPUT_<KEY>        each output, the key upper-cased
//
// Two keys equal once upper-cased: the first in key order wins.
func DependencyEnv(results []DependencyResult) []EnvVar {
	if len(results) == 0 {
		return nil
	}
	all, _ := json.Marshal(results)
	out := []EnvVar{{Name: EnvDependencies, Value: string(all)}}
	for _, r := range results {
		p := DependencyEnvName(r.Job)
		out = append(out, EnvVar{Name: p + "STATE", Value: string(r.State)})
		if code, ok := primaryExit(r.ExitCodes); ok {
			out = append(out, EnvVar{Name: p + "EXIT_CODE", Value: strconv.Itoa(int(code))})
		}
		if len(r.ExitCodes) > 0 {
			names := slices.Sorted(maps.Keys(r.ExitCodes))
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = fmt.Sprintf("%s=%d", n, r.ExitCodes[n])
			}
			out = append(out, EnvVar{Name: p + "EXIT_CODES", Value: strings.Join(parts, ",")})
		}
		seen := map[string]bool{}
		for _, k := range slices.Sorted(maps.Keys(r.Outputs)) {
			name := p + "OUTPUT_" + strings.ToUpper(k)
			if !seen[name] {
				seen[name] = true
				out = append(out, EnvVar{Name: name, Value: r.Outputs[k]})
			}
		}
	}
	return out
}

func primaryExit(codes map[string]int32) (int32, bool) {
	if c, ok := codes["chief-0"]; ok {
		return c, true
	}
	c, ok := codes["worker-0"]
	return c, ok
}

// dependencies checks spec.dependsOn and spec.onDependencyFailure.
func (v *Violations) dependencies(s *Spec) {
	if len(s.DependsOn) > MaxDependencies {
		v.Add("spec.dependsOn", "%d dependencies; at most %d are allowed", len(s.DependsOn), MaxDependencies)
	}
	seen := map[string]int{}
	for i, d := range s.DependsOn {
		p := fmt.Sprintf("spec.dependsOn[%d]", i)
		if err := ValidJobID(d.Job); err != nil {
			v.Add(p+".job", "%v", err)
		} else if j, dup := seen[d.Job]; dup {
			v.Add(p+".job", "%q is already given in spec.dependsOn[%d]", d.Job, j)
		} else {
			seen[d.Job] = i
		}
		if d.Condition != "" && !slices.Contains(DependencyConditions, d.Condition) {
			v.Add(p+".condition", "%q is not a condition (SUCCEEDED, FINISHED or STARTED)", d.Condition)
		}
	}
	switch s.OnDependencyFailure {
	case "", DependencyFail, DependencyCancel:
		if s.OnDependencyFailure != "" && len(s.DependsOn) == 0 {
			v.Add("spec.onDependencyFailure", "is set but spec.dependsOn is empty")
		}
	default:
		v.Add("spec.onDependencyFailure", "%q is not a policy (FAIL or CANCEL)", s.OnDependencyFailure)
	}
}
