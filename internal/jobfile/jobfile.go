package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/trainyard/trainyard/internal/document"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Problem is one thing wrong with a file: Field is a path such as
// documents[0].spec.replicas[1].count (documents[i] alone for the whole
// document, empty for the whole file).
type Problem struct {
	Field  string
	Reason string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Reason
	}
	return p.Field + ": " + p.Reason
}

// Error is every problem of a file, in document order.
type Error []Problem

func (e Error) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// separator is a line starting a new YAML document.
var separator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// Documents splits content into its non-empty documents (a part with
// nothing but comments and blank lines is empty), in order: the i-th is
// documents[i] in problems.
func Documents(content []byte) [][]byte {
	var out [][]byte
	for _, part := range separator.Split(string(content), -1) {
		if !blank(part) {
			out = append(out, []byte(part))
		}
	}
	return out
}

func blank(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// Parse reads every job of content (see the package doc). The limits bound
// the whole file: MaxBytes its size and the JSON it converts to, the
// others each document. A non-nil error is an Error.
func Parse(content []byte, l document.Limits) ([]*pb.Job, error) {
	maxBytes := l.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 4 << 20
	}
	if len(content) > maxBytes {
		return nil, Error{{Reason: fmt.Sprintf("the file is larger than %d bytes (the server's limit)", maxBytes)}}
	}
	docs := Documents(content)
	if len(docs) == 0 {
		return nil, Error{{Reason: "the file is empty (it holds no job, only comments or blank lines)"}}
	}
	var (
		bad    Error
		jobs   = make([]*pb.Job, 0, len(docs))
		budget = maxBytes
	)
	for i, d := range docs {
		prefix := fmt.Sprintf("documents[%d]", i)
		dl := l
		dl.MaxBytes = budget
		js, err := document.YAMLToJSON(d, dl)
		if err != nil {
			var de *document.Error
			if errors.As(err, &de) {
				bad = append(bad, Problem{Field: join(prefix, de.Field), Reason: de.Reason})
			} else {
				bad = append(bad, Problem{Field: prefix, Reason: err.Error()})
			}
			if strings.Contains(err.Error(), "the server's limit") {
				return nil, bad // the rest would pass it too; stop reading
			}
			continue
		}
		budget -= len(js)
		j, problems := parseOne(js, prefix)
		bad = append(bad, problems...)
		jobs = append(jobs, j)
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return jobs, nil
}

// parseOne normalizes and reads one document's JSON.
func parseOne(js []byte, prefix string) (*pb.Job, []Problem) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // keep numbers as written, for the ones that become strings
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, []Problem{{Field: prefix, Reason: err.Error()}}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, []Problem{{Field: prefix, Reason: fmt.Sprintf("want a job object (spec: {replicas: [...]}), got %s", describe(doc))}}
	}
	if kind, ok := obj["kind"].(string); ok {
		if kind == "TFJob" {
			return nil, []Problem{{Field: prefix, Reason: "a Kubeflow TFJob (kind: TFJob), not a Trainyard job file: import it with ImportTFJob, one manifest per file"}}
		}
		return nil, []Problem{{Field: prefix, Reason: fmt.Sprintf("kind %s: a job file is a Trainyard Job (spec: {replicas: [...]}) or a Kubeflow TFJob", kind)}}
	}
	n := normalizer{prefix: prefix}
	n.message(obj, (&pb.Job{}).ProtoReflect().Descriptor(), "")
	if len(n.problems) > 0 {
		return nil, n.problems
	}
	normalized, err := json.Marshal(obj)
	if err != nil {
		return nil, []Problem{{Field: prefix, Reason: err.Error()}}
	}
	j := &pb.Job{}
	if err := protojson.Unmarshal(normalized, j); err != nil {
		err = document.Describe(err, normalized)
		var de *document.Error
		if errors.As(err, &de) {
			return nil, []Problem{{Field: join(prefix, de.Field), Reason: de.Reason}}
		}
		return nil, []Problem{{Field: prefix, Reason: err.Error()}}
	}
	return j, nil
}

func join(prefix, field string) string {
	switch {
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	}
	return prefix + "." + field
}

// normalizer rewrites a decoded JSON document in place, guided by the
// message descriptor, and collects problems with their paths.
type normalizer struct {
	prefix   string
	problems []Problem
}

func (n *normalizer) fail(path, format string, args ...any) {
	n.problems = append(n.problems, Problem{Field: join(n.prefix, path), Reason: fmt.Sprintf(format, args...)})
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
		for _, k := range slices.Sorted(maps.Keys(m)) {
			m[k] = n.single(fd.MapValue(), m[k], fmt.Sprintf("%s[%q]", p, k))
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
			ev, err := ParseEnum(fd.Enum(), x)
			if err != nil {
				n.fail(p, "%v", err)
				return v
			}
			return string(ev.Name())
		case json.Number:
		default:
			n.fail(p, "want one of %s, got %s", strings.Join(EnumChoices(fd.Enum()), ", "), describe(v))
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
