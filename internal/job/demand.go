package job

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The container requests a tenant namespace's LimitRange sets when a
// replica names neither a request nor a limit (internal/kube renders the
// LimitRange from these), so that Demand counts what the ResourceQuota
// will charge.
const (
	DefaultCPURequest    = "100m"
	DefaultMemoryRequest = "256Mi"
)

// TensorBoardResources is what the TensorBoard pod requests (and, memory
// being its own limit, may use): a quarter core and 1 GiB is enough to serve
// the event files of a typical job. It counts towards the job's Demand.
var TensorBoardResources = Resources{CPU: "250m", Memory: "1Gi"}

// Demand returns what the job asks of its tenant's quota: the requests of
// every replica pod (count × the replica's requests) plus the TensorBoard
// pod, if any.
//
// A request is what Kubernetes will account for the pod: the request when
// set, else the limit (Kubernetes defaults a missing request to the limit),
// else the default request of the tenant's LimitRange (DefaultCPURequest,
// DefaultMemoryRequest), which the ResourceQuota charges like any other.
// Call it on a spec that passed Validate; the error reports a quantity that
// does not parse or a sum that overflows.
func (s Spec) Demand() (Demand, error) {
	var d Demand
	for i, r := range s.Replicas {
		rd, err := podDemand(r.Resources)
		if err != nil {
			return Demand{}, fmt.Errorf("spec.replicas[%d].resources: %w", i, err)
		}
		if err := d.addTimes(rd, int64(max(r.Count, 1))); err != nil {
			return Demand{}, fmt.Errorf("spec.replicas[%d]: %w", i, err)
		}
	}
	if s.TensorBoard != nil {
		td, err := podDemand(TensorBoardResources)
		if err != nil {
			return Demand{}, fmt.Errorf("spec.tensorboard: %w", err)
		}
		if err := d.addTimes(td, 1); err != nil {
			return Demand{}, fmt.Errorf("spec.tensorboard: %w", err)
		}
	}
	return d, nil
}

// podDemand is the demand of one pod with these resources.
func podDemand(r Resources) (Demand, error) {
	d := Demand{GPU: int64(r.GPU), Pods: 1}
	cpu, err := requestOrLimit(r.CPU, r.CPULimit, DefaultCPURequest)
	if err != nil {
		return Demand{}, fmt.Errorf("cpu: %w", err)
	}
	if d.CPUMilli, err = toInt64(cpu, resource.Milli); err != nil {
		return Demand{}, fmt.Errorf("cpu: %w", err)
	}
	mem, err := requestOrLimit(r.Memory, r.MemoryLimit, DefaultMemoryRequest)
	if err != nil {
		return Demand{}, fmt.Errorf("memory: %w", err)
	}
	if d.MemoryBytes, err = toInt64(mem, 0); err != nil {
		return Demand{}, fmt.Errorf("memory: %w", err)
	}
	return d, nil
}

// requestOrLimit parses the request, else the limit, else the default.
func requestOrLimit(request, limit, def string) (resource.Quantity, error) {
	s := cmp.Or(request, limit, def)
	return resource.ParseQuantity(s)
}

// toInt64 converts q to an integer count of 10^scale units, rounding up as
// Kubernetes does, and refuses values that do not fit an int64.
func toInt64(q resource.Quantity, scale resource.Scale) (int64, error) {
	// Quantity.ScaledValue saturates silently; compare first.
	limit := resource.NewScaledQuantity(math.MaxInt64, scale)
	if q.Cmp(*limit) > 0 {
		return 0, fmt.Errorf("%s is too large", q.String())
	}
	return q.ScaledValue(scale), nil
}

// addTimes adds n × o to d, failing on int64 overflow.
func (d *Demand) addTimes(o Demand, n int64) error {
	for _, f := range []struct {
		dst *int64
		v   int64
	}{{&d.GPU, o.GPU}, {&d.CPUMilli, o.CPUMilli}, {&d.MemoryBytes, o.MemoryBytes}, {&d.Pods, o.Pods}} {
		hi, lo := bits.Mul64(uint64(f.v), uint64(n))
		sum := *f.dst + int64(lo)
		if f.v < 0 || n < 0 || hi != 0 || lo > math.MaxInt64 || sum < *f.dst {
			return fmt.Errorf("total resource requests are out of range")
		}
		*f.dst = sum
	}
	return nil
}
