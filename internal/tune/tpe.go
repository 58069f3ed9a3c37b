package tune

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat/distuv"
)

// Defaults of TPE's settings.
const (
	DefaultGamma         = 0.25
	DefaultStartupTrials = 10
	DefaultCandidates    = 24
	DefaultPriorWeight   = 1.0
)

// TPE is a Tree-structured Parzen Estimator: it models where good
// assignments lie and where bad ones do, and suggests what is most likely
// good relative to bad (see the package doc). Each parameter is modelled on
// its own. The zero value uses the defaults.
type TPE struct {
	// Gamma is the fraction of the finished trials, best first, that make
	// the good group, in (0, 1). Defaults to DefaultGamma.
	Gamma float64
	// StartupTrials is how many trials need an objective value before the
	// model is used; until then suggestions are Random's. Defaults to
	// DefaultStartupTrials.
	StartupTrials int
	// Candidates is how many values per parameter are drawn from the good
	// density and scored. Defaults to DefaultCandidates.
	Candidates int
	// PriorWeight is the weight, against one per trial, of the prior
	// component of each density: a broad normal over a numeric range, or
	// equal counts over choices. Defaults to DefaultPriorWeight.
	PriorWeight float64
}

func (t TPE) withDefaults() TPE {
	if t.Gamma == 0 {
		t.Gamma = DefaultGamma
	}
	if t.StartupTrials == 0 {
		t.StartupTrials = DefaultStartupTrials
	}
	if t.Candidates == 0 {
		t.Candidates = DefaultCandidates
	}
	if t.PriorWeight == 0 {
		t.PriorWeight = DefaultPriorWeight
	}
	return t
}

// Validate returns the settings' problems at paths under "tpe".
func (t TPE) Validate() []FieldViolation {
	t = t.withDefaults()
	var v []FieldViolation
	add := func(field, format string, args ...any) {
		v = append(v, FieldViolation{Field: "tpe." + field, Description: fmt.Sprintf(format, args...)})
	}
	if !(t.Gamma > 0 && t.Gamma < 1) {
		add("gamma", "%v is not in (0, 1)", t.Gamma)
	}
	if t.StartupTrials < 1 {
		add("startupTrials", "%d is less than 1", t.StartupTrials)
	}
	if t.Candidates < 1 || t.Candidates > 10_000 {
		add("candidates", "%d is not in [1, 10000]", t.Candidates)
	}
	if !(t.PriorWeight > 0 && t.PriorWeight <= 1000) {
		add("priorWeight", "%v is not in (0, 1000]", t.PriorWeight)
	}
	return v
}

// Suggest implements Algorithm.
func (t TPE) Suggest(space Space, obj Objective, history []Trial, n int, rng *rand.Rand) ([]Assignment, error) {
	t = t.withDefaults()
	if v := t.Validate(); len(v) > 0 {
		return nil, fmt.Errorf("%s: %s", v[0].Field, v[0].Description)
	}
	if err := checkRequest(space, n); err != nil {
		return nil, err
	}
	obs, err := observations(space, obj, history)
	if err != nil {
		return nil, err
	}
	if len(obs) < t.StartupTrials {
		return Random{}.Suggest(space, obj, history, n, rng)
	}
	good, bad := t.split(obs)
	models := make([]paramModel, len(space.Params))
	for i, p := range space.Params {
		models[i] = t.model(p, column(good, i), column(bad, i))
	}
	out := make([]Assignment, n)
	for k := range out {
		a := make(Assignment, len(space.Params))
		for i, p := range space.Params {
			a[p.Name] = p.Format(models[i].suggest(t.Candidates, rng))
		}
		out[k] = a
	}
	return out, nil
}

// split puts the best ceil(Gamma·n) of the n observations in the good
// group and the rest in the bad one. An early-stopped trial is always bad:
// its loss is an intermediate value, and it was stopped for being worse
// than its peers.
func (t TPE) split(obs []observation) (good, bad []observation) {
	ranked := slices.Clone(obs)
	slices.SortStableFunc(ranked, func(a, b observation) int {
		if a.stopped != b.stopped {
			if a.stopped {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.loss, b.loss)
	})
	nGood := int(math.Ceil(t.Gamma * float64(len(ranked))))
	for nGood > 0 && ranked[nGood-1].stopped {
		nGood--
	}
	return ranked[:nGood], ranked[nGood:]
}

func column(obs []observation, i int) []float64 {
	xs := make([]float64, len(obs))
	for k, o := range obs {
		xs[k] = o.x[i]
	}
	return xs
}

// paramModel is one parameter's pair of densities, l over good values and
// g over bad ones.
type paramModel interface {
	// suggest draws candidates from l and returns the one with the
	// greatest l/g, in the representation Param.Format takes.
	suggest(candidates int, rng *rand.Rand) float64
}

func (t TPE) model(p Param, good, bad []float64) paramModel {
	switch p.Kind {
	case KindCategorical:
		return t.choiceModel(len(p.Values), good, bad)
	case KindDiscrete:
		return t.choiceModel(len(p.Points), good, bad)
	}
	lo, hi := p.bounds()
	m := &numericModel{param: p}
	m.l = t.parzen(mapModel(p, good), lo, hi)
	m.g = t.parzen(mapModel(p, bad), lo, hi)
	return m
}

func mapModel(p Param, xs []float64) []float64 {
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = p.toModel(x)
	}
	return ys
}

// numericModel models a double or an int on its model axis (see
// Param.bounds); an int is modelled as continuous and rounded at the end.
type numericModel struct {
	param Param
	l, g  parzen
}

func (m *numericModel) suggest(candidates int, rng *rand.Rand) float64 {
	pick := distuv.NewCategorical(m.l.weights, rng)
	best, bestScore := 0.0, math.Inf(-1)
	for range candidates {
		y := m.l.sample(pick, rng)
		if s := m.l.logPDF(y) - m.g.logPDF(y); s > bestScore {
			best, bestScore = y, s
		}
	}
	x := m.param.fromModel(best)
	if m.param.Kind == KindInt {
		x = math.Round(x)
	}
	return math.Max(m.param.Min, math.Min(m.param.Max, x))
}

// parzen is a mixture of normals truncated to [lo, hi]: one per observed
// value, each with its own bandwidth, and a broad prior.
type parzen struct {
	lo, hi     float64
	components []distuv.Normal
	weights    []float64 // normalised
	logMass    []float64 // log of each component's mass inside [lo, hi]
	logWeights []float64
	terms      []float64 // logPDF's scratch, one per component
}

// parzen builds the density of ys. Each value's bandwidth is the larger of
// its gaps to its neighbours among the sorted values and the prior's
// centre, so that a crowded region is modelled finely and a sparse one
// smoothly; it is kept between a range/min(100, n+1) floor, so that a few
// close values do not make a spike, and the whole range.
func (t TPE) parzen(ys []float64, lo, hi float64) parzen {
	width := hi - lo
	mid := (lo + hi) / 2
	floor := width / math.Min(100, float64(len(ys))+1)
	sorted := append(slices.Clone(ys), mid)
	slices.Sort(sorted)
	sigmaOf := func(y float64) float64 {
		i, _ := slices.BinarySearch(sorted, y)
		gap := 0.0
		if i > 0 {
			gap = y - sorted[i-1]
		}
		if i+1 < len(sorted) {
			gap = math.Max(gap, sorted[i+1]-y)
		}
		return math.Max(floor, math.Min(width, gap))
	}
	p := parzen{lo: lo, hi: hi}
	add := func(mu, sigma, w float64) {
		d := distuv.Normal{Mu: mu, Sigma: sigma}
		p.components = append(p.components, d)
		p.weights = append(p.weights, w)
		p.logMass = append(p.logMass, math.Log(math.Max(d.CDF(hi)-d.CDF(lo), 1e-300)))
	}
	for _, y := range ys {
		add(y, sigmaOf(y), 1)
	}
	add(mid, width, t.PriorWeight)
	floats.Scale(1/floats.Sum(p.weights), p.weights)
	p.logWeights = make([]float64, len(p.weights))
	for i, w := range p.weights {
		p.logWeights[i] = math.Log(w)
	}
	return p
}

// sample draws from the truncated mixture: a component by weight (pick
// draws over p.weights), then a value of it by inverting its CDF over
// [lo, hi].
func (p *parzen) sample(pick distuv.Categorical, rng *rand.Rand) float64 {
	d := p.components[int(pick.Rand())]
	a, b := d.CDF(p.lo), d.CDF(p.hi)
	y := d.Quantile(a + rng.Float64()*(b-a))
	if math.IsNaN(y) || math.IsInf(y, 0) {
		y = d.Mu
	}
	return math.Max(p.lo, math.Min(p.hi, y))
}

func (p *parzen) logPDF(y float64) float64 {
	if p.terms == nil {
		p.terms = make([]float64, len(p.components))
	}
	for i, d := range p.components {
		p.terms[i] = p.logWeights[i] + d.LogProb(y) - p.logMass[i]
	}
	return floats.LogSumExp(p.terms)
}

// choiceModel is a categorical or discrete parameter's: the probability of
// each choice is its count among the group's trials plus an equal share of
// the prior weight.
type choiceModel struct {
	l, g []float64 // log probabilities of each choice
	pick []float64 // probabilities under l, to draw from
}

func (t TPE) choiceModel(k int, good, bad []float64) *choiceModel {
	probs := func(xs []float64) []float64 {
		p := make([]float64, k)
		for i := range p {
			p[i] = t.PriorWeight / float64(k)
		}
		for _, x := range xs {
			p[int(x)]++
		}
		floats.Scale(1/floats.Sum(p), p)
		return p
	}
	m := &choiceModel{pick: probs(good)}
	m.l = logs(m.pick)
	m.g = logs(probs(bad))
	return m
}

func logs(p []float64) []float64 {
	out := make([]float64, len(p))
	for i, x := range p {
		out[i] = math.Log(x)
	}
	return out
}

func (m *choiceModel) suggest(candidates int, rng *rand.Rand) float64 {
	draw := distuv.NewCategorical(m.pick, rng)
	best, bestScore := 0, math.Inf(-1)
	for range candidates {
		i := int(draw.Rand())
		if s := m.l[i] - m.g[i]; s > bestScore {
			best, bestScore = i, s
		}
	}
	return float64(best)
}
