package tenant

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Cohort is a cohort's own nominal pool (issue 42): capacity that belongs
// to the cohort, not to any of its tenants, lent to its members as their
// unused nominal quota is. A cohort exists as soon as a tenant names it
// (Sharing.Cohort); a Cohort record only gives it a pool of its own.
type Cohort struct {
	// Name is the cohort's name, as tenants' sharing.cohort names it.
	Name string
	// Nominal is the pool; amounts that are unset are none (a pool, not
	// a limit: unlike a tenant's quota, zero is zero).
	Nominal Quota
	// GPUTypes is the pool's GPUs per model.
	GPUTypes map[string]int64

	// Tenants are the cohort's members, by id. Output only.
	Tenants    []string
	CreateTime time.Time
	UpdateTime time.Time
}

// ValidateCohortName checks a cohort's name: a DNS-1123 label.
func ValidateCohortName(name string) error { return dnsLabel("cohort", name, MaxCohortLength) }

// ValidateCohort checks a cohort's pool; violations name the field.
func ValidateCohort(c *Cohort) []FieldViolation {
	var v violations
	if err := ValidateCohortName(c.Name); err != nil {
		v.Add("name", "%s", err.Error())
	}
	before := len(v.Violations)
	v.quota(&c.Nominal)
	for i := before; i < len(v.Violations); i++ {
		f := &v.Violations[i]
		f.Field = "nominalQuota" + strings.TrimPrefix(f.Field, "quota")
		f.Description = strings.Replace(f.Description, " (0 means no limit)", "", 1)
	}
	models := make([]string, 0, len(c.GPUTypes))
	for m := range c.GPUTypes {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		path := fmt.Sprintf("gpuTypes[%q]", m)
		if m == "" || len(m) > 63 {
			v.Add(path, "a GPU model must be 1 to 63 characters (a node label value)")
		}
		if c.GPUTypes[m] < 0 {
			v.Add(path, "%d is negative", c.GPUTypes[m])
		}
	}
	return v.Violations
}
