package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// Output formats (-o). json and yaml are the API's own JSON (protojson,
// lowerCamelCase names, enums by full name, int64 as strings), the same
// documents the REST API returns, so a script can switch between the two.
const (
	outTable = "table"
	outJSON  = "json"
	outYAML  = "yaml"
)

// print writes m as -o asks; table renders the human form.
func (a *app) print(m proto.Message, table func(io.Writer)) error {
	switch a.flags.output {
	case outJSON:
		b, err := marshalJSON(m, true)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	case outYAML:
		b, err := marshalYAML(m)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	}
	table(a.stdout)
	return nil
}

// marshalJSON is protojson re-spaced by encoding/json: protojson varies its
// whitespace on purpose, and output people diff should not.
func marshalJSON(m proto.Message, indent bool) ([]byte, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if indent {
		err = json.Indent(&buf, raw, "", "  ")
	} else {
		err = json.Compact(&buf, raw)
	}
	if err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// marshalYAML is the protojson document as YAML (keys sorted).
func marshalYAML(m proto.Message) ([]byte, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(raw)
}

// parsePairs reads key=value flags into a map; a key given twice is an error.
func parsePairs(flag string, pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			// Not echoed: the item may be a secret value given without its key.
			return nil, fmt.Errorf("--%s: want key=value, got an item without a key", flag)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--%s: key %q is given twice", flag, k)
		}
		out[k] = v
	}
	return out, nil
}
