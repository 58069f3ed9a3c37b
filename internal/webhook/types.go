package webhook

import (
	"slices"
	"time"
)

// Topics a webhook subscribes to. The CloudEvent type is CloudEventType(topic).
const (
	TopicJobCreated          = "job.created"
	TopicJobAdmitted         = "job.admitted"
	TopicJobRunning          = "job.running"
	TopicJobSucceeded        = "job.succeeded"
	TopicJobFailed           = "job.failed"
	TopicJobCancelled        = "job.cancelled"
	TopicJobPreempted        = "job.preempted"
	TopicJobReplicaRestarted = "job.replica_restarted"
	TopicTenantQuotaChanged  = "tenant.quota_changed"
	// TopicJobIdleGPUs: the job's IdleGPUs condition became true
	// (internal/gpuutil; the event's reason is IdleGPUs, migration 000017).
	TopicJobIdleGPUs = "job.idle_gpus"
	// TopicPing is a test message sent by hand; no webhook subscribes to it.
	TopicPing = "webhook.ping"
)

// Topics lists every topic a webhook may subscribe to, in the API's order.
var Topics = []string{
	TopicJobCreated, TopicJobAdmitted, TopicJobRunning, TopicJobSucceeded, TopicJobFailed,
	TopicJobCancelled, TopicJobPreempted, TopicJobReplicaRestarted, TopicTenantQuotaChanged,
	TopicJobIdleGPUs,
}

// KnownTopic says whether t is one of Topics.
func KnownTopic(t string) bool { return slices.Contains(Topics, t) }

// CloudEventType is a topic's CloudEvent type: dev.trainyard.job.succeeded.
func CloudEventType(topic string) string { return "dev.trainyard." + topic }

// State of a webhook.
type State string

const (
	// Active webhooks get messages.
	Active State = "ACTIVE"
	// Disabled webhooks get none (a receiver answered 410 Gone, or an
	// admin disabled it); their pending messages wait.
	Disabled State = "DISABLED"
)

// Webhook is a tenant's subscription. Its signing secret is not here: it
// is write-only and kept in Kubernetes (SecretName).
type Webhook struct {
	Tenant        string
	ID            string
	URL           string
	EventTypes    []string
	LabelSelector map[string]string
	Description   string
	State         State
	StateReason   string
	// SecretVersion changes whenever the signing secret is replaced.
	SecretVersion int64
	CreateTime    time.Time
	UpdateTime    time.Time
}

// SecretName is the Kubernetes Secret, in the tenant's namespace, holding
// webhook id's signing secret under SecretKey. Tenant secret ids may not
// take its prefix (tenant.ValidateSecretID).
func SecretName(id string) string { return SecretPrefix + id }

// SecretPrefix starts every webhook signing secret's Kubernetes name.
const SecretPrefix = "trainyard-webhook-"

// SecretKey is the key of the signing secret in its Kubernetes Secret.
const SecretKey = "signing-secret"

// DeliveryState of one message to one webhook.
type DeliveryState string

const (
	Pending   DeliveryState = "PENDING"
	Succeeded DeliveryState = "SUCCEEDED"
	// Failed: given up after MaxAge of failed attempts.
	Failed DeliveryState = "FAILED"
)

// Delivery is one message to one webhook and how its sending went.
type Delivery struct {
	ID              int64
	Tenant          string
	Webhook         string
	MessageID       string
	Topic           string
	Subject         string
	EventTime       time.Time
	State           DeliveryState
	Attempts        int32
	NextAttemptTime time.Time
	LastAttemptTime *time.Time
	LastStatusCode  int32
	LastError       string
	LastLatency     time.Duration
	CreateTime      time.Time
}
