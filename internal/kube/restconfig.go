package kube

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TuneRESTConfig sets how a Trainyard client talks to the API server, as
// Kubernetes' own controllers do:
//
//   - Protobuf, not client-go's default JSON, for the built-in kinds (every
//     kind Trainyard reads or writes; JSON stays accepted for anything
//     else). Encoding a pod as JSON costs the API server several times what
//     protobuf does, for every create and for every watch event it sends
//     the worker's informers, and the worker as much again to decode it.
//   - No gzip: the API server would compress every watch event and every
//     answer, and Trainyard decompress them, for a network that is a data
//     centre's or loopback. In the dispatch benchmark, decompressing watch
//     streams was 14 % of the worker's CPU.
//
// The benchmarks' raw client-go baselines use it too, so that they create
// pods exactly as the worker does.
func TuneRESTConfig(cfg *rest.Config) {
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.DisableCompression = true
}
