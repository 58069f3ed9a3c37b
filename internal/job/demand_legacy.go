package job

// Demand is the old admission's view of a Vector, kept only until the
// scheduler (internal/sched) replaces store.JobAdmitWait.
//
// Deprecated: use Vector.
type Demand struct {
	GPU         int64 `json:"gpu"`
	CPUMilli    int64 `json:"cpuMilli"`
	MemoryBytes int64 `json:"memoryBytes"`
	Pods        int64 `json:"pods"`
}

// DemandOf converts a Vector.
//
// Deprecated: use Vector.
func DemandOf(v Vector) Demand {
	return Demand{GPU: v[GPU], CPUMilli: v[CPU], MemoryBytes: v[Memory], Pods: v[Pods]}
}
