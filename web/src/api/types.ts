// The REST API's JSON (protojson of proto/trainyard/v1: lowerCamelCase
// names, enums by full name, int64 as strings, unset fields left out), by
// the names the console uses. Every type is generated (openapi.gen.ts, from
// the OpenAPI document that proto/ generates; make generate), so a change to
// the proto reaches the console's type check. The only additions here are
// what the document cannot say: the fields the server always sets.

import type { components } from "./openapi.gen";

type Schemas = components["schemas"];

// Fields every object the server returns carries, though the document,
// shared by requests that leave them out, marks them optional.
type Always<T, K extends keyof T> = T & { [P in K]-?: NonNullable<T[P]> };

export type JobState = Schemas["v1JobState"];
export type ReplicaType = Schemas["v1ReplicaType"];
export type Resources = Schemas["v1Resources"];
export type ReplicaSpec = Schemas["v1ReplicaSpec"];
export type JobSpec = Schemas["v1JobSpec"];
export type Condition = Schemas["v1Condition"];
export type ReplicaCounts = Schemas["v1ReplicaCounts"];
export type Termination = Schemas["v1Termination"];
export type ReplicaStatus = Schemas["v1ReplicaStatus"];
export type QueueStatus = Schemas["v1QueueStatus"];
export type JobStatus = Schemas["v1JobStatus"];
export type Job = Always<Schemas["v1Job"], "name">;
export type JobEvent = Always<Schemas["v1JobEvent"], "id">;
export type WatchJobResponse = Omit<Schemas["v1WatchJobResponse"], "event" | "job"> & { event?: JobEvent; job?: Job };
export type Quota = Schemas["v1Quota"];
export type Member = Schemas["v1Member"];
export type Tenant = Always<Schemas["v1Tenant"], "name">;
export type Budget = Schemas["v1Budget"];
export type UsageRow = Schemas["v1UsageRow"];
export type QueryUsageResponse = Schemas["v1QueryUsageResponse"];
export type QueueHistoryRow = Schemas["v1QueueHistoryRow"];
export type CapacityPoint = Schemas["v1CapacityPoint"];
export type QueryQueueHistoryResponse = Schemas["v1QueryQueueHistoryResponse"];
export type UtilizationSeries = Schemas["v1UtilizationSeries"];
export type QueryJobUtilizationResponse = Schemas["v1QueryJobUtilizationResponse"];
export type GPUUtilization = Schemas["v1GPUUtilization"];
export type Secret = Always<Schemas["v1Secret"], "name">;
export type Cohort = Always<Schemas["v1Cohort"], "name">;
export type WebhookEventType = Schemas["v1WebhookEventType"];
export type Webhook = Always<Schemas["v1Webhook"], "name">;
export type WebhookDelivery = Always<Schemas["v1WebhookDelivery"], "name">;
export type Experiment = Always<Schemas["v1Experiment"], "name">;
export type ExperimentSpec = Schemas["v1ExperimentSpec"];
export type Trial = Always<Schemas["v1Trial"], "name">;
export type MetricSeries = Schemas["v1MetricSeries"];

// A google.rpc.BadRequest field violation, as the gateway returns it in an
// error's details (a google.protobuf.Any, which the document leaves open).
export interface FieldViolation {
  field: string;
  description: string;
}
