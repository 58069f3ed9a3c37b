package server

import (
	"fmt"
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"sigs.k8s.io/yaml"
)

// yamlContentTypes are the media types under which a REST body may be
// YAML: a Kubernetes-style manifest such as the TFJob ImportTFJob takes,
// posted as it is (curl --data-binary @tfjob.yaml -H 'Content-Type:
// application/yaml').
var yamlContentTypes = []string{"application/yaml", "application/x-yaml", "text/yaml"}

// yamlBody reads a YAML request body by turning it into JSON for the JSON
// marshaler, which then applies its rules (unknown fields are errors).
// Responses stay JSON, whatever the request was.
type yamlBody struct {
	runtime.Marshaler
}

func (y yamlBody) Unmarshal(data []byte, v any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("the body is not YAML: %w", err)
	}
	return y.Marshaler.Unmarshal(j, v)
}

func (y yamlBody) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return io.EOF
		}
		return y.Unmarshal(b, v)
	})
}
