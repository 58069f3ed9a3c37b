// Package agentwire converts between the worker's storage types
// (internal/store, internal/job, internal/tenant, internal/cluster) and
// AgentService's messages (proto/trainyard/v1/agent.proto), for both
// sides: the API server's handlers (internal/api, agent.go) and the
// remote agent's client (internal/agentclient). Documents the store keeps
// as JSON (a job, its status and events, a tenant, nodes) travel as the
// same JSON; the rest is fields.
package agentwire

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Key converts a job key.
func Key(k store.JobKey) *pb.AgentJobKey { return &pb.AgentJobKey{Tenant: k.Tenant, Uid: k.UID} }

// KeyOf converts a job key back.
func KeyOf(k *pb.AgentJobKey) store.JobKey {
	return store.JobKey{Tenant: k.GetTenant(), UID: k.GetUid()}
}

// Keys converts job keys.
func Keys(keys []store.JobKey) []*pb.AgentJobKey {
	out := make([]*pb.AgentJobKey, len(keys))
	for i, k := range keys {
		out[i] = Key(k)
	}
	return out
}

// KeysOf converts job keys back.
func KeysOf(keys []*pb.AgentJobKey) []store.JobKey {
	out := make([]store.JobKey, len(keys))
	for i, k := range keys {
		out[i] = KeyOf(k)
	}
	return out
}

// Job converts a worker's job; workerID is the owner as the agent may see
// it (the server unscopes it).
func Job(w store.WorkerJob, workerID string) (*pb.AgentJob, error) {
	doc, err := json.Marshal(w.Job)
	if err != nil {
		return nil, err
	}
	return &pb.AgentJob{Job: doc, Version: w.Version, Admitted: w.Admitted, Deleted: w.Deleted, Active: w.Active,
		WorkerId: workerID, PreemptFor: w.PreemptFor, PreemptMessage: w.PreemptMessage, WaitReason: string(w.WaitReason)}, nil
}

// JobOf converts a worker's job back.
func JobOf(j *pb.AgentJob) (store.WorkerJob, error) {
	w := store.WorkerJob{Version: j.GetVersion(), Admitted: j.GetAdmitted(), Deleted: j.GetDeleted(), Active: j.GetActive(),
		WorkerID: j.GetWorkerId(), PreemptFor: j.GetPreemptFor(), PreemptMessage: j.GetPreemptMessage(),
		WaitReason: job.WaitReason(j.GetWaitReason())}
	if err := json.Unmarshal(j.GetJob(), &w.Job); err != nil {
		return store.WorkerJob{}, fmt.Errorf("agentwire: job: %w", err)
	}
	return w, nil
}

func dur(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// Duration converts a duration back (nil: 0).
func Duration(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

// Dur converts a duration (0: nil).
func Dur(d time.Duration) *durationpb.Duration { return dur(d) }

// Save converts a save; the worker id is the agent's own.
func Save(p store.JobSaveParams) (*pb.SaveJobRequest, error) {
	status, err := json.Marshal(p.Status)
	if err != nil {
		return nil, err
	}
	events, err := json.Marshal(p.Events)
	if err != nil {
		return nil, err
	}
	r := &pb.SaveJobRequest{WorkerId: p.WorkerID, Key: Key(store.JobKey{Tenant: p.Tenant, UID: p.UID}), Version: p.Version,
		Status: status, Events: events, Done: p.Done, Park: dur(p.Park)}
	if p.Requeue != nil {
		r.Requeue = &pb.AgentRequeue{After: dur(p.Requeue.After), PreemptedBy: p.Requeue.PreemptedBy}
	}
	return r, nil
}

// SaveOf converts a save back; the caller sets the worker id it trusts.
func SaveOf(r *pb.SaveJobRequest) (store.JobSaveParams, error) {
	p := store.JobSaveParams{Tenant: r.GetKey().GetTenant(), UID: r.GetKey().GetUid(), Version: r.GetVersion(),
		Done: r.GetDone(), Park: Duration(r.GetPark())}
	if err := json.Unmarshal(r.GetStatus(), &p.Status); err != nil {
		return p, fmt.Errorf("status: %w", err)
	}
	if len(r.GetEvents()) > 0 {
		if err := json.Unmarshal(r.GetEvents(), &p.Events); err != nil {
			return p, fmt.Errorf("events: %w", err)
		}
	}
	if q := r.GetRequeue(); q != nil {
		p.Requeue = &store.Requeue{After: Duration(q.GetAfter()), PreemptedBy: q.GetPreemptedBy()}
	}
	return p, nil
}

// Brief converts what the orphan sweep learns of a job.
func Brief(b store.JobBrief) *pb.AgentJobBrief {
	return &pb.AgentJobBrief{Key: Key(b.Key), Active: b.Active, CleanedUp: b.CleanedUp, State: string(b.State), Elsewhere: b.Elsewhere}
}

// BriefOf converts it back.
func BriefOf(b *pb.AgentJobBrief) store.JobBrief {
	return store.JobBrief{Key: KeyOf(b.GetKey()), Active: b.GetActive(), CleanedUp: b.GetCleanedUp(),
		State: job.State(b.GetState()), Elsewhere: b.GetElsewhere()}
}

// ForAgent is what an agent may know of a tenant: what its namespace is
// built from, without its members (who they are is none of a cluster's
// business).
func ForAgent(t tenant.Tenant) tenant.Tenant {
	t.Members = nil
	return t
}

// Heartbeat converts an agent's heartbeat; the cluster is the server's to
// decide (the agent's own).
func Heartbeat(p store.ClusterHeartbeatParams) (*pb.AgentHeartbeatRequest, error) {
	capacity, err := json.Marshal(cluster.Resources(p.Capacity))
	if err != nil {
		return nil, err
	}
	usage, err := json.Marshal(cluster.Resources(p.Usage))
	if err != nil {
		return nil, err
	}
	r := &pb.AgentHeartbeatRequest{Agent: p.Agent, Capacity: capacity, Usage: usage, NodeCount: int32(p.NodeCount), NodesDigest: p.NodesDigest}
	if p.NodesDigest != "" {
		if r.Nodes, err = json.Marshal(p.Nodes); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// HeartbeatOf converts a heartbeat back (without its cluster).
func HeartbeatOf(r *pb.AgentHeartbeatRequest) (store.ClusterHeartbeatParams, error) {
	p := store.ClusterHeartbeatParams{Agent: r.GetAgent(), NodeCount: int(r.GetNodeCount()), NodesDigest: r.GetNodesDigest()}
	var capacity, usage cluster.Resources
	if err := json.Unmarshal(r.GetCapacity(), &capacity); err != nil {
		return p, fmt.Errorf("capacity: %w", err)
	}
	if err := json.Unmarshal(r.GetUsage(), &usage); err != nil {
		return p, fmt.Errorf("usage: %w", err)
	}
	p.Capacity, p.Usage = job.Vector(capacity), job.Vector(usage)
	if p.NodesDigest != "" {
		if err := json.Unmarshal(r.GetNodes(), &p.Nodes); err != nil {
			return p, fmt.Errorf("nodes: %w", err)
		}
	}
	return p, nil
}

// Reasons of the google.rpc.ErrorInfo that tells the fence's errors apart
// (both are ABORTED).
const (
	ErrorDomain       = "trainyard.dev"
	ReasonLeaseLost   = "LEASE_LOST"
	ReasonConflict    = "CONFLICT"
	ReasonPrecondFail = "FAILED_PRECONDITION"
)
