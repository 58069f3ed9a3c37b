package api

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Dependencies (spec.dependsOn) are resolved at submission: each name to
// the uid of a live job of the tenant, or of an earlier item of the same
// batch (which then gets its uid here, before the store inserts it). A
// name that is neither is a field violation: dependencies exist before
// their dependents, so they never form a cycle. The scheduler does the
// rest (internal/admission, deps.go).

var dependencyConditionFromPB = map[pb.DependencyCondition]job.DependencyCondition{
	pb.DependencyCondition_DEPENDENCY_CONDITION_UNSPECIFIED: "",
	pb.DependencyCondition_DEPENDENCY_CONDITION_SUCCEEDED:   job.DependsSucceeded,
	pb.DependencyCondition_DEPENDENCY_CONDITION_FINISHED:    job.DependsFinished,
	pb.DependencyCondition_DEPENDENCY_CONDITION_STARTED:     job.DependsStarted,
}

var dependencyConditionToPB = invert(dependencyConditionFromPB)

var onDependencyFailureFromPB = map[pb.OnDependencyFailure]job.OnDependencyFailure{
	pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_UNSPECIFIED: "",
	pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_FAIL:        job.DependencyFail,
	pb.OnDependencyFailure_ON_DEPENDENCY_FAILURE_CANCEL:      job.DependencyCancel,
}

var onDependencyFailureToPB = invert(onDependencyFailureFromPB)

// dependenciesFromPB converts spec.dependsOn; job_uid is output only. An
// unknown enum value stays visible (its number) for validation to name.
func dependenciesFromPB(s *pb.JobSpec, out *job.Spec) {
	for _, d := range s.GetDependsOn() {
		c, ok := dependencyConditionFromPB[d.GetCondition()]
		if !ok {
			c = job.DependencyCondition(strconv.Itoa(int(d.GetCondition())))
		}
		out.DependsOn = append(out.DependsOn, job.Dependency{Job: d.GetJob(), Condition: c})
	}
	f, ok := onDependencyFailureFromPB[s.GetOnDependencyFailure()]
	if !ok {
		f = job.OnDependencyFailure(strconv.Itoa(int(s.GetOnDependencyFailure())))
	}
	out.OnDependencyFailure = f
}

func dependenciesToPB(s job.Spec, out *pb.JobSpec) {
	for _, d := range s.DependsOn {
		out.DependsOn = append(out.DependsOn, &pb.JobDependency{Job: d.Job, Condition: dependencyConditionToPB[d.Cond()], JobUid: d.UID})
	}
	if len(s.DependsOn) > 0 {
		out.OnDependencyFailure = onDependencyFailureToPB[s.Failure()]
	}
}

func dependencyResultsToPB(s job.Status, out *pb.JobStatus) {
	out.Outputs = job.Outputs(s)
	for _, r := range s.Dependencies {
		out.Dependencies = append(out.Dependencies, &pb.DependencyResult{
			Job: r.Job, JobUid: r.UID, Condition: dependencyConditionToPB[r.Condition], State: stateToPB[r.State],
			Reason: r.Reason, ExitCodes: r.ExitCodes, Outputs: r.Outputs,
		})
	}
}

// resolveDependencies sets the uid of every dependency of jobs (a batch, in
// order; prefix(i) is the field prefix of jobs[i]) and returns a
// violation per name that names no job of the tenant that exists or comes
// earlier in the batch. One read, only when some job has dependencies.
func (s *JobServer) resolveDependencies(ctx context.Context, tenantID string, jobs []*job.Job, prefix func(int) string) (job.Violations, error) {
	var ask []string
	for _, j := range jobs {
		for _, d := range j.Spec.DependsOn {
			ask = append(ask, d.Job)
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	live, err := s.store.JobUIDsByName(ctx, tenantID, ask)
	if err != nil {
		return nil, err
	}
	batch := make(map[string]int, len(jobs))
	var vs job.Violations
	for i, j := range jobs {
		for k := range j.Spec.DependsOn {
			d := &j.Spec.DependsOn[k]
			field := fmt.Sprintf("%sspec.dependsOn[%d].job", prefix(i), k)
			if d.Job == j.Name {
				vs.Add(field, "a job can not depend on itself")
				continue
			}
			if e, ok := batch[d.Job]; ok {
				earlier := jobs[e]
				if earlier.UID == "" {
					id, err := uuid.NewV7()
					if err != nil {
						return nil, err
					}
					earlier.UID = id.String()
				}
				d.UID = earlier.UID
				continue
			}
			if uid, ok := live[d.Job]; ok {
				d.UID = uid
				continue
			}
			later := ""
			for _, o := range jobs[i+1:] {
				if o.Name == d.Job {
					later = "; it comes later in this batch: submit dependencies first"
				}
			}
			vs.Add(field, "no job %s in tenant %s: a dependency must exist when its dependent is submitted%s", quote(d.Job), quote(tenantID), later)
		}
		batch[j.Name] = i
	}
	return vs, nil
}
