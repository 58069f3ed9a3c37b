// Package experiment runs hyperparameter experiments (issue 46): an
// experiment is a job template with ${trial.NAME} placeholders, a search
// space, an objective and an algorithm; each of its trials is an ordinary
// Trainyard job of the experiment's tenant, so quotas, gangs, priorities,
// preemption and fair share apply to trials as to any job. The decisions
// (what to try next, which trials to stop, which is best) are package
// tune's; this package holds the resource's types and its validation, and
// package experimentctl the controller that turns decisions into jobs.
//
// # The controller
//
// One controller runs at a time: the process holding the scheduler lease
// runs it (scheduler.Config.OnLead, next to the EndpointSlice controller),
// so there is no second lease to keep and no two controllers ever create
// the same trial. Every Period, at once when it starts leading, and when
// a job changes or an experiment is created (store.ChannelEvents; at most
// one such pass every MinGap, 250 ms) it makes one pass over each RUNNING
// experiment:
//
//	trials + their jobs ──► a trial whose job ended: SUCCEEDED (the last
//	   │                     reported value of the objective metric is its
//	   │                     objective; none reported is FAILED), FAILED,
//	   │                     CANCELLED; a job deleted: FAILED
//	   ▼
//	curves of the objective (trial_metrics) ──► Stopper.Stop ──► trial
//	   │                     EARLY_STOPPED, then its job cancelled (its pods
//	   │                     get their grace period: a graceful stop)
//	   ▼
//	best trial; end? ──► goal reached (SUCCEEDED), more failed trials than
//	   │                  maxFailedTrials (FAILED), maxTrials created and
//	   │                  all finished, or the grid exhausted: the running
//	   │                  trials are cancelled and the experiment ends
//	   ▼
//	parallelism − running trials ──► Suggest(seed, trials so far) ──►
//	                     trial row, then its job (JobCreate, the API's path)
//
// # Trials and their jobs
//
// A trial's row is written before its job, with the job's uid chosen up
// front: the row is the intent, and a pass that finds a trial whose job
// does not exist yet creates it. The create carries the request id
// experiment-<uid>-<index>, so a job created by a pass that died before it
// could tell is adopted, and a job deleted since (the store answers
// NOT_FOUND for a request id whose job is gone) fails its trial rather
// than coming back. The job's id is <experiment>-<index> and its labels
// trainyard.dev/experiment and trainyard.dev/trial.
//
// Suggestions are reproducible: the rng of the pass is seeded from the
// experiment's seed and the number of trials created so far, and the
// history is every trial in index order.
//
// # Metrics
//
// A trial reports metrics by printing `trainyard-metric name=value
// step=N` lines. The worker that owns a running trial's job reads its
// chief's (or worker 0's) log every metrics interval and when the job
// ends, parses the lines with tune.ParseMetricLine and stores each point
// in trial_metrics, keyed by (job, name, step): a resumed trial that
// prints a step again keeps the first value.
package experiment
