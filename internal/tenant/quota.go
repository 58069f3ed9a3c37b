package tenant

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainyard/trainyard/internal/job"
)

// Limits returns the quota as a job.Vector, the units demands and usage
// are compared in. A zero amount means no limit.
func (q Quota) Limits() (job.Vector, error) {
	var v job.Vector
	v[job.GPU], v[job.Pods] = int64(q.GPU), int64(q.Pods)
	for _, f := range []struct {
		res  job.Resource
		text string
	}{{job.CPU, q.CPU}, {job.Memory, q.Memory}} {
		if f.text == "" {
			continue
		}
		parsed, err := resource.ParseQuantity(f.text)
		if err != nil {
			return v, fmt.Errorf("quota.%s: %w", f.res.Name(), err)
		}
		if v[f.res], err = f.res.Amount(parsed); err != nil {
			return v, fmt.Errorf("quota.%s: %w", f.res.Name(), err)
		}
	}
	return v, nil
}
