package tune

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/trainyard/trainyard/internal/job"
)

// FieldViolation is the job package's: one problem at a path in the API's
// JSON names.
type FieldViolation = job.FieldViolation

// Kind is what values a parameter takes.
type Kind string

// Kinds of parameter.
const (
	// KindDouble is a real number in [Min, Max].
	KindDouble Kind = "double"
	// KindInt is an integer in [Min, Max], both ends included.
	KindInt Kind = "int"
	// KindCategorical is one of Values, unordered strings.
	KindCategorical Kind = "categorical"
	// KindDiscrete is one of Points, numbers.
	KindDiscrete Kind = "discrete"
)

// Scale is how a double or int parameter is searched.
type Scale string

// Scales. The empty Scale is linear.
const (
	ScaleLinear Scale = "linear"
	// ScaleLog searches the logarithm of the value uniformly: as many
	// trials between 1e-4 and 1e-3 as between 1e-2 and 1e-1.
	ScaleLog Scale = "log"
)

// Limits enforced by Space.Validate.
const (
	MaxParams       = 32
	MaxNameLength   = 63
	MaxChoices      = 1000 // values of a categorical, points of a discrete
	MaxValueLength  = 256  // bytes of one categorical value
	maxExactInteger = 1 << 53
)

// Param is one dimension of a search space.
type Param struct {
	// Name is an identifier (letters, digits, underscores; not starting
	// with a digit): templates refer to it as ${trial.Name}.
	Name string
	Kind Kind
	// Scale applies to doubles and ints; empty is linear.
	Scale Scale
	// Min and Max bound a double or an int (integral values for an int).
	Min, Max float64
	// Values are a categorical's choices.
	Values []string
	// Points are a discrete parameter's choices.
	Points []float64
}

// Space is the parameters an experiment searches, in a fixed order: the
// order is part of what makes suggestions reproducible from a seed.
type Space struct {
	Params []Param
}

// Assignment gives each parameter of a space a value, formatted as the
// template will show it: a double with the fewest digits that read back to
// the same float64 ("0.001", "1e-05"), an int in decimal, a discrete point as
// a double, a categorical value as itself.
type Assignment map[string]string

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidName reports whether name may name a parameter: an identifier a
// ${trial.NAME} placeholder can spell.
func ValidName(name string) error {
	if name == "" {
		return fmt.Errorf("is empty")
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%q is %d characters; at most %d are allowed", name, len(name), MaxNameLength)
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not an identifier (letters, digits and underscores, not starting with a digit)", name)
	}
	return nil
}

// Validate returns every problem with the space, one violation each, at
// paths under "parameters"; nil when the space is valid. Each description
// names the parameter.
func (s Space) Validate() []FieldViolation {
	var v job.Violations
	if len(s.Params) == 0 {
		v.Add("parameters", "at least one parameter is required")
	}
	if len(s.Params) > MaxParams {
		v.Add("parameters", "has %d parameters; at most %d are allowed", len(s.Params), MaxParams)
	}
	seen := map[string]int{}
	for i, p := range s.Params {
		at := fmt.Sprintf("parameters[%d].", i)
		if err := ValidName(p.Name); err != nil {
			v.Add(at+"name", "%v", err)
		} else if j, dup := seen[p.Name]; dup {
			v.Add(at+"name", "%q is also the name of parameters[%d]", p.Name, j)
		} else {
			seen[p.Name] = i
		}
		v.AddAt(at, p.validate())
	}
	return v
}

func (p Param) validate() []FieldViolation {
	var v job.Violations
	add := func(field, format string, args ...any) {
		v.Add(field, "parameter %q: %s", p.Name, fmt.Sprintf(format, args...))
	}
	numeric := p.Kind == KindDouble || p.Kind == KindInt
	switch p.Scale {
	case "", ScaleLinear:
	case ScaleLog:
		if !numeric {
			add("scale", "only double and int parameters have a scale")
		}
	default:
		add("scale", "%q is not a scale (linear or log)", p.Scale)
	}
	if !numeric && (p.Min != 0 || p.Max != 0) {
		add("min", "only double and int parameters have min and max")
	}
	if p.Kind != KindCategorical && len(p.Values) > 0 {
		add("values", "only categorical parameters have values")
	}
	if p.Kind != KindDiscrete && len(p.Points) > 0 {
		add("points", "only discrete parameters have points")
	}
	switch p.Kind {
	case KindDouble, KindInt:
		p.validateRange(add)
	case KindCategorical:
		if len(p.Values) == 0 {
			add("values", "at least one value is required")
		}
		if len(p.Values) > MaxChoices {
			add("values", "has %d values; at most %d are allowed", len(p.Values), MaxChoices)
		}
		seen := map[string]bool{}
		for i, x := range p.Values {
			switch {
			case x == "":
				add(fmt.Sprintf("values[%d]", i), "is empty")
			case len(x) > MaxValueLength:
				add(fmt.Sprintf("values[%d]", i), "is %d bytes; at most %d are allowed", len(x), MaxValueLength)
			case seen[x]:
				add(fmt.Sprintf("values[%d]", i), "%q is listed twice", x)
			}
			seen[x] = true
		}
	case KindDiscrete:
		if len(p.Points) == 0 {
			add("points", "at least one point is required")
		}
		if len(p.Points) > MaxChoices {
			add("points", "has %d points; at most %d are allowed", len(p.Points), MaxChoices)
		}
		seen := map[float64]bool{}
		for i, x := range p.Points {
			switch {
			case math.IsNaN(x) || math.IsInf(x, 0):
				add(fmt.Sprintf("points[%d]", i), "%v is not a finite number", x)
			case seen[x]:
				add(fmt.Sprintf("points[%d]", i), "%v is listed twice", x)
			}
			seen[x] = true
		}
	case "":
		add("kind", "is required (double, int, categorical or discrete)")
	default:
		add("kind", "%q is not a kind (double, int, categorical or discrete)", p.Kind)
	}
	return v
}

func (p Param) validateRange(add func(field, format string, args ...any)) {
	ok := true
	for _, f := range []struct {
		field string
		x     float64
	}{{"min", p.Min}, {"max", p.Max}} {
		switch {
		case math.IsNaN(f.x) || math.IsInf(f.x, 0):
			add(f.field, "%v is not a finite number", f.x)
			ok = false
		case p.Kind == KindInt && (f.x != math.Trunc(f.x) || math.Abs(f.x) > maxExactInteger):
			add(f.field, "%v is not an integer of at most 2^53 in magnitude", f.x)
			ok = false
		}
	}
	if !ok {
		return
	}
	if p.Min >= p.Max {
		add("max", "max %v must be greater than min %v", p.Max, p.Min)
	}
	if p.Scale == ScaleLog && p.Min <= 0 {
		add("min", "min %v must be greater than 0 on a log scale", p.Min)
	}
}

// Format is the one way a value of p is written into an Assignment. x is
// the number of a double or int, or the index into Values or Points of a
// categorical or discrete parameter.
func (p Param) Format(x float64) string {
	switch p.Kind {
	case KindInt:
		return strconv.FormatInt(int64(x), 10)
	case KindCategorical:
		return p.Values[int(x)]
	case KindDiscrete:
		return strconv.FormatFloat(p.Points[int(x)], 'g', -1, 64)
	default:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
}

// parse is Format's inverse: the number of a double or int, or the index
// into Values or Points of a categorical or discrete parameter. It fails
// when s is not a value of p.
func (p Param) parse(s string) (float64, error) {
	switch p.Kind {
	case KindCategorical:
		if i := slices.Index(p.Values, s); i >= 0 {
			return float64(i), nil
		}
		return 0, fmt.Errorf("%q is not one of the values of parameter %q", s, p.Name)
	case KindDiscrete:
		x, err := strconv.ParseFloat(s, 64)
		if i := slices.Index(p.Points, x); err == nil && i >= 0 {
			return float64(i), nil
		}
		return 0, fmt.Errorf("%q is not one of the points of parameter %q", s, p.Name)
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < p.Min || x > p.Max || (p.Kind == KindInt && x != math.Trunc(x)) {
		what := "a number"
		if p.Kind == KindInt {
			what = "an integer"
		}
		return 0, fmt.Errorf("%q is not %s in [%v, %v] for parameter %q", s, what, p.Min, p.Max, p.Name)
	}
	return x, nil
}

// Check reports whether a holds a value of every parameter of s and
// nothing else.
func (s Space) Check(a Assignment) error {
	for _, p := range s.Params {
		v, ok := a[p.Name]
		if !ok {
			return fmt.Errorf("no value for parameter %q", p.Name)
		}
		if _, err := p.parse(v); err != nil {
			return err
		}
	}
	if len(a) != len(s.Params) {
		for _, name := range slices.Sorted(maps.Keys(a)) {
			if !slices.ContainsFunc(s.Params, func(p Param) bool { return p.Name == name }) {
				return fmt.Errorf("%q is not a parameter of the search space", name)
			}
		}
	}
	return nil
}
