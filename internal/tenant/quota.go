package tenant

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainyard/trainyard/internal/job"
)

// Limits returns the quota in the units admission compares jobs' demands
// with. A zero field means no limit.
func (q Quota) Limits() (job.Demand, error) {
	d := job.Demand{GPU: int64(q.GPU), Pods: int64(q.Pods)}
	if q.CPU != "" {
		v, err := resource.ParseQuantity(q.CPU)
		if err != nil {
			return d, fmt.Errorf("quota.cpu: %w", err)
		}
		d.CPUMilli = v.MilliValue()
	}
	if q.Memory != "" {
		v, err := resource.ParseQuantity(q.Memory)
		if err != nil {
			return d, fmt.Errorf("quota.memory: %w", err)
		}
		d.MemoryBytes = v.Value()
	}
	return d, nil
}
