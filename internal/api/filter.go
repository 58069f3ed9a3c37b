package api

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/resname"
)

// jobFilter is a parsed ListJobs/WatchJobs filter: a small, documented
// subset of AIP-160. Conditions are joined by AND:
//
//	state = RUNNING                      (or JOB_STATE_RUNNING)
//	state = QUEUED OR state = RUNNING    (ORs of state only)
//	labels.team = "nlp"                  (quotes optional)
//	labels.team:*                        (has the label)
type jobFilter struct {
	States      []job.State
	LabelEquals map[string]string
	LabelExists []string
}

var (
	stateTerm  = regexp.MustCompile(`^state\s*=\s*([A-Za-z_]+)$`)
	labelEq    = regexp.MustCompile(`^labels\.([A-Za-z0-9./_-]+)\s*=\s*("([^"]*)"|[A-Za-z0-9._-]*)$`)
	labelHas   = regexp.MustCompile(`^labels\.([A-Za-z0-9./_-]+)\s*:\s*\*$`)
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
		if sawState {
			return f, invalid(violation(field, "may test state once (use OR inside it: state = A OR state = B)"))
		}
		for _, t := range orSplit.Split(c, -1) {
			m := stateTerm.FindStringSubmatch(strings.TrimSpace(t))
			if m == nil {
				return f, invalid(violation(field, "cannot parse "+quote(t)+`; use state = RUNNING, labels.key = "value" or labels.key:*, joined by AND`))
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

// Page tokens are opaque to clients: a keyset cursor plus a hash of the
// query they belong to, so a token cannot be replayed against another
// filter or tenant (AIP-158).
type pageToken struct {
	Cursor int64  `json:"c,omitempty"`
	After  string `json:"a,omitempty"`
	Query  uint64 `json:"q"`
}

func queryHash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

func encodePageToken(cursor int64, query uint64) string {
	if cursor == 0 {
		return ""
	}
	b, _ := json.Marshal(pageToken{Cursor: cursor, Query: query})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(field, tok string, query uint64) (int64, error) {
	if tok == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var pt pageToken
	if err != nil || json.Unmarshal(b, &pt) != nil || pt.Cursor <= 0 {
		return 0, invalid(violation(field, "is not a token returned by this method"))
	}
	if pt.Query != query {
		return 0, invalid(violation(field, "belongs to a different parent or filter"))
	}
	return pt.Cursor, nil
}

func encodeStringToken(after string, query uint64) string {
	b, _ := json.Marshal(pageToken{After: after, Query: query})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeStringToken(field, tok string, query uint64) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var pt pageToken
	// After is a tenant id that goes into a query: a forged token must not
	// carry bytes Postgres refuses.
	if err != nil || json.Unmarshal(b, &pt) != nil || !resname.IsID(pt.After) {
		return "", invalid(violation(field, "is not a token returned by this method"))
	}
	if pt.Query != query {
		return "", invalid(violation(field, "belongs to a different caller"))
	}
	return pt.After, nil
}

const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

func pageSize(field string, n int32) (int, error) {
	switch {
	case n < 0:
		return 0, invalid(violation(field, "must not be negative"))
	case n == 0:
		return defaultPageSize, nil
	case n > maxPageSize:
		return maxPageSize, nil
	}
	return int(n), nil
}
