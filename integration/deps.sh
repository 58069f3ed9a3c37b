#!/usr/bin/env bash
# Installs what Trainyard's tests and demo need beyond a fresh machine of
# this kind (Go, Node and npm, PostgreSQL): Debian's packages for the Python
# client (protoc and its gRPC plugin generate the stubs; gRPC, protobuf,
# YAML, pytest, mypy and typeshed run and check it) and chromium for the
# console's browser tests. It starts PostgreSQL when it is down. Run by
# `make deps`, on which `make test` and `make demo` depend; quiet and quick
# when everything is there.
set -euo pipefail

log() { echo "deps: $*" >&2; }

pkgs=(protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf python3-yaml
  python3-pytest python3-mypy python3-typeshed chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { log "need root (or sudo) to install: ${missing[*]}"; exit 1; }
    sudo=(sudo)
  fi
  log "installing ${missing[*]} (Debian packages)"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# PostgreSQL on 127.0.0.1:5432 (trust auth), as this kind of machine has it.
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL is not answering on 127.0.0.1:5432"; exit 1; }
