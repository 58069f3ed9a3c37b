package api

import (
	"context"
	"time"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"

	"github.com/trainyard/trainyard/internal/job"
)

// The queue fields of a job's status come from the scheduler's last
// published view of the job's tenant (store.QueueGet: one row per
// tenant), read only when a job in the answer is QUEUED. A job submitted
// after that view has none yet; its Admitted condition says it waits.

var waitReasonToPB = map[job.WaitReason]pb.WaitReason{
	job.WaitQuota:         pb.WaitReason_WAIT_REASON_QUOTA,
	job.WaitCapacity:      pb.WaitReason_WAIT_REASON_CAPACITY,
	job.WaitPriority:      pb.WaitReason_WAIT_REASON_PRIORITY,
	job.WaitOrder:         pb.WaitReason_WAIT_REASON_ORDER,
	job.WaitPreempted:     pb.WaitReason_WAIT_REASON_PREEMPTED,
	job.WaitUnschedulable: pb.WaitReason_WAIT_REASON_UNSCHEDULABLE,
	job.WaitBudget:        pb.WaitReason_WAIT_REASON_BUDGET,
	job.WaitDependency:    pb.WaitReason_WAIT_REASON_DEPENDENCY,
}

var etaBasisToPB = map[job.ETABasis]pb.EstimateBasis{
	job.ETARunTimes:   pb.EstimateBasis_ESTIMATE_BASIS_RUN_TIMES,
	job.ETADeadlines:  pb.EstimateBasis_ESTIMATE_BASIS_DEADLINES,
	job.ETABackoff:    pb.EstimateBasis_ESTIMATE_BASIS_BACKOFF,
	job.ETAPreemption: pb.EstimateBasis_ESTIMATE_BASIS_PREEMPTION,
	job.ETAAvailable:  pb.EstimateBasis_ESTIMATE_BASIS_AVAILABLE,
}

func queueToPB(q job.QueueInfo, at time.Time) *pb.QueueStatus {
	return &pb.QueueStatus{
		Reason:             waitReasonToPB[q.Reason],
		Message:            q.Message,
		TenantPosition:     int32(q.TenantPosition),
		ClusterPosition:    int32(q.ClusterPosition),
		BlockedBy:          q.BlockedBy,
		WaitingFor:         q.WaitingFor,
		EstimatedStartTime: tsp(q.EstimatedStart),
		EstimateBasis:      etaBasisToPB[q.EstimateBasis],
		UpdateTime:         ts(at),
	}
}

// withQueue fills in the queue status of the tenant's QUEUED jobs among
// jobs, with one read of the tenant's queue view when any is QUEUED.
func (d *deps) withQueue(ctx context.Context, tenantID string, jobs ...*pb.Job) error {
	queued := false
	for _, j := range jobs {
		if j.GetStatus().GetState() == pb.JobState_JOB_STATE_QUEUED {
			queued = true
			break
		}
	}
	if !queued {
		return nil
	}
	entries, at, err := d.store.QueueGet(ctx, tenantID)
	if err != nil {
		return err
	}
	applyQueue(entries, at, jobs...)
	return nil
}

// applyQueue sets the queue status of the QUEUED jobs among jobs from
// entries, the tenant's queue view published at at.
func applyQueue(entries map[string]job.QueueInfo, at time.Time, jobs ...*pb.Job) {
	for _, j := range jobs {
		if q, ok := entries[j.GetUid()]; ok && j.GetStatus().GetState() == pb.JobState_JOB_STATE_QUEUED {
			j.Status.Queue = queueToPB(q, at)
		}
	}
}
