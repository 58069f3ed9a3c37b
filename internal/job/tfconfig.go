package job

import (
	"encoding/json"
	"strconv"
)

// TFConfigEnv is the environment variable TensorFlow reads its cluster from.
const TFConfigEnv = "TF_CONFIG"

// tfConfig is TF_CONFIG as DESIGN.md specifies it. Field order is the JSON
// key order: cluster, task, environment; in the cluster chief, worker, ps,
// evaluator. Empty types are left out.
type tfConfig struct {
	Cluster     tfCluster `json:"cluster"`
	Task        tfTask    `json:"task"`
	Environment string    `json:"environment"`
}

type tfCluster struct {
	Chief     []string `json:"chief,omitempty"`
	Worker    []string `json:"worker,omitempty"`
	PS        []string `json:"ps,omitempty"`
	Evaluator []string `json:"evaluator,omitempty"`
}

type tfTask struct {
	Type  ReplicaType `json:"type"`
	Index int32       `json:"index"`
}

// Distributed reports whether the spec has more than one replica in total
// (counts not yet defaulted count as 1). Only such a job gets TF_CONFIG and
// the EndpointSlice its replicas find each other through: a single
// replica has no peer to resolve, and its slice would cost the API server
// a write or more per job for
// nothing — in issue 8's admission benchmark of 15,000 single-pod jobs,
// about as much API server CPU as the pods themselves.
func (s Spec) Distributed() bool {
	var total int64
	for _, r := range s.Replicas {
		total += int64(max(r.Count, 1))
	}
	return total > 1
}

// TFConfig returns the TF_CONFIG of one replica of a job running in
// namespace, as compact JSON:
//
//	{"cluster":{"chief":["j-chief-0.replicas.ns.svc:2222"],"worker":[...]},"task":{"type":"worker","index":0},"environment":"cloud"}
//
// Each address is the replica pod's name under the namespace's headless
// Service of replicas, <job>-<type>-<i>.replicas.<namespace>.svc, with the port of that replica's
// own type. The evaluator is listed like the other types, as DESIGN.md asks
// (Kubeflow's TFJob leaves it out of the cluster).
//
// The result is false, with no TF_CONFIG, when the job has a single replica
// in total (TensorFlow then runs locally) and when t/index is not a replica
// of the spec. Counts and ports not yet defaulted count as their defaults.
func TFConfig(job, namespace string, spec Spec, t ReplicaType, index int32) (string, bool) {
	var total int64
	member := false
	cfg := tfConfig{Task: tfTask{Type: t, Index: index}, Environment: "cloud"}
	for _, r := range spec.Replicas {
		count := max(r.Count, 1)
		total += int64(count)
		if r.Type == t && index >= 0 && index < count {
			member = true
		}
		list := cfg.Cluster.list(r.Type)
		if list == nil {
			continue
		}
		port := r.Port
		if port == 0 {
			port = DefaultPort
		}
		for i := range count {
			*list = append(*list, replicaAddress(job, namespace, r.Type, i, port))
		}
	}
	if total <= 1 || !member {
		return "", false
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		// Strings and integers only: Marshal cannot fail.
		panic("job: marshal TF_CONFIG: " + err.Error())
	}
	return string(b), true
}

// list is the cluster entry of type t, nil for an unknown type.
func (c *tfCluster) list(t ReplicaType) *[]string {
	switch t {
	case Chief:
		return &c.Chief
	case Worker:
		return &c.Worker
	case PS:
		return &c.PS
	case Evaluator:
		return &c.Evaluator
	}
	return nil
}

// replicaAddress is where a replica's TensorFlow server listens, resolvable
// through the namespace's headless Service of replicas.
func replicaAddress(job, namespace string, t ReplicaType, index, port int32) string {
	return PodName(job, t, index) + "." + ReplicaService + "." + namespace + ".svc:" + strconv.FormatInt(int64(port), 10)
}
