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
# CLUSTERS=2 (make demo CLUSTERS=2) runs one Trainyard over two local
# clusters (issue 45): a second control plane of its own, registered as
# cluster b (tyctl clusters register), with a `trainyard worker --cluster b`
# beside the dev process's worker (cluster default); after the job above,
# four 8-GPU jobs spread over both clusters' 16 GPUs each, each placed whole
# in one, and it prints tyctl clusters list and every job with its cluster.
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
CLUSTERS="${CLUSTERS:-1}"
case "$CLUSTERS" in 1|2) ;; *) echo "CLUSTERS=$CLUSTERS: want 1 or 2" >&2; exit 2 ;; esac
CLUSTER_B=trainyard-demo-b   # the second local control plane (CLUSTERS=2), cluster b in Trainyard
TRAINYARD="${TRAINYARD_BIN:-bin/trainyard}"
TYCTL="$(dirname "$TRAINYARD")/tyctl"
work="$(mktemp -d)"
dev_pid=""
worker_b_pid=""
steps=6
[[ "$CLUSTERS" == 2 ]] && steps=8
step=0

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
say() { printf '  %s\n' "$*"; }
stage() { step=$((step + 1)); bold "$step/$steps $*"; }
localcluster() { go run ./integration/cluster/cmd/localcluster --name "$CLUSTER" "$@"; }
localcluster_b() { go run ./integration/cluster/cmd/localcluster --name "$CLUSTER_B" "$@"; }

cleanup() {
  status=$?
  trap '' INT TERM   # a second Ctrl-C must not leave half of it running
  bold "Stopping everything the demo started"
  if [[ -n "$worker_b_pid" ]]; then kill "$worker_b_pid" 2>/dev/null || true; wait "$worker_b_pid" 2>/dev/null || true; fi
  if [[ -n "$dev_pid" ]]; then kill "$dev_pid" 2>/dev/null || true; wait "$dev_pid" 2>/dev/null || true; fi
  localcluster down >/dev/null 2>&1 || true
  [[ "$CLUSTERS" == 2 ]] && { localcluster_b down >/dev/null 2>&1 || true; }
  psql -q "$SERVER_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  if [[ $status -ne 0 && -f "$work/dev.log" ]]; then
    echo "--- last lines of trainyard dev ---"; tail -n 40 "$work/dev.log"
  fi
  if [[ $status -ne 0 && -f "$work/worker-b.log" ]]; then
    echo "--- last lines of trainyard worker --cluster b ---"; tail -n 20 "$work/worker-b.log"
  fi
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stage "Postgres"
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
psql -q "$SERVER_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
say "database $DB"

if [[ "$CLUSTERS" == 2 ]]; then
  stage "Two local Kubernetes control planes, each its own etcd, API server and kwok nodes (the first run builds them from source: many minutes)"
else
  stage "Local Kubernetes control plane (the first run builds it from source: many minutes)"
fi
localcluster down >/dev/null 2>&1 || true
KUBECONFIG_PATH="$(localcluster up | tail -n 1)"
KUBECTL="$(bash integration/cluster/build.sh)/kubectl"   # built with the control plane
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
nodes() { "$KUBECTL" --kubeconfig "$1" get nodes -o 'custom-columns=NODE:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,GPUS:.status.capacity.nvidia\.com/gpu' | sed 's/^/  /'; }
if [[ "$CLUSTERS" == 2 ]]; then
  localcluster_b down >/dev/null 2>&1 || true
  KUBECONFIG_B="$(localcluster_b up | tail -n 1)"
  say "cluster default: kubeconfig $KUBECONFIG_PATH"
  nodes "$KUBECONFIG_PATH"
  say "cluster b: kubeconfig $KUBECONFIG_B"
  nodes "$KUBECONFIG_B"
else
  say "kubeconfig $KUBECONFIG_PATH"
  nodes "$KUBECONFIG_PATH"
fi
# kubectl_in CLUSTER ARGS: kubectl against the cluster Trainyard calls CLUSTER.
kubectl_in() {
  local c="$1"; shift
  if [[ "$c" == b ]]; then "$KUBECTL" --kubeconfig "$KUBECONFIG_B" "$@"; else kubectl "$@"; fi
}

stage "trainyard dev (API + worker)"
# With two clusters each agent reports its cluster's usage every 2 s (10 s
# by default), so that tyctl clusters list below is up to date.
agent_flags=()
[[ "$CLUSTERS" == 2 ]] && agent_flags=(--cluster-heartbeat 2s)
"$TRAINYARD" dev --database-url "$DB_URL" --kubeconfig "$KUBECONFIG_PATH" \
  --http-addr "$HTTP_ADDR" --grpc-addr "$GRPC_ADDR" --metrics-addr 127.0.0.1:0 ${agent_flags[@]+"${agent_flags[@]}"} \
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
export TYCTL_SERVER="$GRPC" TYCTL_TOKEN="$TOKEN" TYCTL_INSECURE=true
tyctl() { "$TYCTL" "$@"; }
# field JSON NAME: the first string value of "NAME" in a JSON document
# ("" when there is none).
field() { { grep -o "\"$2\":\"[^\"]*\"" <<<"$1" || true; } | head -n 1 | sed 's/.*:"//; s/"$//'; }
# jobstate JSON: a job's state, without JOB_STATE_.
jobstate() { { grep -o '"state":"JOB_STATE_[A-Z]*"' <<<"$1" || true; } | head -n 1 | sed 's/.*JOB_STATE_//; s/"//'; }

if [[ "$CLUSTERS" == 2 ]]; then
  stage "Register the second cluster and start its agent"
  # The dev process's worker is cluster default's agent; cluster b gets a
  # worker of its own with credentials for b only. (Both reach Postgres
  # here; see the README's "Many clusters".)
  tyctl clusters update default --label region=a >/dev/null
  tyctl clusters register b --label region=b --display-name "Second local cluster" | sed 's/^/  /'
  # --home-kubeconfig: it copies tenant Secrets from default, where the
  # API server writes them.
  "$TRAINYARD" worker --cluster b --database-url "$DB_URL" --kubeconfig "$KUBECONFIG_B" \
    --home-kubeconfig "$KUBECONFIG_PATH" \
    --metrics-addr 127.0.0.1:0 "${agent_flags[@]}" >"$work/worker-b.log" 2>&1 &
  worker_b_pid=$!
  say "trainyard worker --cluster b --kubeconfig <b's kubeconfig> (log $work/worker-b.log)"
  for _ in $(seq 1 200); do
    kill -0 "$worker_b_pid" 2>/dev/null || { echo "trainyard worker --cluster b exited"; exit 1; }
    [[ "$(field "$(api "$TY/v1/clusters/b")" state)" == CLUSTER_STATE_READY ]] && break
    sleep 0.3
  done
  [[ "$(field "$(api "$TY/v1/clusters/b")" state)" == CLUSTER_STATE_READY ]] || { echo "cluster b did not get READY"; exit 1; }
  say "\$ tyctl clusters list"
  tyctl clusters list | sed 's/^/    /'
fi

stage "A tenant"
if [[ "$CLUSTERS" == 2 ]]; then
  api -X POST "$TY/v1/tenants?tenantId=demo" -d '{"displayName":"Demo team","quota":{"gpu":32}}' >/dev/null
  say "tenants/demo → namespace ty-demo in both clusters (quota: 32 GPUs, counted across them)"
  for _ in $(seq 1 100); do
    kubectl_in b -n ty-demo get serviceaccount trainyard-job >/dev/null 2>&1 && break
    sleep 0.3
  done
else
  api -X POST "$TY/v1/tenants?tenantId=demo" -d '{"displayName":"Demo team","quota":{"gpu":8}}' >/dev/null
  say "tenants/demo → namespace ty-demo (quota: 8 GPUs)"
fi

stage "Submit: 1 chief + 2 workers + 1 parameter server"
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

stage "Progress"
last="" shown="" where=""
for _ in $(seq 1 600); do
  api "$TY/v1/tenants/demo/jobs/mnist" >"$work/job.json"
  state="$(grep -o '"state":"JOB_STATE_[A-Z]*"' "$work/job.json" | head -n 1 | sed 's/.*JOB_STATE_//; s/"//')"
  if [[ "$state" != "$last" ]]; then say "$(date +%T)  $state"; last="$state"; fi
  if [[ "$CLUSTERS" == 2 && -z "$where" ]]; then
    where="$(field "$(cat "$work/job.json")" cluster)"
    [[ -n "$where" ]] && say "placed in cluster $where"
  fi
  if [[ "$state" == RUNNING && -z "$shown" ]]; then
    echo
    say "TF_CONFIG of each pod (addresses resolve through the namespace's headless Service ty-demo/replicas):"
    kubectl_in "$where" -n ty-demo get pods -l trainyard.dev/job=mnist \
      -o jsonpath='{range .items[*]}{.metadata.name}{"  "}{.spec.containers[0].env[?(@.name=="TF_CONFIG")].value}{"\n"}{end}' | sed 's/^/    /'
    echo
    say "The job's EndpointSlice of that Service (what DNS would answer):"
    # The worker writes it as the pods get their addresses.
    for _ in $(seq 1 20); do
      kubectl_in "$where" -n ty-demo get endpointslices -l kubernetes.io/service-name=replicas,trainyard.dev/job=mnist \
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

if [[ "$CLUSTERS" == 2 ]]; then
  stage "Spread: four jobs of 2 workers × 4 GPUs over two clusters of 16 GPUs"
  # Each gang goes whole into one cluster, the best fit by GPUs first (the
  # fewest left free), then the least loaded, then by name: two fill b,
  # the next two go to default.
  spread="spread-1 spread-2 spread-3 spread-4"
  for id in $spread; do
    api -X POST "$TY/v1/tenants/demo/jobs?jobId=$id&requestId=demo-$id" -d '{
      "spec": {"replicas": [{"type": "REPLICA_TYPE_WORKER", "count": 2, "image": "tensorflow/tensorflow:2.16.1",
        "command": ["python", "/app/train.py"], "resources": {"cpu": "4", "memory": "8Gi", "gpu": 4},
        "podAnnotations": {"sim.trainyard.dev/run-for": "15s"}}]}
    }' >/dev/null
    say "tenants/demo/jobs/$id submitted (8 GPUs)"
    sleep 0.5
  done
  running=0
  for _ in $(seq 1 120); do
    running=0
    for id in $spread; do
      s="$(jobstate "$(api "$TY/v1/tenants/demo/jobs/$id")")"
      [[ "$s" == RUNNING || "$s" == SUCCEEDED ]] && running=$((running + 1))
    done
    [[ $running -eq 4 ]] && break
    sleep 0.5
  done
  [[ $running -eq 4 ]] || { echo "only $running of the 4 jobs started"; exit 1; }
  echo
  printf '  %-10s %-20s %s\n' JOB STATE CLUSTER
  declare -A per=()
  for id in mnist $spread; do
    j="$(api "$TY/v1/tenants/demo/jobs/$id")"
    c="$(field "$j" cluster)"
    printf '  %-10s %-20s %s\n' "$id" "$(jobstate "$j")" "$c"
    [[ "$id" == mnist ]] || per[$c]=$(( ${per[$c]:-0} + 1 ))
  done
  # The usage tyctl shows is each agent's last heartbeat (every 2 s here).
  for _ in $(seq 1 30); do
    fresh=1
    for c in default b; do
      want=$(( ${per[$c]:-0} * 8 ))
      [[ $want -eq 0 ]] || grep -Eq "\"usage\":\{[^}]*\"gpu\":$want[,}]" <<<"$(api "$TY/v1/clusters/$c")" || fresh=0
    done
    [[ $fresh == 1 ]] && break
    sleep 0.5
  done
  echo
  say "\$ tyctl clusters list"
  tyctl clusters list | sed 's/^/    /'
  echo
  for c in default b; do
    say "pods in cluster $c:"
    kubectl_in "$c" -n ty-demo get pods -l 'trainyard.dev/job in (spread-1,spread-2,spread-3,spread-4)' \
      -o 'custom-columns=POD:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase' | sed 's/^/    /'
  done
  if [[ "${per[default]:-0}" -eq 0 || "${per[b]:-0}" -eq 0 ]]; then
    echo "the jobs did not spread over both clusters: default ${per[default]:-0}, b ${per[b]:-0}"; exit 1
  fi
  bold "The jobs spread over both clusters: default ${per[default]}, b ${per[b]}."
fi
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
[[ "$CLUSTERS" == 2 ]] && say "tyctl: export TYCTL_SERVER=$GRPC TYCTL_INSECURE=true TYCTL_TOKEN=<the token above>; $TYCTL clusters list"
say "Everything keeps running until Ctrl-C."
# Ctrl-C here is the way out, not a failure: stop everything and exit 0.
trap 'exit 0' INT TERM
rc=0
wait "$dev_pid" || rc=$?
dev_pid=""
echo "trainyard dev exited ($rc)"
exit 1
