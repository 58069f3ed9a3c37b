// Package tune is the decision core of hyperparameter experiments: what to
// try next, which running trials to stop, and how trials report metrics.
// It does no I/O, reads no clock, and draws randomness only from the
// *rand.Rand it is given, so the same inputs and seed give the same
// answers. The experiments controller owns the state (trials, their jobs,
// their metric points) and calls in here for every decision.
//
//	submit:  Space.Validate, Objective.Validate, Placeholders(template)
//
//	history ──► Algorithm.Suggest ──► Assignment ──► Expand(template) ──► trial job
//	   ▲                                                                      │ stdout
//	   │                                                                      ▼
//	   └───────── trials, curves ◄──────── ParseMetricLine ◄──────────── pod log line
//	                   │
//	                   └──► Stopper.Stop ──► []Stop ──► stop the job: EARLY_STOPPED
//
// # Search space and assignments
//
// A Space is an ordered list of parameters. A double or an int has a range
// [Min, Max] and a scale: linear, or log, where the logarithm of the value
// is what is spread evenly (so a learning rate between 1e-5 and 1e-1 is as
// likely to fall in each of the four decades). A categorical parameter
// picks one of a list of strings; a discrete one picks one of a list of
// numbers. Names are identifiers, because templates spell them as
// ${trial.NAME}. Validate reports every problem at once, each at its field
// path (parameters[2].min) and naming the parameter.
//
// An Assignment maps every parameter name to its value already formatted
// for a template, by Param.Format alone: the shortest decimal that reads
// back to the same float64 for a double, a decimal integer for an int. It
// is also what the controller stores, and what the history hands back to
// the algorithms, which parse it again (Space.Check tells whether one
// fits a space).
//
// # Templates
//
// Expand replaces ${trial.NAME} in a string (a command item, an argument,
// an environment value). Only the ${trial. prefix is ours, so a shell's
// ${HOME} passes through; $${trial.NAME} writes the placeholder itself.
// A name the assignment lacks is an error quoting the placeholder;
// Placeholders lists the names so a submission can be checked against
// its space before any trial runs.
//
// # Algorithms
//
// Every algorithm implements Algorithm.Suggest(space, objective, history,
// n, rng). The history is every trial so far, whatever its state. The
// objective's direction is applied in one place (Objective.loss): the
// algorithms and stopping rules see only losses, smaller being better, and
// the controller asks Objective.Better, Objective.Reached (the goal) and
// Best (the best trial) rather than comparing values itself.
// Reproducibility is the caller's half of the contract: seed rng from the
// experiment's seed and the number of trials created so far, and a
// restarted controller suggests the same assignments again.
//
// Random draws each parameter independently and uniformly on its scale; an
// int's range is widened by half a unit each side before rounding so that
// its two ends are as likely as the values between.
//
// Grid enumerates the Cartesian product of every parameter's values in a
// fixed order and suggests the first points no trial has yet had (failed
// ones included, so a failing point is not retried forever). A double takes
// PointsPerDouble evenly spaced values on its scale, ends included; ints,
// categoricals and discrete parameters take each of their values. When the
// grid runs out it says so with ErrExhausted, and Size tells up front how
// many trials a full sweep is. A grid over MaxGridSize points is refused.
//
// TPE is the Tree-structured Parzen Estimator of Bergstra et al. (2011), as
// Hyperopt and Optuna popularised it. Instead of modelling the loss as a
// function of the parameters, it models the parameters given the loss:
//
//   - sort the finished trials by loss and cut them at the quantile Gamma:
//     the best ceil(Gamma·n) are "good", the rest "bad". A trial stopped
//     early has only an intermediate loss and was stopped for lagging its
//     peers, so it is always bad. Failed and running trials are left out.
//   - for each parameter, estimate a density l(x) from the good trials'
//     values and g(x) from the bad ones'. A numeric parameter gets a Parzen
//     (kernel) estimator: one normal per value, on the log axis for a log
//     scale, each with its own bandwidth, the larger of its gaps to its
//     neighbours, bounded below by range/min(100, n+1) and above by the
//     range; plus one broad prior normal centred on the range with a
//     weight of PriorWeight. Each normal is truncated to the range. A
//     categorical or discrete parameter gets smoothed counts: each choice's
//     count plus an equal share of PriorWeight.
//   - draw Candidates values from l and keep the one with the highest
//     l(x)/g(x). Under TPE's model, that ratio ranks candidates as expected
//     improvement over the Gamma quantile does, so this maximises expected
//     improvement without ever modelling the loss itself.
//
// Parameters are modelled independently (each picks its own best
// candidate), which is what keeps a suggestion cheap: about 10 ms with 500
// finished trials in eight dimensions (BenchmarkTPESuggest). Until
// StartupTrials trials have a loss there is nothing to model, and TPE
// suggests what Random would. Ints are modelled as continuous and rounded.
// The test TestTPEBeatsRandomOnBranin holds it to a margin over random
// search on the Branin function.
//
// # Early stopping
//
// A Stopper looks at every trial's curve of the objective metric (its
// intermediate points, by step) and returns the running trials to stop
// now, each with a reason that quotes the figures. It keeps no state: the
// controller calls it whenever points arrive.
//
// MedianStop is the median stopping rule of Google Vizier: at its latest
// step s, a trial whose best value so far is worse than the median of the
// other trials' running averages up to s is stopped. Only trials that
// reached s count, failed ones never; nothing is judged before GraceSteps
// or with fewer than MinTrials others to compare with.
//
// ASHA is asynchronous successive halving (Li et al., 2018) used as a
// stopping rule. Rungs sit at steps MinResource·Eta^k. A running trial is
// judged at the highest rung it has reached, with the value of its first
// point at or past the rung, against every trial that reached that rung:
// it continues only if fewer than n/Eta of the n trials there did strictly
// better — the top 1/Eta. So the first trial at a rung goes on, and as
// more arrive the bar rises. Unlike the paper's promotion scheme, a
// trial is judged again as others reach its rung, so one that was ahead
// early can be stopped later, before its next rung.
//
// # Metric lines
//
// A trial reports a metric by printing a line to stdout:
//
//	trainyard-metric loss=0.231 accuracy=0.917 step=1200
//
// ParseMetricLine reads one log line: not a metric line (ignored), a
// metric line, or a metric line rejected as a whole with the reason (a
// NaN or infinite value, a name given twice, a bad step). MetricLine.String
// writes one back, for simulated trials. FuzzParseMetricLine checks that
// whatever is accepted is well formed and reads back the same.
package tune
