// Command tyctl is the Trainyard CLI for data scientists: submit distributed
// TensorFlow training jobs, follow them, read their logs, manage tenants
// and secrets, and read the audit log. It speaks gRPC (trainyard.v1) to the
// server.
//
// # Commands
//
//	tyctl jobs submit -f job.yaml [--id NAME] [--request-id ID] [--allow-warnings]
//	tyctl jobs submit -f jobs.yaml|DIR [--request-id ID]   several documents: one batch
//	tyctl jobs get NAME
//	tyctl jobs list [--filter F] [--limit N] [--all-pages] [--page-token T] [-w]
//	tyctl jobs cancel NAME
//	tyctl jobs delete NAME
//	tyctl jobs events NAME
//	tyctl jobs logs NAME [--replica worker-0] [-f] [--tail N]
//	tyctl jobs watch [NAME] [--after-event ID] [--filter F]
//	tyctl tenants list | get [ID] | delete ID
//	tyctl tenants create ID [--display-name S] [--label k=v] [--quota-gpu N]
//	    [--quota-cpu Q] [--quota-memory Q] [--quota-pods N]
//	    [--member group:NAME=ROLE | subject:NAME=ROLE] [--pod-reader-group G]
//	tyctl secrets put NAME [--from-literal k=v] [--from-file [k=]path]
//	tyctl secrets list | delete NAME
//	tyctl audit [--all] [--subject S] [--action A] [--since D] [--until D] [--limit N] [--wide]
//	tyctl convert tfjob -f tfjob.yaml [--allow-warnings]
//	tyctl login [--issuer URL] [--client-id ID] [--flow auto|device|browser] [--no-browser]
//	tyctl whoami
//	tyctl logout
//	tyctl version
//
// NAME is a job id (mnist-1) in the tenant of --tenant, or a full resource
// name (tenants/ml/jobs/mnist-1, as -o json prints it), which carries its
// own tenant.
//
// # Connection and credentials
//
// Global flags, each with an environment variable; a flag given on the
// command line wins over the variable, which wins over the default:
//
//	--server host:port  TYCTL_SERVER      default localhost:9090
//	--tenant ID         TYCTL_TENANT
//	--token T           TYCTL_TOKEN
//	--token-file F      TYCTL_TOKEN_FILE
//	--ca-file F         TYCTL_CA_FILE     PEM roots added to the system's
//	--insecure          TYCTL_INSECURE    plaintext instead of TLS
//	-o table|json|yaml
//	--timeout 30s       per request; logs and watch streams have none
//
// Below the environment comes tyctl's config file ($TYCTL_CONFIG, else
// ~/.config/tyctl/config.yaml): the server, tenant, --insecure and
// --ca-file that tyctl login was given, and the login itself.
//
// The token is found in this order: --token, --token-file (giving both is an
// error), TYCTL_TOKEN, TYCTL_TOKEN_FILE, the ID token tyctl login stored; it is sent on every call as
// "authorization: Bearer <token>" and never printed: errors name where it
// came from, not what it is. A "Bearer " prefix copied along is dropped.
// TLS is the default. --insecure is meant for a server on this machine: with
// a token, tyctl refuses plaintext to anything but a loopback address
// (localhost, 127.0.0.0/8, ::1, unix sockets).
//
// # Login
//
// tyctl login signs in with the OIDC issuer (login.go): the device flow
// when the issuer offers it, else the authorization code flow with PKCE on
// a loopback redirect. The ID token (what the server verifies) and the
// refresh token go into the config file, mode 0600, written atomically.
// Before any call, a stored token within 30 s of its expiry is renewed
// with the refresh token and written back (a long watch renews on each
// reconnect); a renewal the issuer refuses says to log in again, without
// the issuer's answer, which may echo the token. whoami shows the token's
// subject, email, groups and expiry and the tenants ListTenants returns,
// with the caller's role in each by their members; logout forgets the
// tokens (they are not revoked: ID tokens stay valid until they expire).
//
// # Kubeflow TFJobs
//
// jobs submit -f and convert tfjob -f tell a TFJob (kind: TFJob) from a
// job file by its kind and send it unmodified to ImportTFJob: the server
// converts it (internal/tfjob), so every client converts alike. Fields
// Trainyard cannot honour are errors, one per field, unless
// --allow-warnings; they and the notes (fields without a counterpart by
// design) are printed on stderr. convert tfjob uses validateOnly and
// prints the job file, creating nothing.
//
// # Job files
//
// A job file is the Job resource in the shape the REST API takes as the
// body of a create, YAML or JSON (examples/mnist.yaml). Before protojson
// reads it, enum values may be written short and in any case (WORKER,
// on_failure, OnFailure), numbers and booleans where a string is due become
// strings (cpu: 2, args: [--epochs, 10]), and unknown fields are errors with
// a suggestion, so that a typo such as gpus: 4 cannot silently submit a job
// without GPUs. Problems are reported by path, all at once, before anything
// is sent. The output of jobs get -o yaml is a valid job file.
//
// # Job files
//
// tyctl does not read job files: jobs submit -f sends each file's text to
// ParseJobFile, and the server applies the lenient rules of
// internal/jobfile (short enums, numbers where strings are wanted, unknown
// fields with a suggestion), the same for every client. Its
// "documents[i]" in an error is printed as the file, or "file#i" in a file
// of several documents. A Kubeflow TFJob (kind: TFJob) goes to ImportTFJob.
//
// # Idempotent submit and retries
//
// jobs submit always sends a request id (AIP-155): --request-id, or a fresh
// UUID printed on stderr before the call, so that a submit whose answer was
// lost can be repeated with the same id and returns the job the first one
// created. Several documents (a multi-document file, a directory) go to
// BatchCreateJobs, 1,000 per call, document n with "<id>-<n>" (batch.go).
// Calls that are safe to repeat (CreateJob thanks to that id, gets,
// lists, cancel, secret put) are retried by gRPC on UNAVAILABLE, up to 4
// attempts; deletes and tenant creation are not, since a repeat would report
// NotFound or AlreadyExists for a call that worked.
//
// # Output
//
// Tables are for people: short ids, short enum names, ages as kubectl writes
// them. jobs list shows NAME, STATE, REPLICAS, RESTARTS, AGE, REASON, where
// REPLICAS is "chief 1/1, worker 3/4": per type, in spec order, the replicas
// running or succeeded out of those asked for; STATE is CANCELLING while a
// requested cancel is under way. Messages that are not the result (the
// generated request id, "more pages" hints, "No jobs found") go to stderr,
// so stdout stays parseable.
//
// -o json and -o yaml print the API's own JSON (protojson: lowerCamelCase
// names, enums by full name, int64 as strings), the documents the REST API
// returns; lists are the List response (jobs, nextPageToken). jobs watch
// prints one compact JSON document per line with -o json and YAML documents
// separated by --- with -o yaml.
//
// # Watching
//
// jobs watch NAME prints the job's current state, then each event as it
// happens, and exits when the job has ended: 0 if it SUCCEEDED, 1 if it
// FAILED or was CANCELLED, so that "tyctl jobs watch mnist-1 && next-step"
// works. The server ends the stream once the job is final; any other end of
// the stream (UNAVAILABLE, a server restart) is resumed after the last event
// seen, up to 5 times in a row with growing pauses. A job's final state is
// taken from the event, not from the job attached to it, which is the job as
// it is when the batch is sent. Without NAME, every job of the tenant
// matching --filter is watched until interrupted (exit 0).
//
// # Errors and exit codes
//
// An error prints "tyctl: <gRPC code>: <message>", then every field
// violation of a google.rpc.BadRequest on its own line
// ("  spec.replicas[1].image: is required") and every failed precondition
// ("  QUOTA tenants/ml: 10 GPUs (quota 8)"), then a hint for the usual
// first-day problems: no or refused token (Unauthenticated), no role in the
// tenant (PermissionDenied), a plaintext server spoken to with TLS, nothing
// listening. Exit codes: 0 success, 1 any error (and a watched job that did
// not succeed), 130 interrupted.
//
// # Secrets
//
// Secret values come from --from-literal or --from-file and go into the
// request only: they are never printed, never part of an error (a malformed
// --from-literal is reported without its text), and the server never
// returns them. Prefer --from-file; a literal stays in shell history.
package main
