package cluster

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// AuditRow is what the API server's audit log says about one kind of
// write by one client: how many there were and how long the API server
// took over each, from receiving the request to answering it.
type AuditRow struct {
	// Client is the program part of the user agent ("trainyard",
	// "bench.test", "kwok", "kube-scheduler").
	Client string
	// Verb and Resource as the audit event names them; Resource carries the
	// subresource after a slash (pods/status, pods/binding).
	Verb, Resource string
	Count          int
	Mean, P50, P99 time.Duration
}

type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
	Answered time.Time `json:"stageTimestamp"`
}

// SummarizeAudit reads an audit log of JSON lines (the local control
// plane writes logs/audit.log when EnvProfiling is 1) and returns one row
// per client, verb and resource for the requests received within
// [from, to) (a zero bound is open), ordered by client, resource and verb.
func SummarizeAudit(r io.Reader, from, to time.Time) ([]AuditRow, error) {
	type key struct{ client, verb, resource string }
	took := map[key][]time.Duration{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", line, err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil ||
			(!from.IsZero() && e.Received.Before(from)) || (!to.IsZero() && !e.Received.Before(to)) {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		k := key{client: agentProgram(e.UserAgent), verb: e.Verb, resource: res}
		took[k] = append(took[k], e.Answered.Sub(e.Received))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	rows := make([]AuditRow, 0, len(took))
	for k, ds := range took {
		slices.Sort(ds)
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		rows = append(rows, AuditRow{
			Client: k.client, Verb: k.verb, Resource: k.resource, Count: len(ds),
			Mean: sum / time.Duration(len(ds)),
			P50:  rank(ds, 50),
			P99:  rank(ds, 99),
		})
	}
	slices.SortFunc(rows, func(a, b AuditRow) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	return rows, nil
}

// rank is the nearest-rank pct-th percentile of sorted ds.
func rank(ds []time.Duration, pct int) time.Duration {
	return ds[(len(ds)*pct+99)/100-1]
}

// agentProgram is a user agent's first word up to its version:
// "kube-scheduler/v1.35.0 (linux/amd64) kubernetes/abc/scheduler" is
// "kube-scheduler".
func agentProgram(ua string) string {
	if ua == "" {
		return "-"
	}
	p, _, _ := strings.Cut(ua, " ")
	p, _, _ = strings.Cut(p, "/")
	return p
}
