package job

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Kubernetes names derived from a job. They are deterministic so that a
// create repeated after a crash is an AlreadyExists to adopt, never a second
// pod. Every one of them must be a DNS-1123 label (≤ 63 characters); the job
// id is checked against the longest of them at submit time (ValidNames).

// MaxNameLength is the longest Kubernetes object name (and pod hostname)
// Trainyard derives from a job id: a DNS-1123 label.
const MaxNameLength = validation.DNS1123LabelMaxLength

// jobIDPrefix starts every generated job id, so it is a DNS-1035 label
// (starts with a letter) whatever the random part.
const jobIDPrefix = "job-"

// jobIDRandomChars is the length of the random part of a generated id:
// 10 base32 characters, 50 bits.
const jobIDRandomChars = 10

// PodName is the name (and hostname) of a replica's pod: <job>-<type>-<index>.
func PodName(job string, t ReplicaType, index int32) string {
	return job + "-" + ReplicaName(t, index)
}

// ReplicaService names the headless Service every replica pod of a tenant
// namespace is under (the pods' subdomain): one per namespace, kept there
// by the tenant controller with the namespace's other objects, not one per
// job. A replica's DNS name is <pod>.replicas.<namespace>.svc; the worker
// writes each distributed job's EndpointSlice of it, named after the job
// (kube.RenderEndpointSlice says why one Service and not one per job).
const ReplicaService = "replicas"

// TensorBoardName names the TensorBoard pod and its Service.
func TensorBoardName(job string) string { return job + tensorBoardSuffix }

const tensorBoardSuffix = "-tensorboard"

// ReservedJobID reports whether id ends in "-tensorboard", the suffix job
// <x> names its TensorBoard pod and Service with. Since the replicas' Service
// is the namespace's (ReplicaService) no derived name collides any more
// (job <x>-tensorboard's EndpointSlice shares the name of <x>'s TensorBoard
// Service, but they are different kinds, and a replica pod's name ends in
// -<type>-<index>); the rule stays because ids were refused by it before,
// and so that <x>-tensorboard in kubectl's output is always x's TensorBoard.
func ReservedJobID(id string) error {
	if base, ok := strings.CutSuffix(id, tensorBoardSuffix); ok {
		return fmt.Errorf("%q ends in %q, which is how job %q names its TensorBoard; choose another id", id, tensorBoardSuffix, base)
	}
	return nil
}

// ReplicaName is how users name a replica, e.g. in the logs API: <type>-<index>.
func ReplicaName(t ReplicaType, index int32) string {
	return string(t) + "-" + strconv.FormatInt(int64(index), 10)
}

// ParseReplicaName is the inverse of ReplicaName. It accepts only the
// canonical form: a known type, a dash, a decimal index without sign or
// leading zeros.
func ParseReplicaName(s string) (ReplicaType, int32, error) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return "", 0, fmt.Errorf("replica %q: want <type>-<index>, e.g. worker-0", s)
	}
	t, num := ReplicaType(s[:i]), s[i+1:]
	if !t.Valid() {
		return "", 0, fmt.Errorf("replica %q: unknown type %q (want chief, worker, ps or evaluator)", s, t)
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != num {
		return "", 0, fmt.Errorf("replica %q: index %q is not a non-negative decimal number", s, num)
	}
	return t, int32(n), nil
}

// Valid reports whether t is one of the four replica types.
func (t ReplicaType) Valid() bool {
	switch t {
	case Chief, Worker, PS, Evaluator:
		return true
	}
	return false
}

// NewJobID returns a fresh job id: "job-" and 10 random lowercase base32
// characters (a-z, 2-7). It is a DNS-1035 label short enough (14 characters)
// that every name derived from it fits whatever the spec.
func NewJobID() string {
	// rand.Text is 26 characters of the standard base32 alphabet; 10 of them
	// carry 50 random bits, plenty for ids that are unique per tenant and
	// checked on insert anyway.
	return jobIDPrefix + strings.ToLower(rand.Text()[:jobIDRandomChars])
}

// ValidJobID reports whether id can name a job at all: a DNS-1035 label
// (lowercase letters, digits and '-', starting with a letter, at most 63
// characters). Whether the pod names of a particular job fit is ValidNames.
func ValidJobID(id string) error {
	if id == "" {
		return fmt.Errorf("required")
	}
	if msgs := validation.IsDNS1035Label(id); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid job id: %s", id, strings.Join(msgs, "; "))
	}
	return nil
}

// ValidNames reports whether every Kubernetes name derived from id for this
// spec fits in a DNS-1123 label: the pod of the highest index of each type
// (<job>-<type>-<count-1>) and, with TensorBoard, <job>-tensorboard. It
// assumes ValidJobID(id) holds; counts outside 1..MaxReplicaCount are
// clamped (they are reported by Validate on their own).
func ValidNames(id string, spec Spec) error {
	longest := id // the job's EndpointSlice
	for _, r := range spec.Replicas {
		if !r.Type.Valid() {
			continue
		}
		name := PodName(id, r.Type, min(max(r.Count, 1), MaxReplicaCount)-1)
		if len(name) > len(longest) {
			longest = name
		}
	}
	if spec.TensorBoard != nil && len(TensorBoardName(id)) > len(longest) {
		longest = TensorBoardName(id)
	}
	if len(longest) > MaxNameLength {
		return fmt.Errorf("job id %q is too long for this job: its name %q would be %d characters, Kubernetes allows %d (shorten the id by %d)",
			id, longest, len(longest), MaxNameLength, len(longest)-MaxNameLength)
	}
	return nil
}
