package job

import (
	"math"
	"slices"
	"time"
)

// GPU utilisation as the NVIDIA DCGM exporter measures it
// (DCGM_FI_DEV_GPU_UTIL, an integer percent; DCGM_FI_DEV_FB_USED, MiB),
// summed over a replica's samples (internal/gpuutil reads them from
// Prometheus; the store keeps the sums). Sums, not averages, so that the
// figures of successive windows add up exactly.

// CondIdleGPUs is true while every GPU of a running job has stayed below
// its tenant's idle threshold for the tenant's idle time
// (internal/gpuutil).
const CondIdleGPUs = "IdleGPUs"

// Reasons of the IdleGPUs condition and its events. ReasonIdleGPUs is a
// webhook topic (job.idle_gpus, migration 000017).
const (
	ReasonIdleGPUs   = "IdleGPUs"
	ReasonGPUsActive = "GPUsActive"
	// ReasonIdleGPUsStopped: the job was cancelled for its idle GPUs
	// (tenant.Scheduling.IdleGPUStopSeconds).
	ReasonIdleGPUsStopped = "IdleGPUsStopped"
)

// UtilBuckets is the histogram's size: one bucket per whole percent, 0..100.
const UtilBuckets = 101

// GPUFigures sums the DCGM samples of one replica (or, merged, a job).
type GPUFigures struct {
	// Replica is the replica's name (worker-0); empty for a job's sum.
	Replica string
	// GPUs are the UUIDs of the GPUs seen, sorted.
	GPUs []string
	// Samples and UtilSum: GPU utilisation samples (one per GPU per
	// scrape) and the sum of their values, in percent.
	Samples int64
	UtilSum float64
	// UtilHist counts the samples per whole percent (rounded, 0..100).
	UtilHist [UtilBuckets]int64
	// FBSamples, FBSum and FBMax: framebuffer memory used, MiB.
	FBSamples int64
	FBSum     float64
	FBMax     float64
	// FirstSample and LastSample bound the samples' times; LastBusy is the
	// last sample at or above the idle threshold in force when it was read
	// (zero: none).
	FirstSample, LastSample, LastBusy time.Time
}

// AddUtil counts one utilisation sample (percent) taken at t; busy says
// it is at or above the idle threshold.
func (f *GPUFigures) AddUtil(v float64, t time.Time, busy bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	f.Samples++
	f.UtilSum += v
	f.UtilHist[int(math.Round(min(max(v, 0), 100)))]++
	f.seen(t)
	if busy && t.After(f.LastBusy) {
		f.LastBusy = t
	}
}

// AddFB counts one framebuffer sample (MiB) taken at t.
func (f *GPUFigures) AddFB(v float64, t time.Time) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	f.FBSamples++
	f.FBSum += v
	f.FBMax = max(f.FBMax, v)
	f.seen(t)
}

// AddGPU notes a GPU's UUID.
func (f *GPUFigures) AddGPU(uuid string) {
	if uuid == "" {
		return
	}
	if i, found := slices.BinarySearch(f.GPUs, uuid); !found {
		f.GPUs = slices.Insert(f.GPUs, i, uuid)
	}
}

func (f *GPUFigures) seen(t time.Time) {
	if f.FirstSample.IsZero() || t.Before(f.FirstSample) {
		f.FirstSample = t
	}
	if t.After(f.LastSample) {
		f.LastSample = t
	}
}

// Merge adds o's samples to f (Replica stays f's).
func (f *GPUFigures) Merge(o GPUFigures) {
	for _, g := range o.GPUs {
		f.AddGPU(g)
	}
	f.Samples += o.Samples
	f.UtilSum += o.UtilSum
	for i, n := range o.UtilHist {
		f.UtilHist[i] += n
	}
	f.FBSamples += o.FBSamples
	f.FBSum += o.FBSum
	f.FBMax = max(f.FBMax, o.FBMax)
	if !o.FirstSample.IsZero() {
		f.seen(o.FirstSample)
	}
	if !o.LastSample.IsZero() {
		f.seen(o.LastSample)
	}
	if o.LastBusy.After(f.LastBusy) {
		f.LastBusy = o.LastBusy
	}
}

// MeanUtil is the mean utilisation in percent (0 without samples).
func (f GPUFigures) MeanUtil() float64 {
	if f.Samples == 0 {
		return 0
	}
	return f.UtilSum / float64(f.Samples)
}

// P95Util is the 95th percentile of the utilisation samples, in whole
// percent (nearest rank; 0 without samples).
func (f GPUFigures) P95Util() float64 {
	if f.Samples == 0 {
		return 0
	}
	rank := int64(math.Ceil(0.95 * float64(f.Samples)))
	var seen int64
	for i, n := range f.UtilHist {
		seen += n
		if seen >= rank {
			return float64(i)
		}
	}
	return 100
}

// MeanFB is the mean framebuffer memory used per GPU, MiB.
func (f GPUFigures) MeanFB() float64 {
	if f.FBSamples == 0 {
		return 0
	}
	return f.FBSum / float64(f.FBSamples)
}

// SumGPUFigures merges replicas' figures into the job's.
func SumGPUFigures(replicas []GPUFigures) GPUFigures {
	var out GPUFigures
	for _, r := range replicas {
		out.Merge(r)
	}
	return out
}
