package scheduler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/trainyard/trainyard/internal/admission"
	"github.com/trainyard/trainyard/internal/cluster"
)

// ClusterNodes returns this process's cluster's nodes as its agent
// publishes them (issue 45: worker.ClusterAgent): the same view a cycle
// reads (nodes), from the informers every worker runs whether or not it
// leads. False until the node and pod informers have synced: an empty
// list before then would say the cluster has no capacity.
func (s *Scheduler) ClusterNodes() ([]cluster.Node, bool) {
	for _, synced := range s.synced {
		if !synced() {
			return nil, false
		}
	}
	list, err := s.nodeLister.List(labels.Everything())
	if err != nil {
		return nil, false
	}
	jobs := s.usage.jobsUsed()
	out := make([]cluster.Node, 0, len(list))
	for _, n := range list {
		out = append(out, cluster.Node{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: !ready(n),
			Allocatable: vectorOf(n.Status.Allocatable), Used: s.usage.nodeUsed(n.Name), Jobs: jobs[n.Name],
		})
	}
	return out, true
}

// ClusterRefresh is how often a leader reads the other clusters'
// published nodes again; their agents publish every heartbeat (10 s by
// default), so reading more often gains nothing.
const ClusterRefresh = 2 * time.Second

// others are the registered clusters, read every cycle (a few rows: an
// operator's cordon or drain holds from the next decision on), and the
// other READY clusters' nodes, read at most every ClusterRefresh: this
// process's own cluster (Config.Cluster) comes from its informers
// instead. On those nodes the Trainyard jobs' share is left out
// (cluster.Node.Jobs): this scheduler sees none of their pods and counts
// each admitted job there from its demand (admission's reservations).
func (s *Scheduler) others(ctx context.Context, now time.Time) ([]admission.Cluster, []admission.Node, error) {
	list, err := s.store.ClusterList(ctx)
	if err != nil {
		return nil, nil, err
	}
	clusters := make([]admission.Cluster, 0, len(list))
	for _, c := range list {
		clusters = append(clusters, admission.Cluster{Name: c.Name, Labels: c.Labels, State: admission.ClusterState(c.State())})
	}
	if !s.othersAt.IsZero() && now.Sub(s.othersAt) < ClusterRefresh {
		return clusters, s.otherNodes, nil
	}
	ready, err := s.store.ClusterNodesReady(ctx)
	if err != nil {
		return nil, nil, err
	}
	var nodes []admission.Node
	for _, c := range ready {
		if c.Cluster == s.cfg.Cluster {
			continue
		}
		for _, n := range c.Nodes {
			nodes = append(nodes, admission.Node{Name: n.Name, Cluster: c.Cluster, Labels: n.Labels, Taints: n.Taints,
				Unschedulable: n.Unschedulable, Allocatable: n.Allocatable, Used: n.Used.Sub(n.Jobs)})
		}
	}
	s.otherNodes, s.othersAt = nodes, now
	return clusters, nodes, nil
}
