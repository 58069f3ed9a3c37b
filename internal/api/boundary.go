package api

import (
	"bytes"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The text boundary. Postgres refuses a NUL byte in text and jsonb (SQLSTATE
// 22021, 22P05), and a request that carried one used to fail deep in a
// query as INTERNAL. Rather than remember the rule in every validator, every
// request message is walked once, before its handler runs, and every string
// in it — fields, list items, map keys and values, at any depth — that holds
// a NUL byte is INVALID_ARGUMENT naming its field. A field added to the API
// later is covered without anyone thinking of it.
//
// Two kinds of strings are left to others: resource names (fields called
// name or parent), which internal/resname parses (a bad id there is
// NOT_FOUND, never stored), and secret values, which go only to Kubernetes,
// where a Secret holds bytes and a NUL is a legitimate one.
//
// Invalid UTF-8 cannot arrive here: protobuf refuses it when the message is
// decoded (gRPC), and the gateway refuses it in paths and queries
// (internal/server) and bodies (protojson).

// textViolations lists the strings of m that hold a NUL byte, at their
// request-relative JSON paths (job.spec.replicas[0].command[1]); at most
// maxViolations+1 of them, enough for invalid to say there are more.
func textViolations(m proto.Message) job.Violations {
	w := textWalker{}
	w.message(m.ProtoReflect())
	return w.vs
}

// textWalker walks a request once, before its handler. Every request pays
// for the walk, so the path of the value being walked is kept in one
// buffer, extended and cut back as the walk goes down and up, and turned
// into a string only for a violation: building each field's path as a
// string cost a batch of 1,000 jobs a tenth of the API server's CPU.
type textWalker struct {
	vs   job.Violations
	path []byte
}

func (w *textWalker) full() bool { return len(w.vs) > maxViolations }

func (w *textWalker) message(m protoreflect.Message) {
	base := len(w.path)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		w.path = append(w.path[:base], fd.JSONName()...)
		switch {
		case fd.IsMap():
			w.mapEntries(fd, v.Map())
		case fd.IsList():
			l, field := v.List(), len(w.path)
			for i := 0; i < l.Len() && !w.full(); i++ {
				w.path = append(w.path[:field], '[')
				w.path = append(strconv.AppendInt(w.path, int64(i), 10), ']')
				w.value(fd, l.Get(i), "", false)
			}
		default:
			w.value(fd, v, "", false)
		}
		return !w.full()
	})
	w.path = w.path[:base]
}

func (w *textWalker) mapEntries(fd protoreflect.FieldDescriptor, m protoreflect.Map) {
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		key := k.String()
		if hasNUL(key) {
			w.vs.Add(string(w.path), "key %s contains a NUL byte, which cannot be stored", quote(key))
		}
		if fd.FullName() != secretData {
			w.value(fd.MapValue(), v, key, true)
		}
		return !w.full()
	})
}

// secretData holds secret values: bytes for Kubernetes, never stored by us.
var secretData = (&pb.Secret{}).ProtoReflect().Descriptor().Fields().ByName("data").FullName()

// value checks v, the value of fd at w.path; of map key key when inMap.
func (w *textWalker) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, key string, inMap bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if isResourceName(fd) || !hasNUL(v.String()) {
			return
		}
		if inMap {
			w.vs.Add(string(w.path), "the value of key %s contains a NUL byte, which cannot be stored", quote(key))
		} else {
			w.vs.Add(string(w.path), "contains a NUL byte, which cannot be stored")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		n := len(w.path)
		w.path = append(w.path, '.')
		w.message(v.Message())
		w.path = w.path[:n]
	}
}

// isResourceName reports whether fd holds a resource name (AIP-122 names
// them name or parent): resname parses those.
func isResourceName(fd protoreflect.FieldDescriptor) bool {
	return fd.Name() == "name" || fd.Name() == "parent"
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// checkText is the boundary check of one request: nil, or
// INVALID_ARGUMENT listing the strings that cannot be stored.
//
// A string holding a NUL byte holds it in the message's wire encoding too,
// so a request whose encoding has no zero byte at all (most: proto3 leaves
// zero values out, and no field number, length or non-zero varint ends in
// one) is let through without the walk: encoding it costs a fifth of
// walking it (the walk was 6 % of serve's CPU per CreateJob, issue 47).
func checkText(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	if wire, err := proto.Marshal(m); err == nil && bytes.IndexByte(wire, 0) < 0 {
		return nil
	}
	if vs := textViolations(m); len(vs) > 0 {
		return invalid(vs...)
	}
	return nil
}
