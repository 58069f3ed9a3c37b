package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Tables are for people: short ids instead of resource names, short enum
// names, ages instead of timestamps. Scripts use -o json.

func newTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 3, ' ', 0) }

func writeJobsTable(w io.Writer, jobs []*pb.Job, now time.Time) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tREPLICAS\tRESTARTS\tPOSITION\tWAITING FOR\tETA\tAGE\tREASON")
	for _, j := range jobs {
		q := j.GetStatus().GetQueue()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", lastSegment(j.GetName()), jobState(j), replicaSummary(j),
			j.GetStatus().GetRestarts(), queuePosition(q), waitingFor(q), eta(now, q), age(now, j.GetCreateTime()), dash(j.GetStatus().GetReason()))
	}
	_ = tw.Flush()
}

// queuePosition is "<in the tenant's queue>/<in the cluster's>", or "-".
func queuePosition(q *pb.QueueStatus) string {
	if q == nil || q.GetReason() == pb.WaitReason_WAIT_REASON_DEPENDENCY {
		return "-" // outside the line
	}
	return fmt.Sprintf("%d/%d", q.GetTenantPosition(), q.GetClusterPosition())
}

// waitingFor is the wait reason and what it names: "CAPACITY nvidia.com/gpu",
// "ORDER big".
func waitingFor(q *pb.QueueStatus) string {
	if q == nil {
		return "-"
	}
	what := strings.Join(q.GetWaitingFor(), ",")
	if b := q.GetBlockedBy(); b != "" {
		what = b
	}
	return strings.TrimSpace(shortEnum(q.GetReason()) + " " + what)
}

// eta is when a waiting job may start, relative ("in 12m", "now"), "?"
// when nothing supports an estimate, "-" for a job that does not wait.
func eta(now time.Time, q *pb.QueueStatus) string {
	if q == nil {
		return "-"
	}
	t := q.GetEstimatedStartTime()
	if t == nil {
		return "?"
	}
	d := t.AsTime().Sub(now)
	if d <= time.Second {
		return "now"
	}
	return "in " + humanDuration(d)
}

var etaBasis = map[pb.EstimateBasis]string{
	pb.EstimateBasis_ESTIMATE_BASIS_RUN_TIMES:  "from the run times of the tenant's recent jobs",
	pb.EstimateBasis_ESTIMATE_BASIS_DEADLINES:  "from running jobs' deadlines (at the latest)",
	pb.EstimateBasis_ESTIMATE_BASIS_BACKOFF:    "when its requeue backoff ends",
	pb.EstimateBasis_ESTIMATE_BASIS_PREEMPTION: "once the jobs preempted for it have stopped",
	pb.EstimateBasis_ESTIMATE_BASIS_AVAILABLE:  "what it needs is free; it waits for its turn",
}

// jobState is the state's short name; CANCELLING while a requested cancel
// is under way, as kubectl shows Terminating.
func jobState(j *pb.Job) string {
	st := j.GetStatus()
	if st.GetCancelRequested() && !finalState(st.GetState()) {
		return "CANCELLING"
	}
	if st.GetSuspendRequested() && st.GetState() != pb.JobState_JOB_STATE_SUSPENDED && !finalState(st.GetState()) {
		return "SUSPENDING"
	}
	return shortEnum(st.GetState())
}

func finalState(s pb.JobState) bool {
	switch s {
	case pb.JobState_JOB_STATE_SUCCEEDED, pb.JobState_JOB_STATE_FAILED, pb.JobState_JOB_STATE_CANCELLED:
		return true
	}
	return false
}

// dependsOn is "prep (SUCCEEDED: SUCCEEDED), train (STARTED)": each
// dependency with its condition and, once the job was admitted, the state
// it had then.
func dependsOn(j *pb.Job) string {
	results := map[string]*pb.DependencyResult{}
	for _, r := range j.GetStatus().GetDependencies() {
		results[r.GetJob()] = r
	}
	var parts []string
	for _, d := range j.GetSpec().GetDependsOn() {
		p := fmt.Sprintf("%s (%s", d.GetJob(), shortEnum(d.GetCondition()))
		if r := results[d.GetJob()]; r != nil {
			p += ": was " + shortEnum(r.GetState())
		}
		parts = append(parts, p+")")
	}
	return strings.Join(parts, ", ")
}

// replicaSummary is "chief 1/1, worker 3/4": per replica type in spec
// order, the replicas running or succeeded out of those asked for.
func replicaSummary(j *pb.Job) string {
	counts := map[pb.ReplicaType]*pb.ReplicaCounts{}
	for _, c := range j.GetStatus().GetReplicaCounts() {
		counts[c.GetType()] = c
	}
	var parts []string
	for _, r := range j.GetSpec().GetReplicas() {
		c := counts[r.GetType()]
		parts = append(parts, fmt.Sprintf("%s %d/%d", lowerEnum(r.GetType()), c.GetActive()+c.GetSucceeded(), max(r.GetCount(), 1)))
	}
	return dash(strings.Join(parts, ", "))
}

func writeJobDetail(w io.Writer, j *pb.Job, now time.Time) {
	st := j.GetStatus()
	kv := newTabWriter(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(kv, "%s:\t%s\n", k, v)
		}
	}
	row("Name", lastSegment(j.GetName()))
	row("Tenant", tenantOf(j.GetName()))
	row("Display name", j.GetDisplayName())
	row("Labels", formatMap(j.GetLabels()))
	row("State", jobState(j))
	row("Cluster", st.GetCluster())
	row("Reason", st.GetReason())
	row("Message", st.GetMessage())
	row("Replicas", replicaSummary(j))
	row("Restarts", fmt.Sprintf("%d (backoff limit %d)", st.GetRestarts(), j.GetSpec().GetRunPolicy().GetBackoffLimit()))
	if n := st.GetRequeues(); n > 0 {
		row("Requeues", strconv.Itoa(int(n)))
	}
	row("Priority", strconv.Itoa(int(j.GetSpec().GetPriority())))
	row("Depends on", dependsOn(j))
	row("Outputs", formatMap(st.GetOutputs()))
	if q := st.GetQueue(); q != nil {
		row("Waiting for", waitingFor(q)+": "+q.GetMessage())
		if q.GetReason() != pb.WaitReason_WAIT_REASON_DEPENDENCY { // outside the line
			row("Position", fmt.Sprintf("%d in the tenant's queue, %d in the cluster's", q.GetTenantPosition(), q.GetClusterPosition()))
			e := eta(now, q)
			if b, ok := etaBasis[q.GetEstimateBasis()]; ok && e != "?" {
				e += " (" + b + ")"
			} else if e == "?" {
				e = "unknown (no recent run times or deadlines to go by)"
			}
			row("Estimated start", e)
		}
	}
	created := when(now, j.GetCreateTime())
	if c := j.GetCreator(); c != "" && created != "" {
		created += " by " + c
	}
	row("Created", created)
	row("Started", when(now, st.GetStartTime()))
	row("Finished", when(now, st.GetCompletionTime()))
	_ = kv.Flush()

	if len(st.GetReplicas()) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "REPLICA\tSTATE\tPOD\tNODE\tRESTARTS\tEXIT\tREASON")
	var notes []string
	for _, r := range st.GetReplicas() {
		name := lowerEnum(r.GetType()) + "-" + strconv.Itoa(int(r.GetIndex()))
		exit, reason := "-", "-"
		if t := r.GetLastTermination(); t != nil {
			exit, reason = strconv.Itoa(int(t.GetExitCode())), dash(t.GetReason())
			if m := strings.TrimSpace(t.GetMessage()); m != "" {
				notes = append(notes, fmt.Sprintf("%s exited %d: %s", name, t.GetExitCode(), m))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", name, shortEnum(r.GetState()), dash(r.GetPod()), dash(r.GetNode()), r.GetRestarts(), exit, reason)
	}
	_ = tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
}

func writeEventsTable(w io.Writer, events []*pb.JobEvent, now time.Time) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "ID\tAGE\tTYPE\tREASON\tSTATE\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.GetId(), age(now, e.GetCreateTime()), dash(e.GetType()), dash(e.GetReason()), shortEnum(e.GetState()), oneLine(e.GetMessage()))
	}
	_ = tw.Flush()
}

// writeWatchLine prints one watch message as a line of its own, so that a
// line appears the moment it arrives (a table could not be aligned before
// its last row).
func writeWatchLine(w io.Writer, m *pb.WatchJobResponse) {
	var line string
	if e := m.GetEvent(); e != nil {
		line = fmt.Sprintf("%s  %-20s  %-10s  %-7s  %s  %s", clock(e.GetCreateTime()), lastSegment(e.GetJob()),
			shortEnum(e.GetState()), e.GetType(), e.GetReason(), oneLine(e.GetMessage()))
	} else {
		j := m.GetJob()
		line = fmt.Sprintf("%s  %-20s  %-10s  current state  %s", clock(j.GetUpdateTime()), lastSegment(j.GetName()),
			jobState(j), oneLine(j.GetStatus().GetMessage()))
	}
	if q := m.GetJob().GetStatus().GetQueue(); q != nil {
		line = fmt.Sprintf("%s  [position %s, waiting for %s, ETA %s]", strings.TrimRight(line, " "), queuePosition(q), waitingFor(q),
			eta(time.Now(), q))
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}

func writeTenantsTable(w io.Writer, tenants []*pb.Tenant, now time.Time) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tNAMESPACE\tQUOTA\tMEMBERS\tAGE")
	for _, t := range tenants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", lastSegment(t.GetName()), shortEnum(t.GetState()), dash(t.GetNamespace()), formatQuota(t.GetQuota()), len(t.GetMembers()), age(now, t.GetCreateTime()))
	}
	_ = tw.Flush()
}

func writeTenantDetail(w io.Writer, t *pb.Tenant, now time.Time) {
	kv := newTabWriter(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(kv, "%s:\t%s\n", k, v)
		}
	}
	row("Name", lastSegment(t.GetName()))
	row("Display name", t.GetDisplayName())
	row("State", shortEnum(t.GetState()))
	row("Namespace", t.GetNamespace())
	row("Labels", formatMap(t.GetLabels()))
	row("Quota", formatQuota(t.GetQuota()))
	if sc := t.GetScheduling(); sc != nil {
		row("Scheduling", fmt.Sprintf("preemption %s, queueing %s", shortEnum(sc.GetPreemptionPolicy()), shortEnum(sc.GetQueueingStrategy())))
	}
	writeSharing(row, t)
	row("Pod readers", strings.Join(t.GetPodReaderGroups(), ", "))
	if cs := t.GetClusters(); len(cs) > 0 {
		row("Clusters", strings.Join(cs, ", "))
	} else {
		row("Clusters", "all")
	}
	row("Created", when(now, t.GetCreateTime()))
	for i, m := range t.GetMembers() {
		k := ""
		if i == 0 {
			k = "Members:"
		}
		fmt.Fprintf(kv, "%s\t%s\n", k, formatMember(m))
	}
	_ = kv.Flush()
}

func writeSecretsTable(w io.Writer, secrets []*pb.Secret, now time.Time) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tKEYS\tUPDATED")
	for _, s := range secrets {
		updated := s.GetUpdateTime()
		if updated == nil {
			updated = s.GetCreateTime()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", lastSegment(s.GetName()), dash(strings.Join(s.GetKeys(), ",")), age(now, updated))
	}
	_ = tw.Flush()
}

func formatQuota(q *pb.Quota) string {
	var parts []string
	if q.GetGpu() > 0 {
		parts = append(parts, fmt.Sprintf("gpu=%d", q.GetGpu()))
	}
	if q.GetCpu() != "" {
		parts = append(parts, "cpu="+q.GetCpu())
	}
	if q.GetMemory() != "" {
		parts = append(parts, "memory="+q.GetMemory())
	}
	if q.GetPods() > 0 {
		parts = append(parts, fmt.Sprintf("pods=%d", q.GetPods()))
	}
	if len(parts) == 0 {
		return "unlimited"
	}
	return strings.Join(parts, " ")
}

// formatMember is the --member form: group:ml-team=editor.
func formatMember(m *pb.Member) string {
	who := "subject:" + m.GetSubject()
	if g, ok := m.GetPrincipal().(*pb.Member_Group); ok {
		who = "group:" + g.Group
	}
	return who + "=" + strings.ToLower(shortEnum(m.GetRole()))
}

func formatMap(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// age is how long ago t was, as kubectl writes it; "-" when unknown.
func age(now time.Time, t *timestamppb.Timestamp) string {
	if t == nil {
		return "-"
	}
	return humanDuration(now.Sub(t.AsTime()))
}

// when is a local timestamp and its age.
func when(now time.Time, t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", t.AsTime().Local().Format("2006-01-02 15:04:05"), age(now, t))
}

func clock(t *timestamppb.Timestamp) string {
	if t == nil {
		return "--:--:--"
	}
	return t.AsTime().Local().Format("15:04:05")
}

// humanDuration follows kubectl's ages: precise when short, coarse when long.
func humanDuration(d time.Duration) string {
	s := int(d.Seconds())
	switch m, h := s/60, s/3600; {
	case s < 0:
		return "0s"
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case m < 10:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s%60)
	case m < 180:
		return fmt.Sprintf("%dm", m)
	case h < 8:
		if m%60 == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m%60)
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case h < 24*8:
		if h%24 == 0 {
			return fmt.Sprintf("%dd", h/24)
		}
		return fmt.Sprintf("%dd%dh", h/24, h%24)
	case h < 24*365*2:
		return fmt.Sprintf("%dd", h/24)
	default:
		return fmt.Sprintf("%dy", h/24/365)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a message on its table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// lastSegment is the id at the end of a resource name.
func lastSegment(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

// tenantOf is the tenant id of tenants/{tenant}/...
func tenantOf(name string) string {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 2 || parts[0] != "tenants" {
		return ""
	}
	return parts[1]
}
