// The REST API's JSON (protojson of proto/trainyard/v1: lowerCamelCase
// names, enums by full name, int64 as strings, unset fields left out), for
// the fields the console reads. The proto is the source of truth; buf's
// WIRE_JSON breaking check keeps these names stable.

export type JobState =
  | "JOB_STATE_UNSPECIFIED"
  | "JOB_STATE_QUEUED"
  | "JOB_STATE_STARTING"
  | "JOB_STATE_RUNNING"
  | "JOB_STATE_RESTARTING"
  | "JOB_STATE_SUCCEEDED"
  | "JOB_STATE_FAILED"
  | "JOB_STATE_CANCELLED";

export type ReplicaType =
  | "REPLICA_TYPE_CHIEF"
  | "REPLICA_TYPE_WORKER"
  | "REPLICA_TYPE_PS"
  | "REPLICA_TYPE_EVALUATOR";

export interface Resources {
  cpu?: string;
  memory?: string;
  gpu?: number;
}

export interface ReplicaSpec {
  type?: ReplicaType;
  count?: number;
  image?: string;
  command?: string[];
  args?: string[];
  resources?: Resources;
}

export interface JobSpec {
  replicas?: ReplicaSpec[];
  priority?: number;
  tensorboard?: { enabled?: boolean; image?: string; logDir?: string };
  [other: string]: unknown;
}

export interface Condition {
  type?: string;
  status?: boolean;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface ReplicaCounts {
  type?: ReplicaType;
  pending?: number;
  active?: number;
  succeeded?: number;
  failed?: number;
}

export interface Termination {
  exitCode?: number;
  reason?: string;
  message?: string;
  logTail?: string;
  finishTime?: string;
}

export interface ReplicaStatus {
  type?: ReplicaType;
  index?: number;
  pod?: string;
  node?: string;
  state?: string;
  restarts?: number;
  lastTermination?: Termination;
  tfConfig?: string;
}

export interface QueueStatus {
  reason?: string;
  message?: string;
  tenantPosition?: number;
  clusterPosition?: number;
  blockedBy?: string;
  waitingFor?: string[];
  estimatedStartTime?: string;
  estimateBasis?: string;
}

export interface JobStatus {
  state?: JobState;
  reason?: string;
  message?: string;
  conditions?: Condition[];
  startTime?: string;
  completionTime?: string;
  replicaCounts?: ReplicaCounts[];
  replicas?: ReplicaStatus[];
  restarts?: number;
  cancelRequested?: boolean;
  queue?: QueueStatus;
  requeues?: number;
}

export interface Job {
  name: string;
  uid?: string;
  displayName?: string;
  labels?: Record<string, string>;
  spec?: JobSpec;
  status?: JobStatus;
  createTime?: string;
  updateTime?: string;
  creator?: string;
}

export interface JobEvent {
  id: string;
  job?: string;
  type?: string;
  reason?: string;
  message?: string;
  state?: JobState;
  createTime?: string;
}

export interface WatchJobResponse {
  event?: JobEvent;
  job?: Job;
}

export interface Quota {
  gpu?: number;
  cpu?: string;
  memory?: string;
  pods?: number;
}

export interface Member {
  subject?: string;
  group?: string;
  role?: string;
}

export interface Tenant {
  name: string;
  displayName?: string;
  labels?: Record<string, string>;
  quota?: Quota;
  usage?: Quota;
  members?: Member[];
  podReaderGroups?: string[];
  namespace?: string;
  state?: string;
  createTime?: string;
  scheduling?: { preemptionPolicy?: string; queueingStrategy?: string };
}

export interface Secret {
  name: string;
  keys?: string[];
  createTime?: string;
  updateTime?: string;
}

// A google.rpc.BadRequest field violation, as the gateway returns it in
// an error's details.
export interface FieldViolation {
  field: string;
  description: string;
}
