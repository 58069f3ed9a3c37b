package api

import (
	"regexp"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
)

// jobFilter is a parsed ListJobs/WatchJobs filter: a small, documented
// subset of AIP-160. Conditions are joined by AND:
//
//	state = RUNNING                      (or JOB_STATE_RUNNING)
//	state = QUEUED OR state = RUNNING    (ORs of state only)
//	labels.team = "nlp"                  (quotes optional)
//	labels.team:*                        (has the label)
//	creator = "alice"                    (the OIDC subject that created it)
type jobFilter struct {
	States      []job.State
	LabelEquals map[string]string
	LabelExists []string
	Creator     string
}

var (
	stateTerm  = regexp.MustCompile(`^state\s*=\s*([A-Za-z_]+)$`)
	labelEq    = regexp.MustCompile(`^labels\.([A-Za-z0-9./_-]+)\s*=\s*("([^"]*)"|[A-Za-z0-9._-]*)$`)
	labelHas   = regexp.MustCompile(`^labels\.([A-Za-z0-9./_-]+)\s*:\s*\*$`)
	creatorEq  = regexp.MustCompile(`^creator\s*=\s*"([^"]+)"$`)
	andSplit   = regexp.MustCompile(`\s+AND\s+`)
	orSplit    = regexp.MustCompile(`\s+OR\s+`)
	maxFilter  = 2048
	maxClauses = 32
)

func parseJobFilter(field, s string) (jobFilter, error) {
	f := jobFilter{}
	s = strings.TrimSpace(s)
	if s == "" {
		return f, nil
	}
	if len(s) > maxFilter {
		return f, invalid(violation(field, "is longer than 2048 characters"))
	}
	clauses := andSplit.Split(s, -1)
	if len(clauses) > maxClauses {
		return f, invalid(violation(field, "has more than 32 conditions"))
	}
	sawState := false
	for _, c := range clauses {
		c = strings.TrimSpace(c)
		c = strings.TrimSuffix(strings.TrimPrefix(c, "("), ")")
		if m := labelEq.FindStringSubmatch(c); m != nil {
			if f.LabelEquals == nil {
				f.LabelEquals = map[string]string{}
			}
			v := m[2]
			if strings.HasPrefix(v, `"`) {
				v = m[3]
			}
			f.LabelEquals[m[1]] = v
			continue
		}
		if m := labelHas.FindStringSubmatch(c); m != nil {
			f.LabelExists = append(f.LabelExists, m[1])
			continue
		}
		if m := creatorEq.FindStringSubmatch(c); m != nil {
			if f.Creator != "" && f.Creator != m[1] {
				return f, invalid(violation(field, "may test creator once"))
			}
			f.Creator = m[1]
			continue
		}
		if sawState {
			return f, invalid(violation(field, "may test state once (use OR inside it: state = A OR state = B)"))
		}
		for _, t := range orSplit.Split(c, -1) {
			m := stateTerm.FindStringSubmatch(strings.TrimSpace(t))
			if m == nil {
				return f, invalid(violation(field, "cannot parse "+quote(t)+`; use state = RUNNING, labels.key = "value", labels.key:* or creator = "subject", joined by AND`))
			}
			st := job.State(strings.TrimPrefix(strings.ToUpper(m[1]), "JOB_STATE_"))
			if _, ok := stateToPB[st]; !ok {
				return f, invalid(violation(field, "unknown state "+quote(m[1])))
			}
			f.States = append(f.States, st)
		}
		sawState = true
	}
	return f, nil
}

func (f jobFilter) matches(j job.Job) bool {
	if len(f.States) > 0 {
		ok := false
		for _, s := range f.States {
			ok = ok || s == j.Status.State
		}
		if !ok {
			return false
		}
	}
	for k, v := range f.LabelEquals {
		if j.Labels[k] != v {
			return false
		}
	}
	for _, k := range f.LabelExists {
		if _, ok := j.Labels[k]; !ok {
			return false
		}
	}
	return f.Creator == "" || f.Creator == j.Creator
}
