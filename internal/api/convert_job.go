package api

import (
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The API's wire types and the domain's types are converted here and only
// here, so the domain never depends on protobuf and the stored JSON never
// changes shape when the API grows.

var replicaTypeFromPB = map[pb.ReplicaType]job.ReplicaType{
	pb.ReplicaType_REPLICA_TYPE_CHIEF:     job.Chief,
	pb.ReplicaType_REPLICA_TYPE_WORKER:    job.Worker,
	pb.ReplicaType_REPLICA_TYPE_PS:        job.PS,
	pb.ReplicaType_REPLICA_TYPE_EVALUATOR: job.Evaluator,
}

var replicaTypeToPB = invert(replicaTypeFromPB)

var restartFromPB = map[pb.RestartPolicy]job.RestartPolicy{
	pb.RestartPolicy_RESTART_POLICY_NEVER:      job.RestartNever,
	pb.RestartPolicy_RESTART_POLICY_ON_FAILURE: job.RestartOnFailure,
	pb.RestartPolicy_RESTART_POLICY_EXIT_CODE:  job.RestartExitCode,
	pb.RestartPolicy_RESTART_POLICY_ALWAYS:     job.RestartAlways,
}

var cleanFromPB = map[pb.CleanPodPolicy]job.CleanPodPolicy{
	pb.CleanPodPolicy_CLEAN_POD_POLICY_NONE:    job.CleanNone,
	pb.CleanPodPolicy_CLEAN_POD_POLICY_RUNNING: job.CleanRunning,
	pb.CleanPodPolicy_CLEAN_POD_POLICY_ALL:     job.CleanAll,
}

var successFromPB = map[pb.SuccessPolicy]job.SuccessPolicy{
	pb.SuccessPolicy_SUCCESS_POLICY_CHIEF_OR_WORKER0: job.SuccessChiefOrWorker0,
	pb.SuccessPolicy_SUCCESS_POLICY_ALL_WORKERS:      job.SuccessAllWorkers,
}

var stateToPB = map[job.State]pb.JobState{
	job.Queued:     pb.JobState_JOB_STATE_QUEUED,
	job.Starting:   pb.JobState_JOB_STATE_STARTING,
	job.Running:    pb.JobState_JOB_STATE_RUNNING,
	job.Restarting: pb.JobState_JOB_STATE_RESTARTING,
	job.Succeeded:  pb.JobState_JOB_STATE_SUCCEEDED,
	job.Failed:     pb.JobState_JOB_STATE_FAILED,
	job.Cancelled:  pb.JobState_JOB_STATE_CANCELLED,
	job.Suspended:  pb.JobState_JOB_STATE_SUSPENDED,
}

var replicaStateToPB = map[job.ReplicaState]pb.ReplicaState{
	job.ReplicaPending:   pb.ReplicaState_REPLICA_STATE_PENDING,
	job.ReplicaRunning:   pb.ReplicaState_REPLICA_STATE_RUNNING,
	job.ReplicaSucceeded: pb.ReplicaState_REPLICA_STATE_SUCCEEDED,
	job.ReplicaFailed:    pb.ReplicaState_REPLICA_STATE_FAILED,
}

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// specFromPB converts the user's spec. Unknown enum values become "" so that
// validation reports them by field.
func specFromPB(s *pb.JobSpec) job.Spec {
	if s == nil {
		return job.Spec{}
	}
	out := job.Spec{
		SuccessPolicy: successFromPB[s.GetSuccessPolicy()],
		Priority:      s.GetPriority(),
	}
	if s.TerminationGracePeriodSeconds != nil {
		out.TerminationGracePeriodSeconds = new(s.GetTerminationGracePeriodSeconds())
	}
	if s.Preemptible != nil {
		out.Preemptible = new(s.GetPreemptible())
	}
	if len(s.GetClusterSelector()) > 0 {
		out.ClusterSelector = maps.Clone(s.GetClusterSelector())
	}
	out.Clusters = slices.Clone(s.GetClusters())
	for _, r := range s.GetReplicas() {
		out.Replicas = append(out.Replicas, replicaFromPB(r))
	}
	dependenciesFromPB(s, &out)
	rp := s.GetRunPolicy()
	out.RunPolicy = job.RunPolicy{
		BackoffLimit:   job.DefaultBackoffLimit,
		CleanPodPolicy: cleanFromPB[rp.GetCleanPodPolicy()],
	}
	if rp != nil && rp.BackoffLimit != nil {
		out.RunPolicy.BackoffLimit = rp.GetBackoffLimit()
	}
	if rp != nil && rp.ActiveDeadlineSeconds != nil {
		v := rp.GetActiveDeadlineSeconds()
		out.RunPolicy.ActiveDeadlineSeconds = &v
	}
	if rp != nil && rp.TtlSecondsAfterFinished != nil {
		v := rp.GetTtlSecondsAfterFinished()
		out.RunPolicy.TTLSecondsAfterFinished = &v
	}
	if c := s.GetCheckpoint(); c != nil {
		out.Checkpoint = &job.CheckpointVolume{ClaimName: c.GetClaimName(), MountPath: c.GetMountPath()}
	}
	if tb := s.GetTensorboard(); tb.GetEnabled() {
		out.TensorBoard = &job.TensorBoard{Image: tb.GetImage(), LogDir: tb.GetLogDir()}
	}
	return out
}

func replicaFromPB(r *pb.ReplicaSpec) job.ReplicaSpec {
	out := job.ReplicaSpec{
		Type:               replicaTypeFromPB[r.GetType()],
		Count:              r.GetCount(),
		Image:              r.GetImage(),
		Command:            r.GetCommand(),
		Args:               r.GetArgs(),
		WorkingDir:         r.GetWorkingDir(),
		NodeSelector:       r.GetNodeSelector(),
		PodLabels:          r.GetPodLabels(),
		PodAnnotations:     r.GetPodAnnotations(),
		Port:               r.GetPort(),
		RestartPolicy:      restartFromPB[r.GetRestartPolicy()],
		RetryableExitCodes: r.GetRetryableExitCodes(),
		Privileged:         r.GetPrivileged(),

		MountServiceAccountToken: r.GetMountServiceAccountToken(),
		LivenessProbe:            probeFromPB(r.GetLivenessProbe()),
		ReadinessProbe:           probeFromPB(r.GetReadinessProbe()),
		StartupProbe:             probeFromPB(r.GetStartupProbe()),
	}
	if r.GetRestartPolicy() == pb.RestartPolicy_RESTART_POLICY_UNSPECIFIED {
		out.RestartPolicy = job.RestartNever
	}
	if res := r.GetResources(); res != nil {
		out.Resources = job.Resources{
			CPU: res.GetCpu(), Memory: res.GetMemory(), GPU: res.GetGpu(),
			CPULimit: res.GetCpuLimit(), MemoryLimit: res.GetMemoryLimit(),
		}
	}
	for _, e := range r.GetEnv() {
		v := job.EnvVar{Name: e.GetName(), Value: e.GetValue()}
		if s := e.GetSecret(); s != nil {
			v.Secret = &job.SecretKeyRef{Secret: s.GetSecret(), Key: s.GetKey()}
		}
		out.Env = append(out.Env, v)
	}
	for _, t := range r.GetTolerations() {
		tol := job.Toleration{Key: t.GetKey(), Operator: t.GetOperator(), Value: t.GetValue(), Effect: t.GetEffect()}
		if t.GetTolerationSeconds() != 0 {
			v := t.GetTolerationSeconds()
			tol.TolerationSeconds = &v
		}
		out.Tolerations = append(out.Tolerations, tol)
	}
	if a := r.GetAffinity(); a != nil {
		aff := &job.Affinity{}
		for _, t := range a.GetRequired() {
			aff.Required = append(aff.Required, termFromPB(t))
		}
		for _, p := range a.GetPreferred() {
			aff.Preferred = append(aff.Preferred, job.PreferredTerm{Weight: p.GetWeight(), Preference: termFromPB(p.GetPreference())})
		}
		out.Affinity = aff
	}
	for _, v := range r.GetSecretVolumes() {
		out.SecretVolumes = append(out.SecretVolumes, job.SecretVolume{Secret: v.GetSecret(), MountPath: v.GetMountPath()})
	}
	return out
}

func termFromPB(t *pb.NodeSelectorTerm) job.NodeSelectorTerm {
	var out job.NodeSelectorTerm
	for _, e := range t.GetMatchExpressions() {
		out.MatchExpressions = append(out.MatchExpressions, job.NodeSelectorRequirement{
			Key: e.GetKey(), Operator: e.GetOperator(), Values: e.GetValues(),
		})
	}
	return out
}

func jobToPB(j job.Job) *pb.Job {
	return &pb.Job{
		Name:        jobName(j.Tenant, j.Name),
		Uid:         j.UID,
		DisplayName: j.DisplayName,
		Labels:      j.Labels,
		Spec:        specToPB(j.Spec),
		Status:      statusToPB(j.Status),
		CreateTime:  ts(j.CreateTime),
		UpdateTime:  ts(j.UpdateTime),
		Creator:     j.Creator,
	}
}

// jobSummaryToPB is the job as lists and watches return it: without the
// replicas' log tails (up to a few KiB each), which only GetJob and
// GetJobLogs return. A page of a thousand jobs, or a watch that sends the
// job with every event, would otherwise carry megabytes of logs nobody
// asked for.
// withTFConfig sets each replica's TF_CONFIG, as the worker renders it
// (job.TFConfig) for the job's pods in namespace. GetJob only: it grows
// with the square of the job's size.
func withTFConfig(out *pb.Job, j job.Job, namespace string) {
	for _, r := range out.GetStatus().GetReplicas() {
		r.TfConfig, _ = job.TFConfig(j.Name, namespace, j.Spec, replicaTypeFromPB[r.GetType()], r.GetIndex())
	}
}

func jobSummaryToPB(j job.Job) *pb.Job {
	out := jobToPB(j)
	for _, r := range out.GetStatus().GetReplicas() {
		if t := r.GetLastTermination(); t != nil {
			t.LogTail = ""
		}
	}
	return out
}

func specToPB(s job.Spec) *pb.JobSpec {
	out := &pb.JobSpec{
		SuccessPolicy:                 invert(successFromPB)[s.SuccessPolicy],
		Priority:                      s.Priority,
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		Preemptible:                   s.Preemptible,
		ClusterSelector:               maps.Clone(s.ClusterSelector),
		Clusters:                      slices.Clone(s.Clusters),
		RunPolicy: &pb.RunPolicy{
			BackoffLimit:            &s.RunPolicy.BackoffLimit,
			ActiveDeadlineSeconds:   s.RunPolicy.ActiveDeadlineSeconds,
			TtlSecondsAfterFinished: s.RunPolicy.TTLSecondsAfterFinished,
			CleanPodPolicy:          invert(cleanFromPB)[s.RunPolicy.CleanPodPolicy],
		},
	}
	for _, r := range s.Replicas {
		out.Replicas = append(out.Replicas, replicaToPB(r))
	}
	dependenciesToPB(s, out)
	if c := s.Checkpoint; c != nil {
		out.Checkpoint = &pb.CheckpointVolume{ClaimName: c.ClaimName, MountPath: c.MountPath}
	}
	if tb := s.TensorBoard; tb != nil {
		out.Tensorboard = &pb.TensorBoard{Enabled: true, Image: tb.Image, LogDir: tb.LogDir}
	}
	return out
}

func replicaToPB(r job.ReplicaSpec) *pb.ReplicaSpec {
	out := &pb.ReplicaSpec{
		Type:               replicaTypeToPB[r.Type],
		Count:              r.Count,
		Image:              r.Image,
		Command:            r.Command,
		Args:               r.Args,
		WorkingDir:         r.WorkingDir,
		NodeSelector:       r.NodeSelector,
		PodLabels:          r.PodLabels,
		PodAnnotations:     r.PodAnnotations,
		Port:               r.Port,
		RestartPolicy:      invert(restartFromPB)[r.RestartPolicy],
		RetryableExitCodes: r.RetryableExitCodes,
		Privileged:         r.Privileged,

		MountServiceAccountToken: r.MountServiceAccountToken,
		LivenessProbe:            probeToPB(r.LivenessProbe),
		ReadinessProbe:           probeToPB(r.ReadinessProbe),
		StartupProbe:             probeToPB(r.StartupProbe),
		Resources: &pb.Resources{
			Cpu: r.Resources.CPU, Memory: r.Resources.Memory, Gpu: r.Resources.GPU,
			CpuLimit: r.Resources.CPULimit, MemoryLimit: r.Resources.MemoryLimit,
		},
	}
	for _, e := range r.Env {
		v := &pb.EnvVar{Name: e.Name}
		if e.Secret != nil {
			v.Source = &pb.EnvVar_Secret{Secret: &pb.SecretKeyRef{Secret: e.Secret.Secret, Key: e.Secret.Key}}
		} else {
			v.Source = &pb.EnvVar_Value{Value: e.Value}
		}
		out.Env = append(out.Env, v)
	}
	for _, t := range r.Tolerations {
		tol := &pb.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		if t.TolerationSeconds != nil {
			tol.TolerationSeconds = *t.TolerationSeconds
		}
		out.Tolerations = append(out.Tolerations, tol)
	}
	if a := r.Affinity; a != nil {
		aff := &pb.Affinity{}
		for _, t := range a.Required {
			aff.Required = append(aff.Required, termToPB(t))
		}
		for _, p := range a.Preferred {
			aff.Preferred = append(aff.Preferred, &pb.PreferredTerm{Weight: p.Weight, Preference: termToPB(p.Preference)})
		}
		out.Affinity = aff
	}
	for _, v := range r.SecretVolumes {
		out.SecretVolumes = append(out.SecretVolumes, &pb.SecretVolume{Secret: v.Secret, MountPath: v.MountPath})
	}
	return out
}

func termToPB(t job.NodeSelectorTerm) *pb.NodeSelectorTerm {
	out := &pb.NodeSelectorTerm{}
	for _, e := range t.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, &pb.NodeSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
	}
	return out
}

func statusToPB(s job.Status) *pb.JobStatus {
	out := &pb.JobStatus{
		State:            stateToPB[s.State],
		Reason:           s.Reason,
		Message:          s.Message,
		StartTime:        tsp(s.StartTime),
		CompletionTime:   tsp(s.CompletionTime),
		Restarts:         s.Restarts,
		CancelRequested:  s.CancelRequested,
		SuspendRequested: s.SuspendRequested,
		Requeues:         s.Requeues,
		GpuType:          s.GPUType,
		Cluster:          s.Cluster,
	}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, &pb.Condition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: ts(c.LastTransitionTime),
		})
	}
	for _, c := range s.ReplicaCounts {
		out.ReplicaCounts = append(out.ReplicaCounts, &pb.ReplicaCounts{
			Type: replicaTypeToPB[c.Type], Pending: c.Pending, Active: c.Active, Succeeded: c.Succeeded, Failed: c.Failed,
		})
	}
	for _, r := range s.Replicas {
		rs := &pb.ReplicaStatus{
			Type: replicaTypeToPB[r.Type], Index: r.Index, Pod: r.Pod, Node: r.Node,
			State: replicaStateToPB[r.State], Restarts: r.Restarts,
		}
		if t := r.LastTermination; t != nil {
			rs.LastTermination = &pb.Termination{
				ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message, LogTail: t.LogTail,
				FinishTime: ts(t.FinishTime),
			}
		}
		out.Replicas = append(out.Replicas, rs)
	}
	dependencyResultsToPB(s, out)
	return out
}

func eventToPB(e job.Event) *pb.JobEvent {
	return &pb.JobEvent{
		Id:         e.ID,
		Job:        jobName(e.Tenant, e.Job),
		Type:       e.Type,
		Reason:     e.Reason,
		Message:    e.Message,
		State:      stateToPB[e.State],
		CreateTime: ts(e.CreateTime),
	}
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tsp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return ts(*t)
}
