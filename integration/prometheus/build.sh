#!/usr/bin/env bash
# Builds the Prometheus server from the Go module proxy, once per version,
# for the tests that read GPU utilisation through a real Prometheus
# (integration/prometheus, the GPU-utilisation poller's tests).
#
#   prometheus   (github.com/prometheus/prometheus/cmd/prometheus)
#
# The binary lands in $TRAINYARD_PROMETHEUS_BIN (default
# ~/.cache/trainyard/prometheus/bin/<version>-r<rev>) and the script prints
# that directory. A binary already there is not rebuilt, so every run but the
# first takes milliseconds; the first takes minutes (see doc.go for the time
# measured on this kind of machine).
#
# Prometheus 3.x's Go module versions are v0.3xx.y (v0.316.0 is Prometheus
# 3.16.0). `go install module@version` works for it: its go.mod has no
# replace directives. Two things keep the build small:
#   - -tags remove_all_sd leaves out every service discovery but static,
#     file and HTTP (Prometheus' own plugins/ build tags): no cloud SDKs,
#     no client-go, about half the packages. Tests use static_configs.
#   - without -tags builtinassets the web UI's assets are not embedded
#     (the UI answers "not built"); the HTTP API, which is all the tests
#     and Trainyard use, is unaffected.
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
CACHE="${TRAINYARD_CACHE:-$HOME/.cache/trainyard}"
# BUILD_REV names how the binary is built; bump it when that changes so an
# existing cache is rebuilt once.
# (2: the binary reports Prometheus's release, 3.16.0, not 316.0.)
BUILD_REV=2
BIN="${TRAINYARD_PROMETHEUS_BIN:-$CACHE/prometheus/bin/$PROMETHEUS_VERSION-r$BUILD_REV}"
mkdir -p "$BIN"

log() { echo "prometheus-build: $*" >&2; }

if [[ -x "$BIN/prometheus" ]]; then
  echo "$BIN"
  exit 0
fi

# One build at a time per bin directory (two test packages starting together
# on a cold cache would otherwise build twice into the same file).
exec 9>"$BIN/.build.lock"
if ! flock -n 9; then
  log "another build.sh is building into $BIN; waiting for it"
  flock 9
fi
if [[ -x "$BIN/prometheus" ]]; then
  echo "$BIN"
  exit 0
fi

# The module's v0.MMm.p is Prometheus M.mm.p: what `prometheus --version`
# reports, as Prometheus's own build stamps it.
v="${PROMETHEUS_VERSION#v0.}"
release="${v:0:1}.${v:1}"
log "building prometheus $PROMETHEUS_VERSION ($release; first time: several minutes)"
start=$SECONDS
tmp="$(mktemp -d "$BIN/.gobin.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# GOFLAGS is cleared so a caller's -mod=vendor or -tags cannot leak in.
GOFLAGS= GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -tags remove_all_sd \
  -ldflags="-s -w -X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Branch=module-proxy -X github.com/prometheus/common/version.Revision=unknown" \
  "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION"
mv "$tmp/prometheus" "$BIN/prometheus"
log "built prometheus in $((SECONDS - start))s"
echo "$BIN"
