package tune

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MetricMarker starts a line that reports metrics:
//
//	trainyard-metric loss=0.231 accuracy=0.917 step=1200
//
// Fields are separated by spaces or tabs. Every field after the marker is
// name=value; step=N (a non-negative integer) is the step the values are
// at, and may be left out. Lines that do not start with the marker (after
// leading spaces) are not metric lines and are ignored.
const MetricMarker = "trainyard-metric"

// Limits of a metric line.
const (
	MaxMetricLineBytes  = 4096
	MaxMetricNameLength = 128
)

var metricNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:/-]*$`)

// ValidMetricName reports whether name may name a metric: a letter or
// underscore, then letters, digits and _ . : / -, as TensorBoard tags are
// usually written ("val/loss").
func ValidMetricName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("is empty")
	case len(name) > MaxMetricNameLength:
		return fmt.Errorf("%q is %d characters; at most %d are allowed", truncate(name, 40), len(name), MaxMetricNameLength)
	case name == "step":
		return fmt.Errorf("step is the step of a metric line, not a metric")
	case !metricNameRE.MatchString(name):
		return fmt.Errorf("%q is not a metric name (a letter or _, then letters, digits and _ . : / -)", name)
	}
	return nil
}

// Sample is one named value of a metric line.
type Sample struct {
	Name  string
	Value float64
}

// MetricLine is a parsed metric line.
type MetricLine struct {
	Samples []Sample // in the order written; names are unique
	Step    int64
	HasStep bool
}

// ParseMetricLine parses one line of a trial's output. ok is false, with
// no error, for a line that is not a metric line. A metric line with any
// bad field is rejected as a whole, with an error saying which field and
// why: a value that is NaN or infinite, a name written twice, a step that
// is not a non-negative integer, no name=value at all.
func ParseMetricLine(line string) (m MetricLine, ok bool, err error) {
	line = strings.TrimRight(line, "\r\n")
	rest, found := strings.CutPrefix(strings.TrimLeft(line, " \t"), MetricMarker)
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return MetricLine{}, false, nil
	}
	if len(line) > MaxMetricLineBytes {
		return MetricLine{}, true, fmt.Errorf("the line is %d bytes; at most %d are allowed", len(line), MaxMetricLineBytes)
	}
	seen := map[string]bool{}
	for _, field := range strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' }) {
		name, value, hasEq := strings.Cut(field, "=")
		if !hasEq {
			return MetricLine{}, true, fmt.Errorf("field %q is not name=value", truncate(field, 40))
		}
		if name == "step" {
			if m.HasStep {
				return MetricLine{}, true, fmt.Errorf("step is given twice")
			}
			m.Step, err = strconv.ParseInt(value, 10, 64)
			if err != nil || m.Step < 0 {
				return MetricLine{}, true, fmt.Errorf("step=%s: not a non-negative integer", truncate(value, 40))
			}
			m.HasStep = true
			continue
		}
		if err := ValidMetricName(name); err != nil {
			return MetricLine{}, true, fmt.Errorf("metric name %v", err)
		}
		if seen[name] {
			return MetricLine{}, true, fmt.Errorf("metric %s is given twice", name)
		}
		seen[name] = true
		x, err := strconv.ParseFloat(value, 64)
		switch {
		case err != nil && !isRangeError(err):
			return MetricLine{}, true, fmt.Errorf("%s=%s: not a number", name, truncate(value, 40))
		case err != nil || math.IsInf(x, 0):
			return MetricLine{}, true, fmt.Errorf("%s=%s: infinite values are not accepted", name, truncate(value, 40))
		case math.IsNaN(x):
			return MetricLine{}, true, fmt.Errorf("%s=%s: NaN is not accepted", name, truncate(value, 40))
		}
		m.Samples = append(m.Samples, Sample{Name: name, Value: x})
	}
	if len(m.Samples) == 0 {
		return MetricLine{}, true, fmt.Errorf("no name=value metric on the line")
	}
	return m, true, nil
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// String writes m as a metric line ParseMetricLine reads back to m (for
// simulated trials, and the trial report helpers of clients).
func (m MetricLine) String() string {
	var b strings.Builder
	b.WriteString(MetricMarker)
	for _, s := range m.Samples {
		fmt.Fprintf(&b, " %s=%s", s.Name, strconv.FormatFloat(s.Value, 'g', -1, 64))
	}
	if m.HasStep {
		fmt.Fprintf(&b, " step=%d", m.Step)
	}
	return b.String()
}
