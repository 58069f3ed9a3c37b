package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/trainyard/trainyard/internal/jobfile"
)

// Every Trainyard enum follows AIP-126 (see internal/jobfile, which reads
// enum values the way people write them for job files and flags alike):
// people write and read the part after the prefix (WORKER, RUNNING); the
// wire and protojson want the whole name.

// enumPrefix is the prefix every value name of ed starts with.
func enumPrefix(ed protoreflect.EnumDescriptor) string { return jobfile.EnumPrefix(ed) }

// shortEnum is the name of e without its prefix (WORKER, RUNNING), "-" for
// the unspecified value, the number for a value this build does not know.
func shortEnum(e protoreflect.Enum) string {
	if e.Number() == 0 {
		return "-"
	}
	v := e.Descriptor().Values().ByNumber(e.Number())
	if v == nil {
		return fmt.Sprint(e.Number())
	}
	return strings.TrimPrefix(string(v.Name()), enumPrefix(e.Descriptor()))
}

// lowerEnum is shortEnum in lower case, as replica types are written in
// replica names (worker-0).
func lowerEnum(e protoreflect.Enum) string { return strings.ToLower(shortEnum(e)) }

// parseEnum finds the value s names: the full name (REPLICA_TYPE_WORKER) or
// the short one (WORKER), in any case, with or without underscores or dashes
// (ON_FAILURE, OnFailure, on-failure).
func parseEnum(ed protoreflect.EnumDescriptor, s string) (protoreflect.EnumValueDescriptor, error) {
	return jobfile.ParseEnum(ed, s)
}
