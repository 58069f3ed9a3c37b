// Package cluster is the domain of the Kubernetes clusters one Trainyard
// drives (issue 45): what a cluster record says, its state, the nodes its
// agent publishes, and the validation of what an operator may set. It does
// no I/O.
//
// # State
//
// A cluster's state is derived from two things kept apart, so that a
// heartbeat never undoes an operator's drain:
//
//	operator (AdminState):  ACTIVE ──drain──► DRAINING
//	                          ▲  ◄──uncordon──  │
//	                          └──cordon──► CORDONED
//	health (Reachable):     set by the sweep on the scheduler lease's holder
//	                        from the age of the agent's last heartbeat
//
//	State = UNREACHABLE   when not Reachable (whatever the operator set)
//	      = DRAINING      when the operator drains it: nothing new is
//	                      admitted there, running jobs finish
//	      = CORDONED      nothing new is admitted, running jobs stay
//	      = READY         otherwise
//
// The cluster that exists before issue 45 is Default: the migration
// creates it, so one cluster needs no configuration.
package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/job"
)

// Default is the cluster of a one-cluster installation: the one the
// worker reports to without --cluster. It cannot be deleted.
const Default = "default"

// Limits of Validate.
const (
	MaxNameLength        = 40 // room for suffixes in names derived from it
	MaxDisplayNameLength = 200
	MaxLabels            = 32
)

// State is what the scheduler and the operator read of a cluster.
type State string

// The states.
const (
	Ready       State = "READY"
	Unreachable State = "UNREACHABLE"
	Draining    State = "DRAINING"
	Cordoned    State = "CORDONED"
)

// AdminState is what an operator set: ACTIVE, DRAINING or CORDONED.
type AdminState string

// The operator's states.
const (
	Active        AdminState = "ACTIVE"
	AdminDraining AdminState = "DRAINING"
	AdminCordoned AdminState = "CORDONED"
)

// Cluster is a Kubernetes cluster Trainyard places jobs in.
type Cluster struct {
	// Name is the cluster's id: a DNS-1123 label (clusters/{name}).
	Name        string
	DisplayName string
	// Labels describe the cluster (region, cloud, GPU models, cost class)
	// for jobs' cluster selectors.
	Labels map[string]string
	// Admin is the operator's state.
	Admin AdminState
	// AgentIdentity is how the cluster's remote agent authenticates;
	// zero for a cluster whose workers reach Postgres themselves.
	AgentIdentity AgentIdentity

	// Reachable is the sweep's verdict on the heartbeats. Output only.
	Reachable bool
	// HeartbeatTime is the agent's last heartbeat; zero: none yet.
	HeartbeatTime time.Time
	// Agent is the id of the worker that sent it.
	Agent string
	// Capacity is the allocatable of the schedulable nodes; Usage what
	// pods bound to them request.
	Capacity, Usage job.Vector
	// Nodes counts every node of the cluster, schedulable or not.
	Nodes int

	CreateTime, UpdateTime time.Time
}

// State derives the cluster's state (see the package doc).
func (c Cluster) State() State {
	switch {
	case !c.Reachable:
		return Unreachable
	case c.Admin == AdminDraining:
		return Draining
	case c.Admin == AdminCordoned:
		return Cordoned
	}
	return Ready
}

// Admits reports whether new jobs may be placed in the cluster.
func (c Cluster) Admits() bool { return c.State() == Ready }

// ValidateName checks a cluster's name: a DNS-1123 label of at most
// MaxNameLength characters.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("cluster name is required")
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("cluster name %q is %d characters; at most %d are allowed", name, len(name), MaxNameLength)
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("cluster name %q: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

// Validate checks what an operator may set on a cluster (name, display
// name, labels); violations name the field in the API's JSON names.
func Validate(c *Cluster) []job.FieldViolation {
	var v job.Violations
	if err := ValidateName(c.Name); err != nil {
		v.Add("name", "%s", err.Error())
	}
	if n := utf8.RuneCountInString(c.DisplayName); n > MaxDisplayNameLength {
		v.Add("displayName", "is %d characters; at most %d are allowed", n, MaxDisplayNameLength)
	}
	if len(c.Labels) > MaxLabels {
		v.Add("labels", "has %d labels; at most %d are allowed", len(c.Labels), MaxLabels)
	}
	v = append(v, ValidateIdentity("agentIdentity.", c.AgentIdentity)...)
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			v.Add("labels", "key %q: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(c.Labels[k]); len(msgs) > 0 {
			v.Add("labels", "value of %q: %s", k, strings.Join(msgs, "; "))
		}
	}
	return v
}

// Node is what an agent publishes of one node of its cluster: what the
// scheduler needs to place a gang there (admission.Node, field by field).
type Node struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	// Unschedulable: cordoned, or not Ready.
	Unschedulable bool
	Allocatable   job.Vector
	// Used is what the pods bound to the node request, unless finished.
	Used job.Vector
	// Jobs is the part of Used that Trainyard jobs' pods take: another
	// cluster's scheduler counts those jobs from their demand instead (it
	// sees none of their pods), so it places on Used less Jobs.
	Jobs job.Vector
}

// Nodes are a cluster's published nodes, with what the scheduler needs of
// the cluster itself.
type Nodes struct {
	Cluster string
	Labels  map[string]string
	Nodes   []Node
}

// Sum is the capacity (allocatable) and usage of the schedulable nodes,
// as a cluster record shows them.
func Sum(nodes []Node) (capacity, usage job.Vector) {
	for _, n := range nodes {
		if n.Unschedulable {
			continue
		}
		capacity = capacity.Add(n.Allocatable)
		usage = usage.Add(n.Used)
	}
	return capacity, usage
}

// Resources is a job.Vector in JSON: an object keyed by Kubernetes
// resource name ("cpu" in millicores, "memory" in bytes,
// "nvidia.com/gpu", "pods"), zeros left out. A dimension added to
// job.AllResources needs no migration.
type Resources job.Vector

// MarshalJSON writes the non-zero amounts by resource name.
func (r Resources) MarshalJSON() ([]byte, error) {
	m := make(map[string]int64, len(r))
	for _, res := range job.AllResources {
		if r[res] != 0 {
			m[res.Name()] = r[res]
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads amounts by resource name; names it does not know
// are ignored (written by a newer version).
func (r *Resources) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*r = Resources{}
	for _, res := range job.AllResources {
		r[res] = m[res.Name()]
	}
	return nil
}

// nodeJSON is Node as published: short keys, empty fields left out, so
// that a cluster of hundreds of nodes stays a small document.
type nodeJSON struct {
	Name          string            `json:"n"`
	Labels        map[string]string `json:"l,omitempty"`
	Taints        []corev1.Taint    `json:"t,omitempty"`
	Unschedulable bool              `json:"u,omitempty"`
	Allocatable   Resources         `json:"a"`
	Used          Resources         `json:"r"`
	Jobs          Resources         `json:"j,omitzero"`
}

// MarshalJSON writes the node compactly.
func (n Node) MarshalJSON() ([]byte, error) {
	return json.Marshal(nodeJSON{Name: n.Name, Labels: n.Labels, Taints: n.Taints, Unschedulable: n.Unschedulable,
		Allocatable: Resources(n.Allocatable), Used: Resources(n.Used), Jobs: Resources(n.Jobs)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (n *Node) UnmarshalJSON(b []byte) error {
	var j nodeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*n = Node{Name: j.Name, Labels: j.Labels, Taints: j.Taints, Unschedulable: j.Unschedulable,
		Allocatable: job.Vector(j.Allocatable), Used: job.Vector(j.Used), Jobs: job.Vector(j.Jobs)}
	return nil
}
