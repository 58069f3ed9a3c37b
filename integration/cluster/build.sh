#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy, once per version.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes)
#   etcd                                                             (go.etcd.io/etcd/server/v3)
#   kwok                                                             (sigs.k8s.io/kwok)
#
# Binaries land in $TRAINYARD_CLUSTER_BIN (default ~/.cache/trainyard/cluster/bin/<versions>)
# and the script prints that directory. A binary already there is not rebuilt,
# so a second run takes well under a second. The first run takes minutes
# (see integration/cluster/doc.go for measured times).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE="${TRAINYARD_CACHE:-$HOME/.cache/trainyard}"
# BUILD_REV names how the binaries are built; bump it when that changes so an
# existing cache is rebuilt once (2: Kubernetes binaries carry their version).
BUILD_REV=2
BIN="${TRAINYARD_CLUSTER_BIN:-$CACHE/cluster/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-r$BUILD_REV}"
mkdir -p "$BIN"

log() { echo "cluster-build: $*" >&2; }

# The cached case, which is every run but the first: nothing to do.
all=(etcd kwok kube-apiserver kube-controller-manager kube-scheduler kubectl)
have=0
for b in "${all[@]}"; do [[ -x "$BIN/$b" ]] && have=$((have + 1)); done
if [[ $have -eq ${#all[@]} ]]; then
  echo "$BIN"
  exit 0
fi

# One build at a time per bin directory: two test packages (or a test and
# `make cluster-build`) starting together on a cold cache would otherwise
# build everything twice and race on the same output files. The lock is
# released when this script exits.
exec 9>"$BIN/.build.lock"
if ! flock -n 9; then
  log "another build.sh is building into $BIN; waiting for it"
  flock 9
fi

# Modules live outside the repository so their go.mod never mixes with ours.
work="$CACHE/cluster/src"
mkdir -p "$work"

# version_ldflags stamps the version the way Kubernetes' own build does
# (hack/lib/version.sh): the same -X flags for component-base (what the
# servers report at /version) and client-go (what kubectl reports). Without
# them every binary says v0.0.0-master+$Format:%H$, which kubectl, Kueue and
# Helm's kubeVersion checks refuse. The module proxy serves no commit hash, so
# gitCommit says so and gitTreeState is "archive", Kubernetes' own word for a
# build from a source archive; buildDate is the release's time from the proxy,
# which keeps the build reproducible.
version_ldflags() {
  local dir=$1 v=${K8S_VERSION#v} major minor date
  major=${v%%.*}
  minor=${v#*.}; minor=${minor%%.*}
  # `|| return`: errexit does not reach inside the caller's $(...), and an
  # empty buildDate must fail the build, not ship.
  date="$(cd "$dir" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "k8s.io/kubernetes@$K8S_VERSION")" || return
  [[ -n $date ]] || return 1
  local kv
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    for kv in "gitVersion=$K8S_VERSION" "gitMajor=$major" "gitMinor=$minor" "gitCommit=unknown" "gitTreeState=archive" "buildDate=$date"; do
      printf -- "-X '%s.%s' " "$pkg" "$kv"
    done
  done
}

build_kubernetes() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler kubectl) missing=()
  for b in "${want[@]}"; do [[ -x "$BIN/$b" ]] || missing+=("$b"); done
  [[ ${#missing[@]} -eq 0 ]] && return
  local dir="$work/kubernetes-$K8S_VERSION"
  mkdir -p "$dir"
  if [[ ! -f "$dir/go.sum" ]]; then
    log "resolving k8s.io/kubernetes $K8S_VERSION"
    local staging_v="v0.${K8S_VERSION#v1.}"
    local modfile
    modfile="$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
    {
      echo "module trainyard.local/kubebuild"
      echo
      echo "go $(sed -n 's/^go //p' "$modfile")"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      echo "replace ("
      # Kubernetes replaces its staging repositories with local folders; the
      # published module needs each pointed at its released version instead.
      awk '/^replace \(/{f=1;next} f&&/^\)/{f=0} f && $1 ~ /^k8s.io\// {print $1}' "$modfile" |
        while read -r m; do echo "	$m => $m $staging_v"; done
      echo ")"
    } > "$dir/go.mod"
    printf 'package kubebuild\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler/app"\n\t_ "k8s.io/kubectl/pkg/cmd"\n)\n' > "$dir/deps.go"
    (cd "$dir" && go mod tidy >&2)
  fi
  local ldflags
  ldflags="-s -w $(version_ldflags "$dir")"
  for b in "${missing[@]}"; do
    log "building $b (first time: several minutes)"
    local pkg="k8s.io/kubernetes/cmd/$b" start=$SECONDS
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$BIN/$b.tmp" "$pkg" && mv "$BIN/$b.tmp" "$BIN/$b")
    log "built $b in $((SECONDS - start))s"
  done
}

build_etcd() {
  [[ -x "$BIN/etcd" ]] && return
  local dir="$work/etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  if [[ ! -f "$dir/go.sum" ]]; then
    log "resolving etcd $ETCD_VERSION"
    printf 'module trainyard.local/etcdbuild\n\ngo 1.26\n' > "$dir/go.mod"
    printf 'package etcdbuild\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n' > "$dir/deps.go"
    (cd "$dir" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2 && go mod tidy >&2)
  fi
  log "building etcd"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3 && mv "$BIN/etcd.tmp" "$BIN/etcd")
}

build_kwok() {
  [[ -x "$BIN/kwok" ]] && return
  log "building kwok $KWOK_VERSION"
  GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

build_etcd
build_kwok
build_kubernetes
echo "$BIN"
