// Package server runs Trainyard's API. It serves the gRPC services on one
// port, and REST, health, metrics, the OpenAPI document and the web console
// on another. Every call, from either port, passes one interceptor chain
// and reaches the same service implementations.
//
//	gRPC clients (tyctl, Python)          HTTP clients (curl, the console)
//	         │ GRPCAddr                               │ HTTPAddr
//	         ▼                                        ▼
//	┌─────────────────┐                    ┌──────────────────────┐
//	│ public gRPC     │                    │ http.ServeMux        │
//	│ server          │                    │ /healthz /readyz     │
//	│ (+ health,      │                    │ /metrics /docs       │
//	│  reflection)    │                    │ /openapi.json        │
//	└────────┬────────┘                    │ /v1/... ─► gateway ──┼─┐
//	         │                             │ .../tensorboard/     │ │ gRPC in
//	         │                             │ /  ─► console        │ │ memory
//	         │                             └──────────────────────┘ │
//	         │                             ┌──────────────────────┐ │
//	         │                             │ gateway's gRPC server│◄┘
//	         │                             │ (bufconn, no socket) │
//	         │                             └──────────┬───────────┘
//	         ▼                                        ▼
//	  interceptor chain ──► JobService, TenantService, AuditService, UsageService,
//	                        WebhookService, ClusterService
//	                        (+ AgentService, remote clusters' agents: on the
//	                         public gRPC server only, never the gateway's)
//
// # Listeners
//
// New opens two listeners: the public gRPC listener, Config.GRPCAddr, and
// the HTTP listener, Config.HTTPAddr. The gateway's own gRPC server listens
// in memory (bufconn): no socket, so no one but the gateway can reach it.
// With Config.TLS both listeners serve TLS (tls.go).
//
// Each public listener holds at most MaxConnections connections. More wait
// in the kernel's accept queue. A new connection must say what it wants
// within HandshakeTimeout (10 s): the HTTP/2 preface on gRPC, the request
// headers on HTTP. Authentication is per call, so a connection that never
// authenticates is one that sends nothing, and the timeout closes it.
//
// GRPCAddr and HTTPAddr return the addresses actually bound, for port 0.
//
// # The interceptor chain
//
// The server owns the chain. Its interceptors live in this package or come
// in through Config (authentication and authorization, and the mapping of
// handler errors to statuses). The order, outermost first:
//
//	unary:   recovery → undecodable → request → metrics → logging → timeout → auth → fairness → errors → handler
//	stream:  recovery → undecodable → request → metrics → logging → auth → fairness → streams per caller → errors → handler
//
// Each place in the order has one reason:
//
//   - recovery is outermost, so a panic anywhere becomes INTERNAL.
//   - undecodable (codec.go) answers a message the codec could not decode
//     INVALID_ARGUMENT in plain words, before anything else looks at it.
//   - request (request.go) comes next, so every later log line carries the
//     call's request id and client address.
//   - metrics and logging sit outside auth and errors, so they see the
//     final status code, refusals included.
//   - timeout (--request-timeout) bounds every unary call; one it ends is
//     UNAVAILABLE with Retry-After, while the caller's own deadline still
//     gives DEADLINE_EXCEEDED.
//   - auth runs before anything that needs a caller, so no handler runs
//     unauthenticated. On the public gRPC server a tap (AuthTap) has
//     already checked the token from the call's headers before the message
//     was read, and on REST AuthHTTP checks the Authorization header before
//     the body is read: a stranger's body is never decoded.
//   - fairness (fairness.go, package fairq) gives each tenant a bounded
//     share of the server after auth has named the tenant, so one tenant's
//     flood queues behind its own seats, not in front of another's calls.
//   - the stream limit (limits.go) counts by caller, so it runs after auth.
//   - error mapping is innermost, so internal errors are masked before any
//     other interceptor or the client sees them.
//
// Logging records the outcome of each call only. It never logs payloads,
// which carry tokens and secret values.
//
// # The gateway
//
// REST is grpc-gateway v2 (gateway.go). The gateway is a gRPC client of
// the same services, so REST and gRPC cannot drift apart. It dials its own
// in-memory gRPC server, not the public one. That server has the same
// services and chain but no per-connection stream cap: all REST traffic
// shares its one connection.
//
// On that in-memory server the peer is the gateway itself. The client's
// address is therefore the X-Forwarded-For entry the gateway set. A direct
// gRPC caller's X-Forwarded-For is never trusted.
//
// The gateway differs from its defaults in a few ways:
//
//   - JSON names are lowerCamelCase, and an unknown field is an error.
//   - A body may also be YAML (yaml.go), for manifests such as a TFJob.
//   - X-HTTP-Method-Override and the form-POST fallback are off.
//   - A method a path does not serve is 405 with an Allow header (routes.go
//     reads the routes from the protos' google.api.http rules).
//   - A path parameter or query value that is not UTF-8 is 400 naming it.
//   - 503 and 429 carry Retry-After.
//
// X-Request-Id goes through to gRPC and comes back on the response.
//
// # The HTTP mux
//
//	GET /healthz                  the process is up
//	GET /readyz                   Config.Ready all pass, else 503 naming the first that fails
//	GET /metrics                  Prometheus, Config.Registry
//	/openapi.json, /docs          the generated OpenAPI document and its page (web-openapi)
//	/v1/...                       the gateway, bodies capped at MaxRequestBytes
//	/v1/.../tensorboard/          a job's TensorBoard, proxied (tensorboard.go)
//	/                             the web console, Config.Console, for every other path
//
// /readyz logs why a check failed but shows only its name: it is open to
// anyone. The gRPC health service follows the same checks every 5 s.
//
// The TensorBoard proxy authorizes by calling GetJob through the gateway's
// connection, so a request passes the same chain as any call. Its doc
// comment explains the cookie the console uses for it.
//
// # Limits
//
// Streams (WatchJob, WatchJobs, GetJobLogs) hold resources while they are
// open. So one caller (OIDC subject) may hold at most MaxStreamsPerCaller
// streams on one server, over gRPC and REST together. One more is
// RESOURCE_EXHAUSTED (HTTP 429).
//
// One gRPC connection carries at most MaxConcurrentStreams calls at once.
// The server pings a connection silent for a minute and closes it if no
// answer comes within 20 s. So the streams of a vanished client end and stop
// counting. A connection idle for 15 minutes is sent GOAWAY.
//
// HTTP has ReadHeaderTimeout HandshakeTimeout, ReadTimeout 30 s for the
// whole request and IdleTimeout 2 min. It has no WriteTimeout, which would
// cut log streams.
//
// A REST body is read in full, up to MaxRequestBytes, before the gateway
// sees it. That is before authentication, which happens in the gRPC call.
// So an unauthenticated client can make the server hold at most
// MaxRequestBytes per open request, for at most ReadTimeout.
//
// # Stopping
//
// Run serves until its context ends. Then the health service reports
// NOT_SERVING, HTTP shuts down, and both gRPC servers stop gracefully. Calls
// still running after 5 s (watches, log streams) are cut.
package server
