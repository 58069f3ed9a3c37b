package job

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource is one dimension of what pods request, nodes offer and tenant
// quotas limit. This list is the only place the dimensions are named: the
// scheduler, quotas, the ResourceQuota rendering and messages all range
// over it, so a new dimension (another extended resource) is one line here.
type Resource int

const (
	CPU    Resource = iota // millicores
	Memory                 // bytes
	GPU                    // devices (nvidia.com/gpu)
	Pods                   // pod slots
	NumResources
)

// AllResources lists every Resource in order.
var AllResources = [NumResources]Resource{CPU, Memory, GPU, Pods}

type resourceInfo struct {
	name  string         // the Kubernetes resource name
	scale resource.Scale // Vector values count 10^scale units
	human string         // a word for messages
}

var resourceInfos = [NumResources]resourceInfo{
	CPU:    {name: "cpu", scale: resource.Milli, human: "CPU"},
	Memory: {name: "memory", scale: 0, human: "memory"},
	GPU:    {name: "nvidia.com/gpu", scale: 0, human: "GPUs"},
	Pods:   {name: "pods", scale: 0, human: "pods"},
}

// Name is the resource's Kubernetes name ("cpu", "nvidia.com/gpu"), also
// the label value in metrics.
func (r Resource) Name() string { return resourceInfos[r].name }

// Human is a word for the resource in messages ("GPUs").
func (r Resource) Human() string { return resourceInfos[r].human }

// Extended reports whether the resource is an extended resource, which
// a ResourceQuota limits only as requests.<name>.
func (r Resource) Extended() bool { return strings.Contains(resourceInfos[r].name, "/") }

// Amount converts a Kubernetes quantity of this resource into Vector units,
// rounding up as Kubernetes does; values past int64 are an error.
func (r Resource) Amount(q resource.Quantity) (int64, error) {
	return toInt64(q, resourceInfos[r].scale)
}

// Quantity converts an amount in Vector units back to a Kubernetes quantity.
func (r Resource) Quantity(v int64) resource.Quantity {
	if r == Memory {
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewScaledQuantity(v, resourceInfos[r].scale)
}

// Format writes an amount the way Kubernetes would ("1500m", "16Gi", "8").
func (r Resource) Format(v int64) string {
	q := r.Quantity(v)
	return q.String()
}

// Vector is an amount of every Resource: a pod's requests, a job's demand,
// a node's free capacity, a tenant's quota (where 0 means no limit).
type Vector [NumResources]int64

// Add returns v + o.
func (v Vector) Add(o Vector) Vector {
	for r := range v {
		v[r] += o[r]
	}
	return v
}

// Sub returns v - o.
func (v Vector) Sub(o Vector) Vector {
	for r := range v {
		v[r] -= o[r]
	}
	return v
}

// Times returns n × v.
func (v Vector) Times(n int64) Vector {
	for r := range v {
		v[r] *= n
	}
	return v
}

// LessEq reports whether v ≤ o in every dimension: a request v fits free
// capacity o.
func (v Vector) LessEq(o Vector) bool {
	for r := range v {
		if v[r] > o[r] {
			return false
		}
	}
	return true
}

// IsZero reports whether every amount is zero.
func (v Vector) IsZero() bool { return v == Vector{} }

// Within reports whether v stays within limit in every dimension that
// limit limits (a zero limit means no limit): the rule for quotas.
func (v Vector) Within(limit Vector) bool { return len(v.Over(limit)) == 0 }

// Over lists the dimensions in which v exceeds a non-zero limit.
func (v Vector) Over(limit Vector) []Resource {
	var over []Resource
	for r := range v {
		if limit[r] > 0 && v[r] > limit[r] {
			over = append(over, Resource(r))
		}
	}
	return over
}

// Short lists the dimensions in which v exceeds free (no zero exemption):
// the rule for capacity.
func (v Vector) Short(free Vector) []Resource {
	var short []Resource
	for r := range v {
		if v[r] > free[r] {
			short = append(short, Resource(r))
		}
	}
	return short
}

// String lists the non-zero amounts: "cpu=1500m memory=4Gi nvidia.com/gpu=2 pods=3".
func (v Vector) String() string {
	var parts []string
	for r, a := range v {
		if a != 0 {
			parts = append(parts, Resource(r).Name()+"="+Resource(r).Format(a))
		}
	}
	return strings.Join(parts, " ")
}

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

// Demand returns what the job asks of its tenant's quota and of the
// cluster: the requests of every replica pod (count × the replica's
// requests) plus the TensorBoard pod, if any.
//
// Call it on a spec that passed Validate; the error reports a quantity that
// does not parse or a sum that overflows.
func (s Spec) Demand() (Vector, error) {
	var d Vector
	for i, r := range s.Replicas {
		rd, err := r.Resources.PodRequests()
		if err != nil {
			return Vector{}, fmt.Errorf("spec.replicas[%d].resources: %w", i, err)
		}
		if err := d.addTimes(rd, int64(max(r.Count, 1))); err != nil {
			return Vector{}, fmt.Errorf("spec.replicas[%d]: %w", i, err)
		}
	}
	if s.TensorBoard != nil {
		td, err := TensorBoardResources.PodRequests()
		if err != nil {
			return Vector{}, fmt.Errorf("spec.tensorboard: %w", err)
		}
		if err := d.addTimes(td, 1); err != nil {
			return Vector{}, fmt.Errorf("spec.tensorboard: %w", err)
		}
	}
	return d, nil
}

// PodRequests is what one pod with these resources requests, as
// Kubernetes will account for it: the request when set, else the limit
// (Kubernetes defaults a missing request to the limit), else the default
// request of the tenant's LimitRange (DefaultCPURequest,
// DefaultMemoryRequest), which the ResourceQuota charges like any other.
func (r Resources) PodRequests() (Vector, error) {
	var v Vector
	v[GPU], v[Pods] = int64(r.GPU), 1
	for _, q := range []struct {
		res                 Resource
		request, limit, def string
	}{
		{CPU, r.CPU, r.CPULimit, DefaultCPURequest},
		{Memory, r.Memory, r.MemoryLimit, DefaultMemoryRequest},
	} {
		parsed, err := resource.ParseQuantity(cmp.Or(q.request, q.limit, q.def))
		if err != nil {
			return Vector{}, fmt.Errorf("%s: %w", q.res.Name(), err)
		}
		if v[q.res], err = q.res.Amount(parsed); err != nil {
			return Vector{}, fmt.Errorf("%s: %w", q.res.Name(), err)
		}
	}
	return v, nil
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
func (d *Vector) addTimes(o Vector, n int64) error {
	for r := range d {
		hi, lo := bits.Mul64(uint64(o[r]), uint64(n))
		sum := d[r] + int64(lo)
		if o[r] < 0 || n < 0 || hi != 0 || lo > math.MaxInt64 || sum < d[r] {
			return fmt.Errorf("total resource requests are out of range")
		}
		d[r] = sum
	}
	return nil
}
