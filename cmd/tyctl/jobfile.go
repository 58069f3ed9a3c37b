package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"sigs.k8s.io/yaml"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// A job file is the Job resource exactly as the REST API takes it in a
// create's body, in YAML or JSON. Before protojson reads it, normalize
// forgives what people write by hand and reports, by path, what it cannot:
//
//   - enum values in short form or any case: WORKER, worker, ON_FAILURE,
//     OnFailure become REPLICA_TYPE_WORKER, RESTART_POLICY_ON_FAILURE;
//   - numbers and booleans where the API wants a string (cpu: 2,
//     args: [--epochs, 10], a label value 2024) become strings;
//   - field names are lowerCamelCase or the proto's snake_case, as protojson
//     accepts; an unknown one is an error with a suggestion, because a typo
//     silently dropped (gpus: 4) is a job that runs without GPUs.

// parseJobFile reads a Job from YAML or JSON.
func parseJobFile(data []byte) (*pb.Job, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty")
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // keep numbers as written, for the ones that become strings
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a job object (spec: {replicas: [...]}), got %s", describe(doc))
	}
	var n normalizer
	n.message(obj, (&pb.Job{}).ProtoReflect().Descriptor(), "")
	if len(n.problems) > 0 {
		return nil, n.problems
	}
	normalized, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	j := &pb.Job{}
	if err := protojson.Unmarshal(normalized, j); err != nil {
		return nil, err
	}
	return j, nil
}

// problems are what is wrong with a file, one line each.
type problems []string

func (p problems) Error() string {
	if len(p) == 1 {
		return p[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(p), strings.Join(p, "\n  "))
}

// normalizer rewrites a decoded JSON document in place, guided by the
// message descriptor, and collects problems with their paths.
type normalizer struct{ problems problems }

func (n *normalizer) fail(path, format string, args ...any) {
	n.problems = append(n.problems, path+": "+fmt.Sprintf(format, args...))
}

func (n *normalizer) message(obj map[string]any, md protoreflect.MessageDescriptor, path string) {
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p := key
		if path != "" {
			p = path + "." + key
		}
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(key))
		}
		if fd == nil {
			n.fail(p, "unknown field%s", suggest(md, key))
			continue
		}
		if obj[key] != nil {
			obj[key] = n.field(fd, obj[key], p)
		}
	}
}

func (n *normalizer) field(fd protoreflect.FieldDescriptor, v any, p string) any {
	switch {
	case fd.IsMap():
		m, ok := v.(map[string]any)
		if !ok {
			n.fail(p, "want a map of key: value, got %s", describe(v))
			return v
		}
		for k, mv := range m {
			m[k] = n.single(fd.MapValue(), mv, fmt.Sprintf("%s[%q]", p, k))
		}
	case fd.IsList():
		l, ok := v.([]any)
		if !ok {
			n.fail(p, "want a list, got %s", describe(v))
			return v
		}
		for i := range l {
			l[i] = n.single(fd, l[i], fmt.Sprintf("%s[%d]", p, i))
		}
	default:
		return n.single(fd, v, p)
	}
	return v
}

func (n *normalizer) single(fd protoreflect.FieldDescriptor, v any, p string) any {
	if v == nil {
		return nil
	}
	switch fd.Kind() {
	case protoreflect.MessageKind:
		if strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
			return v // well-known types have JSON forms of their own (a timestamp is a string)
		}
		m, ok := v.(map[string]any)
		if !ok {
			n.fail(p, "want an object, got %s", describe(v))
			return v
		}
		n.message(m, fd.Message(), p)
	case protoreflect.EnumKind:
		switch x := v.(type) {
		case string:
			ev, err := parseEnum(fd.Enum(), x)
			if err != nil {
				n.fail(p, "%v", err)
				return v
			}
			return string(ev.Name())
		case json.Number:
		default:
			n.fail(p, "want one of %s, got %s", strings.Join(enumChoices(fd.Enum()), ", "), describe(v))
		}
	case protoreflect.StringKind:
		switch x := v.(type) {
		case string:
		case json.Number:
			return x.String()
		case bool:
			return strconv.FormatBool(x)
		default:
			n.fail(p, "want a string, got %s", describe(v))
		}
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			n.fail(p, "want true or false, got %s", describe(v))
		}
	case protoreflect.BytesKind:
		if _, ok := v.(string); !ok {
			n.fail(p, "want base64 text, got %s", describe(v))
		}
	default: // numbers; protojson also takes them quoted
		switch x := v.(type) {
		case json.Number:
		case string:
			if _, err := strconv.ParseFloat(x, 64); err != nil {
				n.fail(p, "want a number, got %q", x)
			}
		default:
			n.fail(p, "want a number, got %s", describe(v))
		}
	}
	return v
}

// describe names what a decoded JSON value is, for problems; it never
// echoes an object or a list.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return strconv.Quote(x)
	case bool, json.Number:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%T", v)
}

// suggest names the field of md closest to an unknown key, if one is close.
func suggest(md protoreflect.MessageDescriptor, key string) string {
	best, bestDist := "", 3 // at most two edits away
	fields := md.Fields()
	for i := range fields.Len() {
		name := fields.Get(i).JSONName()
		d := editDistance(strings.ToLower(key), strings.ToLower(name))
		if squash(key) == squash(name) {
			d = 0
		}
		if d < bestDist && d < len(name)/2+1 {
			best, bestDist = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
