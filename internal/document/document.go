package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Limits bound what one body may hold. Zero fields take the defaults.
type Limits struct {
	// MaxValues caps the values (scalars, lists and maps, alias
	// expansions included). Defaults to 100,000: a TFJob has hundreds.
	MaxValues int
	// MaxDepth caps the nesting of lists and maps. Defaults to 64.
	MaxDepth int
	// MaxBytes caps the JSON YAMLToJSON produces. Defaults to 4 MiB.
	MaxBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxValues <= 0 {
		l.MaxValues = 100_000
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 64
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 4 << 20
	}
	return l
}

// Error is a body that cannot be read, naming where.
type Error struct {
	Field  string // path in the document; empty for the whole body
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func errorf(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func tooMany(l Limits) error {
	return errorf("", "the body has more than %d values (the server's limit)", l.MaxValues)
}

func tooDeep(field string, l Limits) error {
	return errorf(field, "nested more than %d levels deep (the server's limit)", l.MaxDepth)
}

// YAMLToJSON converts one YAML document into JSON within l.
func YAMLToJSON(data []byte, l Limits) ([]byte, error) {
	l = l.withDefaults()
	// Before the parser builds a node for every value: each value after
	// the first is introduced by one of these bytes, and a mapping entry
	// is two values per introducer, so 2*n+2 bounds the nodes parsed.
	if n := separators(data); n > l.MaxValues {
		return nil, tooMany(l)
	}
	if !utf8.Valid(data) {
		return nil, errorf("", "the body is not valid UTF-8 (at byte %d)", invalidUTF8At(data))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errorf("", "the body is empty")
		}
		return nil, errorf("", "the body is not YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return nil, errorf("", "the body holds more than one YAML document (a second one starts after ---); send one")
	}
	c := converter{l: l}
	if len(doc.Content) != 1 {
		return nil, errorf("", "the body is empty")
	}
	if err := c.node(doc.Content[0], "", 0); err != nil {
		return nil, err
	}
	return c.out.Bytes(), nil
}

func separators(data []byte) int {
	n := 0
	for _, b := range data {
		switch b {
		case ',', '[', '{', '-', ':', '?', '\n':
			n++
		}
	}
	return n
}

type converter struct {
	l      Limits
	out    bytes.Buffer
	values int
}

var integerText = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

func (c *converter) node(n *yaml.Node, path string, depth int) error {
	if c.values++; c.values > c.l.MaxValues {
		return tooMany(c.l)
	}
	if c.out.Len() > c.l.MaxBytes {
		return errorf("", "the body is larger than %d bytes once converted to JSON (the server's limit)", c.l.MaxBytes)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.node(n.Alias, path, depth)
	case yaml.SequenceNode:
		if depth >= c.l.MaxDepth {
			return tooDeep(path, c.l)
		}
		c.out.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				c.out.WriteByte(',')
			}
			if err := c.node(item, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		c.out.WriteByte(']')
		return nil
	case yaml.MappingNode:
		if depth >= c.l.MaxDepth {
			return tooDeep(path, c.l)
		}
		c.out.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return errorf(path, "a key must be a plain value, not a list or map (line %d)", k.Line)
			}
			if k.Tag == "!!merge" {
				return errorf(path, "merge keys (<<) are not supported (line %d); write the fields out", k.Line)
			}
			field := join(path, k.Value)
			if seen[k.Value] {
				return errorf(field, "the key appears twice in one map (line %d)", k.Line)
			}
			seen[k.Value] = true
			if i > 0 {
				c.out.WriteByte(',')
			}
			writeString(&c.out, k.Value)
			c.out.WriteByte(':')
			if err := c.node(v, field, depth+1); err != nil {
				return err
			}
		}
		c.out.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return c.scalar(n, path)
	}
	return errorf(path, "unsupported YAML (line %d)", n.Line)
}

func (c *converter) scalar(n *yaml.Node, path string) error {
	switch n.ShortTag() {
	case "!!null":
		c.out.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return errorf(path, "%q is not a boolean", n.Value)
		}
		c.out.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		var f float64
		if n.ShortTag() == "!!int" {
			var i int64
			if err := n.Decode(&i); err != nil {
				var u uint64
				if err := n.Decode(&u); err != nil {
					return errorf(path, "%s is too large: integers must fit in 64 bits", n.Value)
				}
				c.out.WriteString(strconv.FormatUint(u, 10))
				return nil
			}
			c.out.WriteString(strconv.FormatInt(i, 10))
			return nil
		}
		if integerText.MatchString(n.Value) {
			// An integer literal the resolver made a float: too large.
			return errorf(path, "%s is too large: integers must fit in 64 bits", n.Value)
		}
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return errorf(path, "%s is not a finite number (JSON has no NaN or infinity)", n.Value)
		}
		c.out.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		// Strings, and timestamps and binary as the text they were written
		// as (as Kubernetes reads them).
		writeString(&c.out, n.Value)
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func writeString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s)
	b.Write(j)
}

func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}
