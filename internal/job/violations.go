package job

import "fmt"

// FieldViolation is one problem with a request, for a google.rpc.BadRequest.
// Field is the path in the API's JSON names: "jobId", "labels",
// "spec.replicas[1].resources.gpu". Problems with a map entry are reported at
// the map ("labels", "spec.replicas[0].nodeSelector") with the key quoted in
// the description, because AIP-193 paths have no syntax for map keys.
//
// It is the one violation type of Trainyard: the tenant package and the API
// handlers report theirs with it too, and the API turns a list of them into
// INVALID_ARGUMENT in one place.
type FieldViolation struct {
	Field       string
	Description string
}

// Violations accumulates the problems of one request, so that a caller
// learns about all of them at once rather than one per attempt.
type Violations []FieldViolation

// Add records a problem with field; the description is formatted.
func (v *Violations) Add(field, format string, args ...any) {
	*v = append(*v, FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)})
}

// AddAt records vs with prefix put before each field ("tenant." + "quota.gpu").
func (v *Violations) AddAt(prefix string, vs []FieldViolation) {
	for _, x := range vs {
		*v = append(*v, FieldViolation{Field: prefix + x.Field, Description: x.Description})
	}
}
