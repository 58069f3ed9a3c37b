// Package document reads the bodies clients send (JSON, and YAML such as
// a TFJob manifest) strictly and within a budget, before anything builds a
// tree of them.
//
// A body of a few megabytes can describe millions of values ("[0,0,0,…]"),
// and a general YAML or JSON decoder turns each into an allocated node:
// the probe of issue 41 saw a 4 MB YAML list grow 150-fold in memory and
// take seconds of CPU. So every body is measured against Limits (values,
// nesting, output bytes) as it is read, and refused naming the limit as
// soon as it passes one.
//
// Strict means that what a reader could take two ways is an error naming
// the field, not a silent choice: a duplicate key, a second YAML document
// or JSON value after the first, trailing bytes, invalid UTF-8, YAML's
// .nan and .inf (JSON has neither), an integer too large for 64 bits, a
// list or map used as a key, merge keys (<<).
//
// YAMLToJSON turns YAML into the JSON the API's JSON rules then apply to;
// CheckJSON checks a JSON body; Describe turns a protojson error into a
// message naming the field. Errors are *Error: Field (a path such as
// spec.tfReplicaSpecs.Worker.replicas, empty for the whole body) and a
// plain Reason.
package document
