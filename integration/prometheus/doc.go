// Package prometheus runs a real Prometheus server for tests, scraping a
// DCGM-shaped exporter the test drives, so that Trainyard's GPU
// utilisation (internal/gpuutil) is read through Prometheus's own HTTP API
// and PromQL engine, never a mocked client.
//
//	test ──Set(pod, 80 %)──► Exporter (httptest on 127.0.0.1; NVIDIA
//	                          dcgm-exporter's series and labels)
//	                             ▲ scrape every ScrapeInterval (1 s)
//	                          prometheus (127.0.0.1:<free port>, temp TSDB)
//	                             ▲ /api/v1/query
//	                          internal/gpuutil.Poller
//
// # Building
//
// build.sh builds github.com/prometheus/prometheus/cmd/prometheus at
// v0.316.0 (Prometheus 3.16.0) from the Go module proxy with
// `go install …@v0.316.0` (its go.mod has no replace directives, so no
// throw-away module is needed), -tags remove_all_sd (no cloud service
// discovery: static, file and HTTP only) and without the web UI's assets,
// into ~/.cache/trainyard/prometheus/bin/<version>-r<rev>/ (TRAINYARD_CACHE
// or TRAINYARD_PROMETHEUS_BIN override it), and prints that directory. A
// binary already there is never rebuilt: the cached case takes
// milliseconds. `make cluster-build` (a dependency of make test) and
// .ci/run run it; Start runs it too (EnsureBinary, the script embedded), so
// a missing binary means a build, never a skipped test.
//
// Measured on this kind of machine (2 cores), cold Go build cache, while
// other builds ran (load average 12 to 20): 944 s wall clock, 236 s of
// CPU (user), 33 s system. A rebuild whose packages are in Go's build
// cache (a new BUILD_REV that only changes link flags) links in under a
// minute.
package prometheus
