// Package webhook is the domain of Trainyard's outgoing webhooks: what a
// tenant subscribes to, how a message is enveloped (CloudEvents 1.0,
// structured JSON) and signed (Standard Webhooks), where it may be sent
// (Policy), and when a failed one is tried again (Backoff). It does no
// database I/O; internal/store keeps webhooks and their outbox, and
// internal/webhook/deliver sends what the outbox holds.
//
//	job event written ──(same transaction: the job_events trigger)──► outbox row per matching webhook
//	                                                                       │ deliver.Deliverer: claim (lease, SKIP LOCKED),
//	                                                                       ▼ one at a time per (webhook, job)
//	                                                   POST CloudEvent, webhook-id/-timestamp/-signature
//	                                                                       │
//	                     2xx: SUCCEEDED · 410: webhook DISABLED · else: retry with Backoff up to 24 h, then FAILED
//
// A message's id is the event's id: the CloudEvent's id and the
// webhook-id header are the same on every attempt and on a redelivery by
// hand, so a receiver de-duplicates on it. Delivery is at least once.
//
// Signing follows the Standard Webhooks specification: the secret is
// "whsec_" and the base64 of 24 to 64 random bytes; the signature is
// "v1," + base64(HMAC-SHA256(secret, id + "." + timestamp + "." + body)).
// The secret is write-only: it lives in a Kubernetes Secret in the
// tenant's namespace (SecretName), never in Postgres, a response or a log.
//
// Outbound safety (Policy): by default a webhook may reach only public
// addresses — no loopback, private, link-local, unique-local, multicast
// or unspecified one. --webhook-allow lists CIDRs (allowed even when
// private) and host names (then only they, and addresses in the CIDRs,
// may be reached). The API checks a URL when a webhook is created or
// changed (resolving its host); the deliverer checks again at every
// connection, on the address it dials, so a DNS change cannot turn a
// webhook on an internal address. Redirects are not followed.
package webhook
