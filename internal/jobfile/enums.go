package jobfile

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Every Trainyard enum follows AIP-126: the zero value is
// <PREFIX>UNSPECIFIED and every other value starts with the same prefix
// (REPLICA_TYPE_UNSPECIFIED, REPLICA_TYPE_WORKER). People write and read the
// part after the prefix; the wire and protojson want the whole name.

// EnumPrefix is the prefix every value name of ed starts with.
func EnumPrefix(ed protoreflect.EnumDescriptor) string {
	zero := ed.Values().ByNumber(0)
	if zero == nil {
		return ""
	}
	return strings.TrimSuffix(string(zero.Name()), "UNSPECIFIED")
}

// ParseEnum finds the value s names: the full name (REPLICA_TYPE_WORKER) or
// the short one (WORKER), in any case, with or without underscores or dashes
// (ON_FAILURE, OnFailure, on-failure).
func ParseEnum(ed protoreflect.EnumDescriptor, s string) (protoreflect.EnumValueDescriptor, error) {
	if v := ed.Values().ByName(protoreflect.Name(s)); v != nil {
		return v, nil
	}
	prefix, want := EnumPrefix(ed), squash(s)
	var found protoreflect.EnumValueDescriptor
	values := ed.Values()
	for i := range values.Len() {
		v := values.Get(i)
		name := string(v.Name())
		if want != squash(name) && want != squash(strings.TrimPrefix(name, prefix)) {
			continue
		}
		if found != nil && found != v {
			return nil, fmt.Errorf("%q is ambiguous: %s or %s", s, found.Name(), v.Name())
		}
		found = v
	}
	if found == nil {
		return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(EnumChoices(ed), ", "))
	}
	return found, nil
}

// EnumChoices lists the short names of ed's values, the unspecified one left out.
func EnumChoices(ed protoreflect.EnumDescriptor) []string {
	prefix := EnumPrefix(ed)
	var out []string
	values := ed.Values()
	for i := range values.Len() {
		if v := values.Get(i); v.Number() != 0 {
			out = append(out, strings.TrimPrefix(string(v.Name()), prefix))
		}
	}
	return out
}

// squash upper-cases s and drops the separators people disagree about.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', ' ':
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(s)))
}
