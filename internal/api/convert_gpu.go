package api

import (
	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// withGPUUtilization sets the job's and each replica's measured GPU
// utilisation (GetJob only: one more query). A replica with figures but
// no status entry (its status was rewritten since) counts in the job's.
func withGPUUtilization(out *pb.Job, figs []job.GPUFigures) {
	if len(figs) == 0 || out.GetStatus() == nil {
		return
	}
	byName := map[string]job.GPUFigures{}
	for _, f := range figs {
		byName[f.Replica] = f
	}
	for _, r := range out.GetStatus().GetReplicas() {
		if f, ok := byName[job.ReplicaName(replicaTypeFromPB[r.GetType()], r.GetIndex())]; ok {
			r.GpuUtilization = gpuToPB(f)
		}
	}
	out.Status.GpuUtilization = gpuToPB(job.SumGPUFigures(figs))
}

func gpuToPB(f job.GPUFigures) *pb.GPUUtilization {
	out := &pb.GPUUtilization{
		MeanPercent:   f.MeanUtil(),
		P95Percent:    f.P95Util(),
		MeanMemoryMib: f.MeanFB(),
		MaxMemoryMib:  f.FBMax,
		Gpus:          int32(len(f.GPUs)),
		Samples:       f.Samples,
	}
	if !f.FirstSample.IsZero() {
		out.FirstSampleTime = ts(f.FirstSample)
		out.LastSampleTime = ts(f.LastSample)
	}
	if !f.LastBusy.IsZero() {
		out.LastBusyTime = ts(f.LastBusy)
	}
	return out
}
