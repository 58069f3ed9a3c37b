#!/usr/bin/env bash
# `make demo`: Trainyard end to end on this machine.
#
#   1. Postgres on 127.0.0.1:5432 (started if down), a fresh database
#   2. the local Kubernetes control plane (built from source the first time)
#   3. `trainyard dev`: the API server and the worker in one process
#   4. a tenant, created by the platform admin over REST
#   5. a 1 chief + 2 worker + 1 parameter-server job, submitted over REST
#   6. its progress to SUCCEEDED, with every pod's TF_CONFIG
# and at the end, the web console's address and a token to sign in with.
#
# At a terminal it all keeps running at the end, for the console, until
# Ctrl-C stops it. Elsewhere (CI, scripts: stdin or stdout not a terminal) it
# stops at once. DEMO_KEEP=1 keeps it running anyway; DEMO_KEEP=0 stops it
# even at a terminal. TRAINYARD_BIN names the binary (bin/trainyard).
set -euo pipefail
cd "$(dirname "$0")/.."

HTTP_ADDR="${DEMO_HTTP_ADDR:-127.0.0.1:0}"   # port 0: any free port, read back from the log
GRPC_ADDR="${DEMO_GRPC_ADDR:-127.0.0.1:0}"
SERVER_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
DB=trainyard_demo
DB_URL="${SERVER_URL%%/postgres\?*}/$DB?sslmode=disable"
CLUSTER=trainyard-demo
TRAINYARD="${TRAINYARD_BIN:-bin/trainyard}"
work="$(mktemp -d)"
dev_pid=""

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
say() { printf '  %s\n' "$*"; }
localcluster() { go run ./integration/cluster/cmd/localcluster --name "$CLUSTER" "$@"; }

cleanup() {
  status=$?
  trap '' INT TERM   # a second Ctrl-C must not leave half of it running
  bold "Stopping everything the demo started"
  if [[ -n "$dev_pid" ]]; then kill "$dev_pid" 2>/dev/null || true; wait "$dev_pid" 2>/dev/null || true; fi
  localcluster down >/dev/null 2>&1 || true
  psql -q "$SERVER_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  if [[ $status -ne 0 && -f "$work/dev.log" ]]; then
    echo "--- last lines of trainyard dev ---"; tail -n 40 "$work/dev.log"
  fi
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bold "1/6 Postgres"
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
psql -q "$SERVER_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
say "database $DB"

bold "2/6 Local Kubernetes control plane (the first run builds it from source: many minutes)"
localcluster down >/dev/null 2>&1 || true
KUBECONFIG_PATH="$(localcluster up | tail -n 1)"
KUBECTL="$(bash integration/cluster/build.sh)/kubectl"   # built with the control plane
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
say "kubeconfig $KUBECONFIG_PATH"
kubectl get nodes -o 'custom-columns=NODE:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,GPUS:.status.capacity.nvidia\.com/gpu' | sed 's/^/  /'

bold "3/6 trainyard dev (API + worker)"
"$TRAINYARD" dev --database-url "$DB_URL" --kubeconfig "$KUBECONFIG_PATH" \
  --http-addr "$HTTP_ADDR" --grpc-addr "$GRPC_ADDR" --metrics-addr 127.0.0.1:0 \
  >"$work/dev.log" 2>&1 &
dev_pid=$!
TY=""
for _ in $(seq 1 200); do
  kill -0 "$dev_pid" 2>/dev/null || { echo "trainyard dev exited"; exit 1; }
  http="$(sed -n 's/.*msg=serving grpc=[^ ]* http=\([^ ]*\).*/\1/p' "$work/dev.log" | head -n 1)"
  if [[ -n "$http" ]] && curl -fs "http://$http/readyz" >/dev/null 2>&1; then TY="http://$http"; break; fi
  sleep 0.3
done
[[ -n "$TY" ]] || { echo "trainyard dev did not get ready"; exit 1; }
GRPC="$(sed -n 's/.*msg=serving grpc=\([^ ]*\).*/\1/p' "$work/dev.log" | head -n 1)"
TOKEN="$(sed -n 's/^export TOKEN=//p' "$work/dev.log")"
[[ -n "$TOKEN" ]] || { echo "trainyard dev printed no token"; exit 1; }
say "REST $TY (docs: $TY/docs), gRPC $GRPC, log $work/dev.log"
api() { curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }

bold "4/6 A tenant"
api -X POST "$TY/v1/tenants?tenantId=demo" -d '{"displayName":"Demo team","quota":{"gpu":8}}' >/dev/null
say "tenants/demo → namespace ty-demo (quota: 8 GPUs)"

bold "5/6 Submit: 1 chief + 2 workers + 1 parameter server"
# The sim.trainyard.dev annotations tell the simulated kubelet how the
# containers behave: train for 6 s and exit 0; the PS serves until deleted.
api -X POST "$TY/v1/tenants/demo/jobs?jobId=mnist&requestId=demo-1" -d '{
  "displayName": "MNIST, multi-worker",
  "spec": {
    "replicas": [
      {"type": "REPLICA_TYPE_CHIEF", "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "/app/train.py"],
       "resources": {"cpu": "2", "memory": "4Gi"}, "podAnnotations": {"sim.trainyard.dev/run-for": "6s"}},
      {"type": "REPLICA_TYPE_WORKER", "count": 2, "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "/app/train.py"],
       "resources": {"cpu": "4", "memory": "8Gi", "gpu": 1}, "podAnnotations": {"sim.trainyard.dev/run-for": "6s"}},
      {"type": "REPLICA_TYPE_PS", "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "/app/train.py"],
       "resources": {"cpu": "2", "memory": "4Gi"}, "podAnnotations": {"sim.trainyard.dev/run-forever": "true"}}
    ],
    "runPolicy": {"backoffLimit": 2, "activeDeadlineSeconds": 300}
  }
}' >"$work/job.json"
say "tenants/demo/jobs/mnist accepted: $(grep -o '"state":"[A-Z_]*"' "$work/job.json")"

bold "6/6 Progress"
last="" shown=""
for _ in $(seq 1 600); do
  api "$TY/v1/tenants/demo/jobs/mnist" >"$work/job.json"
  state="$(grep -o '"state":"JOB_STATE_[A-Z]*"' "$work/job.json" | head -n 1 | sed 's/.*JOB_STATE_//; s/"//')"
  if [[ "$state" != "$last" ]]; then say "$(date +%T)  $state"; last="$state"; fi
  if [[ "$state" == RUNNING && -z "$shown" ]]; then
    echo
    say "TF_CONFIG of each pod (addresses resolve through the namespace's headless Service ty-demo/replicas):"
    kubectl -n ty-demo get pods -l trainyard.dev/job=mnist \
      -o jsonpath='{range .items[*]}{.metadata.name}{"  "}{.spec.containers[0].env[?(@.name=="TF_CONFIG")].value}{"\n"}{end}' | sed 's/^/    /'
    echo
    say "The job's EndpointSlice of that Service (what DNS would answer):"
    # The worker writes it as the pods get their addresses.
    for _ in $(seq 1 20); do
      kubectl -n ty-demo get endpointslices -l kubernetes.io/service-name=replicas,trainyard.dev/job=mnist \
        -o jsonpath='{range .items[*].endpoints[*]}{.hostname}{" -> "}{.addresses[0]}{"\n"}{end}' >"$work/endpoints"
      [[ "$(grep -c . "$work/endpoints")" -ge 4 ]] && break
      sleep 0.25
    done
    sed 's/^/    /' "$work/endpoints"
    echo
    shown=1
  fi
  case "$state" in SUCCEEDED|FAILED|CANCELLED) break ;; esac
  sleep 0.5
done

say "events:"
api "$TY/v1/tenants/demo/jobs/mnist/events" | grep -o '"reason":"[^"]*", *"message":"[^"]*"' | sed 's/"reason":"//; s/", *"message":"/: /; s/"$//; s/^/    /'
if [[ "$last" != SUCCEEDED ]]; then
  echo "the job ended $last"; exit 1
fi
bold "The job SUCCEEDED."
# At a terminal the demo keeps running, so that the console can be tried;
# elsewhere (scripts, CI) it stops at once, unless DEMO_KEEP=1.
keep="${DEMO_KEEP:-}"
if [[ -z "$keep" ]]; then
  if [[ -t 0 && -t 1 ]]; then keep=1; else keep=0; fi
fi
if [[ "$keep" != 1 ]]; then
  say "Not at a terminal (or DEMO_KEEP=0): everything stops now. DEMO_KEEP=1 keeps it running for the console."
  exit 0
fi
bold "The web console: open $TY/ and sign in with this token"
say "$TOKEN"
say "curl: export TOKEN=<the token above>; curl -H \"Authorization: Bearer \$TOKEN\" $TY/v1/tenants/demo/jobs"
say "Everything keeps running until Ctrl-C."
# Ctrl-C here is the way out, not a failure: stop everything and exit 0.
trap 'exit 0' INT TERM
rc=0
wait "$dev_pid" || rc=$?
dev_pid=""
echo "trainyard dev exited ($rc)"
exit 1
