package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// CheckJSON checks that data is one JSON value within l: valid UTF-8, no
// duplicate key, nothing after the value.
func CheckJSON(data []byte, l Limits) error {
	l = l.withDefaults()
	if passes(data, l) {
		return nil
	}
	return walkCheck(data, l)
}

// walkCheck is CheckJSON with the walker alone: slower, and its errors
// name the field.
func walkCheck(data []byte, l Limits) error {
	if off := invalidUTF8At(data); off >= 0 {
		w := newWalker(data, l)
		w.walk(off)
		return errorf(w.path(), "not valid UTF-8 (at byte %d)", off)
	}
	w := newWalker(data, l)
	return w.walk(-1)
}

// passes says whether data passes every check of CheckJSON, read with
// jsontext, which refuses invalid UTF-8 and duplicate names itself and
// reads a token without allocating: a REST body's check cost 6 % of
// serve's CPU per CreateJob through encoding/json's tokens (issue 47).
// false sends data to the walker, whose error names the field.
func passes(data []byte, l Limits) bool {
	d := jsontext.NewDecoder(bytes.NewReader(data))
	values, ended := 0, false
	for {
		tok, err := d.ReadToken()
		if errors.Is(err, io.EOF) {
			return ended
		}
		if err != nil || ended { // jsontext reads a stream of values: a body is one
			return false
		}
		switch k := tok.Kind(); {
		case k == '}' || k == ']':
		case k == '"' && isName(d):
			continue
		default:
			if values++; values > l.MaxValues {
				return false
			}
			if (k == '{' || k == '[') && d.StackDepth() > l.MaxDepth {
				return false
			}
		}
		ended = d.StackDepth() == 0
	}
}

// isName says whether the string d just read is an object's member name:
// an object's count of names and values read is odd after a name.
func isName(d *jsontext.Decoder) bool {
	kind, n := d.StackIndex(d.StackDepth())
	return kind == '{' && n%2 == 1
}

// walker reads a JSON body token by token, keeping the path of the
// current value, so that an error names the field it is in.
type walker struct {
	data   []byte
	l      Limits
	dec    *json.Decoder
	stack  []frame
	values int
}

type frame struct {
	object bool
	key    string
	index  int
	hasKey bool
	keys   map[string]bool
}

func newWalker(data []byte, l Limits) *walker {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &walker{data: data, l: l, dec: dec}
}

func (w *walker) path() string {
	var b strings.Builder
	for _, f := range w.stack {
		switch {
		case f.object && f.hasKey:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		case !f.object:
			fmt.Fprintf(&b, "[%d]", f.index)
		}
	}
	return b.String()
}

// walk reads the whole body; with stopAt >= 0 it stops, without error,
// at the first token that ends past byte stopAt, leaving path() there.
func (w *walker) walk(stopAt int) error {
	started := false
	for {
		tok, err := w.dec.Token()
		if stopAt >= 0 && err != nil {
			return nil
		}
		past := stopAt >= 0 && w.dec.InputOffset() > int64(stopAt)
		if errors.Is(err, io.EOF) && len(w.stack) > 0 {
			return errorf(w.path(), "the body is not valid JSON: it ends before the value does")
		}
		if errors.Is(err, io.EOF) {
			if !started {
				return errorf("", "the body is empty")
			}
			return nil
		}
		if started && len(w.stack) == 0 && (err != nil || tok != nil) {
			return errorf("", "unexpected data after the JSON value: send one value")
		}
		if err != nil {
			return w.syntax(err)
		}
		started = true
		top := len(w.stack) - 1
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			w.stack = w.stack[:top]
			w.valueDone()
			continue
		}
		if top >= 0 && w.stack[top].object && !w.stack[top].hasKey {
			key := tok.(string)
			if w.seen(key) {
				w.stack[top].key, w.stack[top].hasKey = key, true
				return errorf(w.path(), "the key appears twice in one object")
			}
			w.stack[top].key, w.stack[top].hasKey = key, true
			if past {
				return nil
			}
			continue
		}
		if past {
			return nil
		}
		if w.values++; w.values > w.l.MaxValues {
			return tooMany(w.l)
		}
		if d, ok := tok.(json.Delim); ok {
			if len(w.stack) >= w.l.MaxDepth {
				return tooDeep(w.path(), w.l)
			}
			w.stack = append(w.stack, frame{object: d == '{'})
			continue
		}
		w.valueDone()
	}
}

// seen reports whether the current object already has key. Keys are kept
// per object only while it is read.
func (w *walker) seen(key string) bool {
	f := &w.stack[len(w.stack)-1]
	if f.keys == nil {
		f.keys = map[string]bool{}
	}
	if f.keys[key] {
		return true
	}
	f.keys[key] = true
	return false
}

func (w *walker) valueDone() {
	if top := len(w.stack) - 1; top >= 0 {
		if w.stack[top].object {
			w.stack[top].hasKey = false
		} else {
			w.stack[top].index++
		}
	}
}

var invalidCharacter = regexp.MustCompile(`^invalid character ('(?:[^'\\]|\\.)+')`)

func (w *walker) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		what := "unexpected input"
		if m := invalidCharacter.FindStringSubmatch(se.Error()); m != nil {
			what = "unexpected character " + m[1]
		}
		return errorf(w.path(), "the body is not valid JSON: %s at byte %d", what, se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errorf(w.path(), "the body is not valid JSON: it ends before the value does")
	}
	return errorf(w.path(), "the body is not valid JSON")
}

// PathAt names the field of data (a JSON document) at byte offset.
func PathAt(data []byte, offset int) string {
	w := newWalker(data, Limits{MaxValues: 1 << 30, MaxDepth: 1 << 20})
	_ = w.walk(offset)
	return w.path()
}

var (
	protojsonPosition = regexp.MustCompile(`\(line (\d+):(\d+)\):\s*(.*)$`)
	protojsonInvalid  = regexp.MustCompile(`^invalid value for (\S+) (?:field \S+|type): (.*)$`)
	protojsonWKT      = regexp.MustCompile(`^invalid (\S+) value (.*)$`)
)

// Describe turns an error of protojson decoding data into an *Error naming
// the field, with a plain reason instead of the library's text.
func Describe(err error, data []byte) error {
	var de *Error
	if err == nil || errors.As(err, &de) {
		return err
	}
	m := protojsonPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return errorf("", "the body does not match the request: %s", strings.TrimPrefix(err.Error(), "proto: "))
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	field := PathAt(data, offsetOf(data, line, col))
	reason := m[3]
	switch {
	case strings.HasPrefix(reason, "unknown field"):
		reason = "unknown field"
	case strings.HasPrefix(reason, "duplicate field"):
		reason = "the field is given twice"
	case protojsonInvalid.MatchString(reason):
		mm := protojsonInvalid.FindStringSubmatch(reason)
		reason = fmt.Sprintf("invalid value %s: expected %s", mm[2], Expected(mm[1]))
	case protojsonWKT.MatchString(reason):
		mm := protojsonWKT.FindStringSubmatch(reason)
		reason = fmt.Sprintf("invalid value %s: expected %s", mm[2], Expected(mm[1]))
	case strings.HasPrefix(reason, "unexpected token"):
		reason = "unexpected value " + strings.TrimPrefix(reason, "unexpected token ")
	}
	return &Error{Field: field, Reason: reason}
}

// Expected says in words what a value of kind (a protobuf kind, or a
// well-known type's full name) must be.
func Expected(kind string) string {
	switch kind {
	case "int32", "sint32", "sfixed32":
		return "an integer between -2147483648 and 2147483647"
	case "uint32", "fixed32":
		return "an integer between 0 and 4294967295"
	case "int64", "sint64", "sfixed64", "uint64", "fixed64":
		return "an integer"
	case "float", "double":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "bytes":
		return "base64 bytes"
	case "enum":
		return "one of the enum's names"
	case "google.protobuf.Timestamp":
		return "an RFC 3339 time such as 2026-01-02T15:04:05Z"
	case "google.protobuf.Duration":
		return "a duration such as 30s"
	}
	return kind
}

// offsetOf is the byte offset of protojson's (line, column): both count
// from 1, the column in runes.
func offsetOf(data []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(data); c++ {
		_, size := utf8.DecodeRune(data[off:])
		off += size
	}
	return off
}
