package scheduler

import (
	"k8s.io/apimachinery/pkg/labels"

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
	out := make([]cluster.Node, 0, len(list))
	for _, n := range list {
		out = append(out, cluster.Node{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: !ready(n),
			Allocatable: vectorOf(n.Status.Allocatable), Used: s.usage.nodeUsed(n.Name),
		})
	}
	return out, true
}
