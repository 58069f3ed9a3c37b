# Trainyard. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO          ?= go
BIN         ?= $(CURDIR)/bin
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export DATABASE_URL

GOMODCACHE  := $(shell $(GO) env GOMODCACHE)
GATEWAY_V1  := github.com/grpc-ecosystem/grpc-gateway@v1.16.0
GATEWAY_V2  := github.com/grpc-ecosystem/grpc-gateway/v2@$(shell $(GO) list -m -f '{{.Version}}' github.com/grpc-ecosystem/grpc-gateway/v2)
PROTO_DEPS  := .proto-deps

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN{FS=":.*## "} /^[a-z][a-zA-Z_-]*:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/trainyard and bin/tyctl.
	$(GO) build -o $(BIN)/ ./cmd/trainyard ./cmd/tyctl

$(PROTO_DEPS): go.mod
	@# googleapis and the openapiv2 options from the module cache: the schema registry is unreachable here.
	$(GO) mod download $(GATEWAY_V1) $(GATEWAY_V2)
	rm -rf $(PROTO_DEPS) && mkdir -p $(PROTO_DEPS)/googleapis/google/api $(PROTO_DEPS)/openapiv2/protoc-gen-openapiv2/options
	cp $(GOMODCACHE)/$(GATEWAY_V1)/third_party/googleapis/google/api/{annotations,http,httpbody}.proto $(PROTO_DEPS)/googleapis/google/api/
	cp $(GOMODCACHE)/$(GATEWAY_V2)/protoc-gen-openapiv2/options/{annotations,openapiv2}.proto $(PROTO_DEPS)/openapiv2/protoc-gen-openapiv2/options/
	chmod -R u+w $(PROTO_DEPS)

.PHONY: generate
generate: $(PROTO_DEPS) web/node_modules/.package-lock.json ## Regenerate Go code, the OpenAPI document, the console's API types and the Python client's stubs from proto/.
	$(GO) tool buf generate --path proto/trainyard
	@# The console's types (web/src/api/openapi.gen.ts) from the OpenAPI document: openapi-typescript.
	cd web && $(NPM) run --silent generate
	@# Debian's protoc and grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc).
	bash clients/python/generate.sh

.PHONY: verify
verify: generate web ## Fail when generated files (Go, OpenAPI, the console's API types, Python stubs) or the console's build (web/dist) are stale, or go.mod is untidy.
	$(GO) mod tidy
	@git diff --exit-code -- proto web-openapi web/src/api/openapi.gen.ts clients/python/trainyard/_proto go.mod go.sum || { echo "generated files are stale: run 'make generate' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- proto web-openapi web/src/api/openapi.gen.ts clients/python/trainyard/_proto)" || { git status --porcelain -- proto web-openapi web/src/api/openapi.gen.ts clients/python/trainyard/_proto; echo "untracked generated files: run 'make generate' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- web/dist web/package-lock.json)" || { git status --porcelain -- web/dist web/package-lock.json; echo "the console's build (web/dist) is stale: run 'make web' and commit" >&2; exit 1; }

# --- the web console (web/): TypeScript and React, built by Vite with npm.
# Its build, web/dist, is committed and embedded in the binary, so
# `go build` needs no npm; make verify rebuilds it and diffs.
NPM ?= npm

web/node_modules/.package-lock.json: web/package-lock.json
	cd web && $(NPM) ci --no-audit --no-fund

.PHONY: web
web: web/node_modules/.package-lock.json ## Build the web console into web/dist (embedded by the Go package web).
	cd web && $(NPM) run build

.PHONY: web-test
web-test: web/node_modules/.package-lock.json ## The console's unit tests (vitest).
	cd web && $(NPM) test

# --- the Python client (clients/python): Debian's python3-pytest,
# python3-mypy and python3-typeshed beside python3-grpcio, -protobuf and
# -yaml (.ci/run installs them). /usr/bin/python3, not the first python3 on
# PATH, which a pyenv or venv without them may shadow.
PYTHON ?= /usr/bin/python3

.PHONY: python-test
python-test: deps ## The Python client's offline tests (pytest) and its type check (mypy --strict); make test also runs it against a live server.
	cd clients/python && $(PYTHON) -m pytest -q && $(PYTHON) -m mypy

.PHONY: screenshots
screenshots: cluster-build build ## Run the console's browser tests and keep their screenshots in web/screenshots (the README shows them).
	TRAINYARD_BIN=$(BIN)/trainyard TRAINYARD_SCREENSHOTS=$(CURDIR)/web/screenshots $(GO) test -tags integration -count=1 -run TestConsole ./integration/console/

.PHONY: deps
deps: ## Install what the tests and the demo need beyond Go, Node and PostgreSQL (Debian packages: the Python client's, chromium) and start PostgreSQL when it is down.
	@bash integration/deps.sh

.PHONY: test
# The end-to-end package, the longest (about 10 minutes, mostly waiting on
# its cluster, processes and timers rather than computing), runs beside the
# other packages, which run one at a time; then the benchmarks' smoke runs,
# alone, since they time what they measure. Each package has its own
# database and local cluster; the end-to-end package also has a PostgreSQL
# server of its own (TRAINYARD_TEST_OWN_POSTGRES=1, internal/pgtest), since
# job events are delivered below the server's oldest transaction and
# another package's long transactions would hold its events back.
# A failure anywhere fails make test; each run prints its own packages.
E2E   := github.com/trainyard/trainyard/integration/e2e
BENCH := github.com/trainyard/trainyard/integration/bench
test: deps cluster-build build fuzz-smoke web-test python-test ## Every test: unit, Postgres and end to end on the local cluster, and each fuzz target briefly (what CI runs).
	@pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL is not answering on 127.0.0.1:5432 (.ci/run starts it)" >&2; exit 1; }
	@export TRAINYARD_BIN=$(BIN)/trainyard; t="$(GO) test -tags integration -count=1 -timeout 60m"; \
	echo "TRAINYARD_TEST_OWN_POSTGRES=1 $$t $(E2E) &  # beside"; TRAINYARD_TEST_OWN_POSTGRES=1 $$t $(E2E) & e2e=$$!; \
	echo "$$t -p 1 <every package but $(E2E) and $(BENCH)>"; \
	$$t -p 1 $$($(GO) list -tags integration ./... | grep -vx -e '$(E2E)' -e '$(BENCH)'); rest=$$?; \
	wait $$e2e; e2e_rc=$$?; \
	echo "$$t $(BENCH)"; $$t $(BENCH); bench=$$?; \
	[ $$e2e_rc -eq 0 ] || echo "make test: $(E2E) failed" >&2; \
	[ $$rest -eq 0 ] || echo "make test: a package failed (above)" >&2; \
	[ $$bench -eq 0 ] || echo "make test: $(BENCH) failed" >&2; \
	[ $$rest -eq 0 ] && [ $$e2e_rc -eq 0 ] && [ $$bench -eq 0 ]
	$(GO) vet -tags bench ./integration/bench/

# Go native fuzz targets, package:Target. Their seeds are the unit tests'
# cases; a crasher the fuzzer finds is written to the package's
# testdata/fuzz/<Target>/ and from then on runs in every go test.
FUZZ_TARGETS := \
	./internal/job:FuzzSpec \
	./internal/api:FuzzJobJSON \
	./internal/document:FuzzCheckJSONPaths \
	./internal/api:FuzzParseJobFilter \
	./internal/api:FuzzPageToken \
	./internal/resname:FuzzParse \
	./internal/tenant:FuzzValidate \
	./internal/tune:FuzzParseMetricLine
FUZZTIME ?= 1m

.PHONY: fuzz
fuzz: ## Run every fuzz target for $(FUZZTIME) each (FUZZTIME=10m make fuzz).
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s "$${t%%:*}"; \
	done

.PHONY: fuzz-smoke
# A count, not a duration: go1.26's fuzz coordinator can report "context
# deadline exceeded" as a failure when a -fuzztime duration ends while a
# worker is busy (go.dev/issue/75804, fixed in Go 1.27); a count has no
# deadline to race.
fuzz-smoke: ## Run every fuzz target for a few seconds (part of make test).
	@$(MAKE) --no-print-directory fuzz FUZZTIME=3000x

.PHONY: chaos
chaos: cluster-build build ## Break real processes under load for about 6 minutes (60 faults) and print what was lost, duplicated or stuck (integration/chaos).
	TRAINYARD_BIN=$(BIN)/trainyard $(GO) test -tags chaos -run '^TestChaos$$' -count=1 -v -timeout 40m ./integration/chaos/

.PHONY: simulate
simulate: build ## Compare the scheduler with quota-only FIFO admission on generated traces of 5,000 jobs on 32 GPU nodes at four loads, then every policy (cohort sharing included) on the bursty trace of 10,000 jobs on 64 nodes (several minutes; make test runs the small traces of internal/sim).
	@for load in 0.7 0.9 1.0 1.2; do echo "== load $$load"; $(BIN)/trainyard simulate --nodes 32 --jobs 5000 --load $$load; echo; done
	@echo "== bursty tenants, cohort sharing (issue 42)"; $(BIN)/trainyard simulate --bursty --nodes 64 --jobs 10000 --load 0.8

.PHONY: test-unit
test-unit: ## Unit tests only: no Postgres, no cluster.
	$(GO) test -count=1 ./...

.PHONY: lint
lint: $(PROTO_DEPS) web/node_modules/.package-lock.json ## gofmt, go vet, buf lint, buf breaking against main, and the console's eslint and tsc.
	cd web && $(NPM) run lint
	@# Every Go file, whatever its build tags (go vet sees only the tags it is given).
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$unformatted" || { echo "not gofmt'd: $$unformatted" >&2; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags bench ./integration/bench/
	$(GO) vet -tags chaos ./integration/chaos/
	$(GO) tool buf lint
	@# Breaking changes (WIRE_JSON) against main's protos, with the same offline imports.
	@if git cat-file -e main:proto/trainyard/v1/job.proto 2>/dev/null; then \
		tmp=$$(mktemp -d) && git archive main proto buf.yaml | tar -x -C $$tmp && cp -r $(PROTO_DEPS) $$tmp/ && \
		$(GO) tool buf breaking --against $$tmp; rc=$$?; rm -rf $$tmp; exit $$rc; fi

# --- local cluster ---
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built
# from the Go module proxy into ~/.cache/trainyard (see integration/cluster/doc.go).
CLUSTER_NAME ?= dev
LOCALCLUSTER := $(GO) run ./integration/cluster/cmd/localcluster --name $(CLUSTER_NAME)

.PHONY: cluster-build
cluster-build: ## Build the local control plane binaries and the test Prometheus (minutes the first time, then cached).
	bash integration/cluster/build.sh
	bash integration/prometheus/build.sh

.PHONY: cluster-up
cluster-up: ## Start the local Kubernetes control plane; prints the kubeconfig path (kubectl goes to bin/).
	@mkdir -p $(BIN) && ln -sf "$$(bash integration/cluster/build.sh)/kubectl" $(BIN)/kubectl
	@echo "kubectl: $(BIN)/kubectl (export PATH=$(BIN):\$$PATH)" >&2
	@$(LOCALCLUSTER) up

.PHONY: cluster-down
cluster-down: ## Stop the local control plane and remove its state.
	@$(LOCALCLUSTER) down

.PHONY: cluster-status
cluster-status: ## Show the local control plane's processes and health.
	@$(LOCALCLUSTER) status

# CLUSTERS=2: one Trainyard over two local clusters (issue 45).
CLUSTERS ?= 1

.PHONY: demo
demo: deps build ## Run Trainyard on the local cluster, train a 1 chief + 2 worker + 1 PS job to SUCCEEDED and keep it up for the console until Ctrl-C (not at a terminal: stop at once; DEMO_KEEP=1/0 overrides). CLUSTERS=2: over two local clusters, a worker in each, jobs spread over both.
	CLUSTERS=$(CLUSTERS) bash integration/demo.sh

.PHONY: bench
bench: cluster-build build ## Measure next to same-run baselines: JobCreate vs pgbench INSERTs, batch submit, a million jobs, 1,000 watchers, submit-to-pods vs raw client-go at 0, 2,000 and 10,000 finished pods and at 50 and 100 jobs/s, over two clusters vs one, worker memory, replicas, admission (19-20 minutes on 2 cores at load average 2-5, more on a slow hour, before the clusters section's 3-4.5).
	@pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL is not answering on 127.0.0.1:5432" >&2; exit 1; }
	@# One scheduling cycle (sched.Schedule) at 10,000 pending jobs, 1,000 running, 100 tenants and
	@# 1,000 nodes, its cost from 1,000 to 100,000 pending jobs, and the same 1,000 nodes as 5 clusters of 200
	@# (BenchmarkScheduleClusters, issue 45: under 100 ms) (internal/admission/bench_test.go).
	$(GO) test -run '^$$' -bench 'Schedule' -benchtime 10x -benchmem ./internal/admission/
	TRAINYARD_BIN=$(BIN)/trainyard $(GO) test -tags bench -run '^$$' -bench . -benchtime 1x -timeout 90m ./integration/bench/
