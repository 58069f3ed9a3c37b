package prometheus

import (
	"cmp"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// GPU is one GPU as the DCGM exporter reports it, with the Kubernetes pod
// that holds it (dcgm-exporter's pod mapping): the labels are the
// exporter's own (gpu, UUID, pci_bus_id, device, modelName, Hostname,
// DCGM_FI_DRIVER_VERSION, container, namespace, pod).
type GPU struct {
	// Index is the GPU's index on its node (label gpu, device nvidia<Index>).
	Index int
	// UUID is the GPU's (label UUID); defaults to one made from Hostname and Index.
	UUID string
	// Hostname is the node's (label Hostname). Defaults to "node-0".
	Hostname string
	// ModelName defaults to "NVIDIA H100 80GB HBM3".
	ModelName string
	// Namespace, Pod and Container hold the GPU; empty for a free GPU.
	Namespace, Pod, Container string
	// Util is DCGM_FI_DEV_GPU_UTIL (percent) and FBUsed DCGM_FI_DEV_FB_USED (MiB).
	Util, FBUsed float64
}

func (g GPU) key() string { return g.Hostname + "/" + fmt.Sprint(g.Index) }

// Exporter serves DCGM-shaped metrics for the GPUs a test sets.
type Exporter struct {
	srv  *httptest.Server
	mu   sync.Mutex
	gpus map[string]GPU
}

// NewExporter starts an exporter on 127.0.0.1. Close stops it.
func NewExporter() *Exporter {
	e := &Exporter{gpus: map[string]GPU{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// Target is the exporter's host:port, for a scrape config.
func (e *Exporter) Target() string { return strings.TrimPrefix(e.srv.URL, "http://") }

// Close stops the exporter.
func (e *Exporter) Close() { e.srv.Close() }

// Set adds or replaces a GPU (by Hostname and Index).
func (e *Exporter) Set(g GPU) {
	if g.Hostname == "" {
		g.Hostname = "node-0"
	}
	if g.ModelName == "" {
		g.ModelName = "NVIDIA H100 80GB HBM3"
	}
	if g.UUID == "" {
		g.UUID = fmt.Sprintf("GPU-%s-%d", g.Hostname, g.Index)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gpus[g.key()] = g
}

// Remove drops a GPU: its series go stale in Prometheus.
func (e *Exporter) Remove(hostname string, index int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.gpus, GPU{Hostname: hostname, Index: index}.key())
}

func (e *Exporter) serve(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	gpus := make([]GPU, 0, len(e.gpus))
	for _, g := range e.gpus {
		gpus = append(gpus, g)
	}
	e.mu.Unlock()
	slices.SortFunc(gpus, func(a, b GPU) int { return cmp.Or(cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(a.Index, b.Index)) })
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	for _, m := range []struct {
		name, help string
		value      func(GPU) float64
	}{
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", func(g GPU) float64 { return g.Util }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func(g GPU) float64 { return g.FBUsed }},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", m.name, m.help, m.name)
		for _, g := range gpus {
			fmt.Fprintf(&b, "%s{gpu=%q,UUID=%q,pci_bus_id=%q,device=%q,modelName=%q,Hostname=%q,DCGM_FI_DRIVER_VERSION=%q,container=%q,namespace=%q,pod=%q} %g\n",
				m.name, fmt.Sprint(g.Index), g.UUID, fmt.Sprintf("00000000:%02X:00.0", g.Index+1), fmt.Sprintf("nvidia%d", g.Index),
				g.ModelName, g.Hostname, "580.95.05", g.Container, g.Namespace, g.Pod, m.value(g))
		}
	}
	_, _ = w.Write([]byte(b.String()))
}
