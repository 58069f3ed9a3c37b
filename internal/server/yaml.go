package server

import (
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/trainyard/trainyard/internal/document"
)

// yamlContentTypes are the media types under which a REST body may be
// YAML: a Kubernetes-style manifest such as the TFJob ImportTFJob takes,
// posted as it is (curl --data-binary @tfjob.yaml -H 'Content-Type:
// application/yaml').
var yamlContentTypes = []string{"application/yaml", "application/x-yaml", "text/yaml"}

// strictJSON reads REST bodies with package document's rules before the
// JSON marshaler sees them: one value, no duplicate key, within the
// budget of values and depth; its errors name the field in plain words
// (issue 41, findings 1, 5, 6, 7). Responses are the marshaler's.
type strictJSON struct {
	*runtime.JSONPb
	limits document.Limits
}

func (m strictJSON) Unmarshal(data []byte, v any) error {
	if err := document.CheckJSON(data, m.limits); err != nil {
		return err
	}
	return document.Describe(m.JSONPb.Unmarshal(data, v), data)
}

func (m strictJSON) NewDecoder(r io.Reader) runtime.Decoder {
	return readAll(r, m.Unmarshal)
}

// yamlBody reads a YAML request body by turning it into JSON within the
// budget (package document), which then goes through the JSON rules
// (unknown fields are errors). Responses stay JSON, whatever the request
// was.
type yamlBody struct {
	strictJSON
}

func (y yamlBody) Unmarshal(data []byte, v any) error {
	j, err := document.YAMLToJSON(data, y.limits)
	if err != nil {
		return err
	}
	return document.Describe(y.JSONPb.Unmarshal(j, v), j)
}

func (y yamlBody) NewDecoder(r io.Reader) runtime.Decoder {
	return readAll(r, y.Unmarshal)
}

// readAll decodes the whole body at once: limitBody has read it already,
// and the strict rules need all of it (nothing may follow the value).
func readAll(r io.Reader, unmarshal func([]byte, any) error) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return io.EOF
		}
		return unmarshal(b, v)
	})
}
