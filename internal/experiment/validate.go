package experiment

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/tune"
)

// Validate checks a defaulted experiment (name and spec) on its own,
// nothing read: every problem at once, each at its field path in the API's
// JSON names (experimentId, spec.parameters[1].min, ...). The template is
// checked as the job of the experiment's last possible trial, with the
// first assignment the space offers, so that a template job.Validate would
// refuse is refused before any trial runs.
func Validate(e *Experiment) job.Violations {
	var v job.Violations
	if err := job.ValidJobID(e.Name); err != nil {
		v.Add("experimentId", "%v", err)
	} else if len(e.Name) > MaxNameLength {
		v.Add("experimentId", "%q is %d characters; at most %d are allowed (trial jobs add a suffix)", e.Name, len(e.Name), MaxNameLength)
	}
	s := &e.Spec
	if len(s.Parameters) > MaxParameters {
		v.Add("spec.parameters", "has %d items; at most %d are allowed", len(s.Parameters), MaxParameters)
	}
	space := s.Space()
	spaceOK := len(s.Parameters) > 0
	if vs := space.Validate(); len(vs) > 0 {
		v.AddAt("spec.", vs)
		spaceOK = false
	}
	v.AddAt("spec.", s.TuneObjective().Validate())
	if g := s.Objective.Goal; g != nil && (math.IsNaN(*g) || math.IsInf(*g, 0)) {
		v.Add("spec.objective.goal", "%v is not a finite number", *g)
	}
	if s.MaxTrials < 1 || s.MaxTrials > MaxTrials {
		v.Add("spec.maxTrials", "%d is not in [1, %d]", s.MaxTrials, MaxTrials)
	}
	if s.Parallelism < 1 || s.Parallelism > MaxParallelism {
		v.Add("spec.parallelism", "%d is not in [1, %d]", s.Parallelism, MaxParallelism)
	}
	if s.MaxFailedTrials < 0 {
		v.Add("spec.maxFailedTrials", "%d is negative", s.MaxFailedTrials)
	}
	validateAlgorithm(&v, s, space, spaceOK)
	validateStopping(&v, s.EarlyStopping)
	for _, k := range []string{LabelExperiment, LabelTrial} {
		if _, ok := s.Template.Labels[k]; ok {
			v.Add("spec.template.labels", "%s is set on each trial's job by Trainyard", k)
		}
	}
	validatePlaceholders(&v, e)
	if spaceOK && len(v) == 0 {
		validateTemplate(&v, e, space)
	}
	return v
}

func validateAlgorithm(v *job.Violations, s *Spec, space tune.Space, spaceOK bool) {
	a := s.Algorithm
	switch a.Name {
	case AlgorithmRandom:
	case AlgorithmGrid:
		if spaceOK {
			if _, err := s.Suggester().(tune.Grid).Size(space); err != nil {
				v.Add("spec.algorithm.grid", "%v", err)
			}
		}
	case AlgorithmTPE:
		v.AddAt("spec.algorithm.", s.Suggester().(tune.TPE).Validate())
	default:
		v.Add("spec.algorithm.name", "%q is not an algorithm (random, grid or tpe)", a.Name)
	}
	if a.Grid != nil && a.Name != AlgorithmGrid {
		v.Add("spec.algorithm.grid", "applies only to the grid algorithm, not %q", a.Name)
	}
	if a.TPE != nil && a.Name != AlgorithmTPE {
		v.Add("spec.algorithm.tpe", "applies only to the tpe algorithm, not %q", a.Name)
	}
}

func validateStopping(v *job.Violations, e *EarlyStopping) {
	if e == nil {
		return
	}
	switch e.Rule {
	case RuleMedian:
		if e.ASHA != nil {
			v.Add("spec.earlyStopping.asha", "applies only to the asha rule")
		}
		if e.MedianStop != nil {
			v.AddAt("spec.earlyStopping.", tune.MedianStop{MinTrials: e.MedianStop.MinTrials, GraceSteps: e.MedianStop.GraceSteps}.Validate())
		}
	case RuleASHA:
		if e.MedianStop != nil {
			v.Add("spec.earlyStopping.medianStop", "applies only to the median rule")
		}
		if e.ASHA == nil {
			v.Add("spec.earlyStopping.asha", "is required for the asha rule (at least minResource)")
		} else {
			v.AddAt("spec.earlyStopping.", tune.ASHA{MinResource: e.ASHA.MinResource, Eta: e.ASHA.Eta, MaxResource: e.ASHA.MaxResource}.Validate())
		}
	default:
		v.Add("spec.earlyStopping.rule", "%q is not a rule (median or asha)", e.Rule)
	}
}

// templateStrings calls fn with each string of a replica that may hold
// placeholders, its field path under the spec, and a pointer to change it.
func templateStrings(spec *job.Spec, fn func(field string, s *string) error) error {
	for i := range spec.Replicas {
		r := &spec.Replicas[i]
		p := fmt.Sprintf("spec.replicas[%d]", i)
		for k := range r.Command {
			if err := fn(fmt.Sprintf("%s.command[%d]", p, k), &r.Command[k]); err != nil {
				return err
			}
		}
		for k := range r.Args {
			if err := fn(fmt.Sprintf("%s.args[%d]", p, k), &r.Args[k]); err != nil {
				return err
			}
		}
		for k := range r.Env {
			if err := fn(fmt.Sprintf("%s.env[%d].value", p, k), &r.Env[k].Value); err != nil {
				return err
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.PodAnnotations)) {
			v := r.PodAnnotations[k]
			if err := fn(fmt.Sprintf("%s.podAnnotations[%q]", p, k), &v); err != nil {
				return err
			}
			r.PodAnnotations[k] = v
		}
	}
	return nil
}

// validatePlaceholders checks that every ${trial.NAME} of the template
// names a parameter.
func validatePlaceholders(v *job.Violations, e *Experiment) {
	names := make([]string, len(e.Spec.Parameters))
	for i, p := range e.Spec.Parameters {
		names[i] = p.Name
	}
	tmpl := e.Spec.Template.Spec
	_ = templateStrings(&tmpl, func(field string, s *string) error {
		ps, err := tune.Placeholders(*s)
		if err != nil {
			v.Add("spec.template."+field, "%v", err)
			return nil
		}
		for _, name := range ps {
			if !slices.Contains(names, name) {
				v.Add("spec.template."+field, "${trial.%s} names no parameter (the parameters are %s)", name, strings.Join(names, ", "))
			}
		}
		return nil
	})
}

// validateTemplate checks the template as a job (see Validate).
func validateTemplate(v *job.Violations, e *Experiment, space tune.Space) {
	// The first random assignment stands for every one: the template's
	// shape does not depend on the values.
	as, err := tune.Random{}.Suggest(space, e.Spec.TuneObjective(), nil, 1, rand.New(rand.NewPCG(0, 0)))
	if err != nil || len(as) == 0 {
		v.Add("spec.parameters", "no assignment: %v", err)
		return
	}
	j, err := TrialJob(e, max(e.Spec.MaxTrials-1, 0), as[0])
	if err != nil {
		v.Add("spec.template", "%v", err)
		return
	}
	j.Labels = e.Spec.Template.Labels // the user's alone: ours are reserved
	for _, x := range job.Validate(&j) {
		field := "spec.template." + x.Field
		if x.Field == "jobId" {
			field = "experimentId"
		}
		v.Add(field, "%s", x.Description)
	}
}

// TrialJob is trial index's job: the template with the assignment's
// values in place of its placeholders, the experiment's creator, and the
// labels that tie it to its experiment and trial. Its spec is defaulted.
func TrialJob(e *Experiment, index int, a tune.Assignment) (job.Job, error) {
	spec, err := cloneSpec(e.Spec.Template.Spec)
	if err != nil {
		return job.Job{}, err
	}
	err = templateStrings(&spec, func(field string, s *string) error {
		out, err := tune.Expand(*s, a)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		*s = out
		return nil
	})
	if err != nil {
		return job.Job{}, err
	}
	labels := make(map[string]string, len(e.Spec.Template.Labels)+2)
	for k, v := range e.Spec.Template.Labels {
		labels[k] = v
	}
	labels[LabelExperiment] = e.Name
	labels[LabelTrial] = fmt.Sprint(index)
	spec.Default()
	return job.Job{
		Tenant: e.Tenant, Name: JobName(e.Name, index), Labels: labels, Spec: spec, Creator: e.Creator,
		DisplayName: fmt.Sprintf("experiment %s trial %d", e.Name, index),
	}, nil
}
