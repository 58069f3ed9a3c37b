package tfjob

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/trainyard/trainyard/internal/job"
)

// ErrNotTFJob is returned (wrapped, with the reason) for input that is not
// one kubeflow.org/v1 TFJob: not YAML or JSON, another kind, another
// version, several documents, or fields of the wrong type.
var ErrNotTFJob = errors.New("not a kubeflow.org/v1 TFJob")

// Options tune a conversion.
type Options struct {
	// PriorityClasses maps Kubernetes PriorityClass names, as
	// runPolicy.schedulingPolicy.priorityClass and a pod template's
	// priorityClassName use them, to Trainyard priorities (-1000..1000).
	// A class not listed cannot be honoured. Defaults to none.
	PriorityClasses map[string]int32
}

// Result is a converted TFJob.
type Result struct {
	// Job has the TFJob's name (metadata.name), labels and converted
	// spec; it is neither defaulted nor validated (the API does both, as
	// for any job).
	Job    job.Job
	Issues []Issue
}

// Convert turns a TFJob manifest (YAML or JSON, one document) into a
// Trainyard job. The error wraps ErrNotTFJob; everything else the manifest
// holds that Trainyard does not carry over as written is in
// Result.Issues, field by field.
func Convert(manifest []byte, opts Options) (Result, error) {
	data, err := toJSON(manifest)
	if err != nil {
		return Result{}, err
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &head); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrNotTFJob, err)
	}
	switch {
	case head.Kind != Kind:
		return Result{}, fmt.Errorf("%w: kind is %q; Trainyard imports kind %s (apiVersion %s); a Trainyard job file is submitted as it is", ErrNotTFJob, head.Kind, Kind, APIVersion)
	case head.APIVersion != APIVersion:
		return Result{}, fmt.Errorf("%w: apiVersion is %q; Trainyard imports %s (convert older TFJobs with Kubeflow's own tools first)", ErrNotTFJob, head.APIVersion, APIVersion)
	}
	var tf TFJob
	strict, err := sigsjson.UnmarshalStrict(data, &tf, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrNotTFJob, err)
	}
	c := &converter{opts: opts}
	for _, e := range strict {
		c.strictError(e)
	}
	c.convert(&tf)
	return Result{Job: c.job, Issues: c.issues}, nil
}

// toJSON reads one YAML (or JSON) document.
func toJSON(manifest []byte) ([]byte, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(manifest))
	docs := 0
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotTFJob, err)
		}
		docs++
	}
	switch {
	case docs == 0:
		return nil, fmt.Errorf("%w: the manifest is empty", ErrNotTFJob)
	case docs > 1:
		return nil, fmt.Errorf("%w: the manifest holds %d documents; import one TFJob at a time", ErrNotTFJob, docs)
	}
	data, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotTFJob, err)
	}
	return data, nil
}

var strictField = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// strictError reports a field the TFJob's schema does not have, or one
// given twice, at its path.
func (c *converter) strictError(e error) {
	m := strictField.FindStringSubmatch(e.Error())
	if m == nil {
		c.issues.unsupported("", "%v", e)
		return
	}
	if m[1] == "duplicate" {
		c.issues.unsupported(m[2], "is given twice; only the last value would count")
		return
	}
	c.issues.unsupported(m[2], "is not a field of kubeflow.org/v1 TFJob or of a Kubernetes pod template (misspelt?)")
}

// converter holds one conversion's output.
type converter struct {
	opts   Options
	job    job.Job
	issues issues
	// priority is the priority found so far and where it came from.
	priority      *int32
	priorityField string
	// gracePeriod is the longest termination grace period of the pod
	// templates, and the field that set it.
	gracePeriod      *int64
	gracePeriodField string
	minAvail         *int32
	minAvailField    string
}

func (c *converter) convert(tf *TFJob) {
	c.metadata(tf)
	spec := path("spec")
	c.runPolicy(spec.f("runPolicy"), &tf.Spec.RunPolicy)
	if sp := tf.Spec.SuccessPolicy; sp != nil {
		switch *sp {
		case "":
		case "AllWorkers":
			c.job.Spec.SuccessPolicy = job.SuccessAllWorkers
		default:
			c.issues.unsupported("spec.successPolicy", "%q is not a TFJob success policy (\"\" or \"AllWorkers\")", *sp)
		}
	}
	if tf.Spec.EnableDynamicWorker {
		c.issues.unsupported("spec.enableDynamicWorker", "Trainyard runs a fixed set of workers; workers cannot join or leave a running job")
	}
	c.replicas(spec.f("tfReplicaSpecs"), tf.Spec.TFReplicaSpecs)
	if c.minAvail != nil {
		c.minAvailable(c.minAvailField, *c.minAvail)
	}
	if tf.Spec.RunPolicy.BackoffLimit == nil {
		c.unlimitedRestarts()
	}
	if c.priority != nil {
		c.job.Spec.Priority = *c.priority
	}
	c.job.Spec.TerminationGracePeriodSeconds = c.gracePeriod
	if len(tf.Status) > 0 && string(tf.Status) != "null" && string(tf.Status) != "{}" {
		c.issues.note("status", "is the training operator's record of an earlier run; Trainyard keeps its own")
	}
}

// metadata carries the name and labels over; the rest is the cluster's.
func (c *converter) metadata(tf *TFJob) {
	m := tf.ObjectMeta
	c.job.Name = m.Name
	c.job.Labels = m.Labels
	at := path("metadata")
	if m.Name == "" && m.GenerateName != "" {
		c.issues.note(string(at.f("generateName")), "Trainyard generates a job id when neither the request nor metadata.name gives one")
	}
	if m.Namespace != "" {
		c.issues.note(string(at.f("namespace")), "the job runs in its tenant's namespace, not in %q", m.Namespace)
	}
	for _, k := range sortedKeys(m.Annotations) {
		c.issues.note(string(at.f("annotations")), "annotation %q is not kept: Trainyard jobs have labels, not annotations (pod template annotations are kept)", k)
	}
	m.Name, m.GenerateName, m.Namespace, m.Labels, m.Annotations = "", "", "", nil, nil
	// What a cluster sets on the objects it stores, as in a manifest
	// exported with kubectl get -o yaml: meaningless for a new job.
	m.UID, m.ResourceVersion, m.Generation, m.SelfLink = "", "", 0, ""
	m.CreationTimestamp = metav1.Time{}
	m.ManagedFields, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = nil, nil, nil
	var noted issues
	noted.leftovers(at, m, "")
	for _, i := range noted {
		c.issues.note(i.Field, "is not kept: Trainyard jobs carry an id and labels only")
	}
}

// runPolicy maps the operator's run policy.
func (c *converter) runPolicy(at path, rp *RunPolicy) {
	if p := rp.CleanPodPolicy; p != nil {
		switch *p {
		case "None":
			c.job.Spec.RunPolicy.CleanPodPolicy = job.CleanNone
		case "Running", "":
			c.job.Spec.RunPolicy.CleanPodPolicy = job.CleanRunning
		case "All":
			c.job.Spec.RunPolicy.CleanPodPolicy = job.CleanAll
		default:
			c.issues.unsupported(string(at.f("cleanPodPolicy")), "%q is not None, Running or All", *p)
		}
	}
	c.job.Spec.RunPolicy.TTLSecondsAfterFinished = rp.TTLSecondsAfterFinished
	c.job.Spec.RunPolicy.ActiveDeadlineSeconds = rp.ActiveDeadlineSeconds
	c.job.Spec.RunPolicy.BackoffLimit = job.DefaultBackoffLimit
	if rp.BackoffLimit != nil {
		c.job.Spec.RunPolicy.BackoffLimit = *rp.BackoffLimit
	}
	if rp.Suspend != nil && *rp.Suspend {
		c.issues.unsupported(string(at.f("suspend")), "Trainyard has no suspended jobs: submit the job when it should run")
	}
	if rp.ManagedBy != nil && *rp.ManagedBy != "" {
		c.issues.note(string(at.f("managedBy")), "Trainyard runs the job itself; %q plays no part", *rp.ManagedBy)
	}
	if sp := rp.SchedulingPolicy; sp != nil {
		sat := at.f("schedulingPolicy")
		if sp.PriorityClass != "" {
			c.priorityClass(string(sat.f("priorityClass")), sp.PriorityClass)
		}
		if sp.Queue != "" {
			c.issues.note(string(sat.f("queue")), "Trainyard queues every job in its tenant's queue, not in %q", sp.Queue)
		}
		if len(sp.MinResources) > 0 {
			c.issues.note(string(sat.f("minResources")), "Trainyard computes what the job needs from its replicas")
		}
		if sp.ScheduleTimeoutSeconds != nil {
			c.issues.note(string(sat.f("scheduleTimeoutSeconds")), "Trainyard's scheduler decides how long a job waits; a job whose pods stay unschedulable is requeued after the operator's timeout")
		}
		if m := sp.MinAvailable; m != nil {
			// Checked once the replicas are counted (convert).
			c.minAvail, c.minAvailField = m, string(sat.f("minAvailable"))
		}
	}
}

// unlimitedRestarts: TFJob without backoffLimit restarts replicas without
// end; a Trainyard job has a limit, DefaultBackoffLimit unless given.
func (c *converter) unlimitedRestarts() {
	for _, r := range c.job.Spec.Replicas {
		if r.RestartPolicy != job.RestartNever && r.RestartPolicy != "" {
			c.issues.note("spec.runPolicy.backoffLimit", "is unset, which in TFJob means no limit; Trainyard allows %d restarts in total unless backoffLimit says otherwise", job.DefaultBackoffLimit)
			return
		}
	}
}

// minAvailable: Trainyard always starts a job's replicas together, as a
// gang of all of them. A smaller gang only means the job may wait for more
// room than it needed; it runs the same.
func (c *converter) minAvailable(field string, n int32) {
	var total int32
	for _, r := range c.job.Spec.Replicas {
		total += max(r.Count, 1)
	}
	if n != total {
		c.issues.note(field, "Trainyard admits the job when all %d replicas fit at once, not %d", total, n)
	}
}

// priorityClass maps a PriorityClass name to a Trainyard priority. Two
// different ones (the run policy's and a pod template's) cannot both hold:
// a Trainyard priority is the job's.
func (c *converter) priorityClass(field, name string) {
	p, ok := c.opts.PriorityClasses[name]
	if !ok {
		known := sortedKeys(c.opts.PriorityClasses)
		hint := "this Trainyard knows none (the operator maps them with --tfjob-priority-class name=value)"
		if len(known) > 0 {
			hint = "known: " + quoteAll(known)
		}
		c.issues.unsupported(field, "PriorityClass %q has no Trainyard priority; %s", name, hint)
		return
	}
	if c.priority != nil && *c.priority != p {
		c.issues.unsupported(field, "PriorityClass %q (priority %d) differs from the one at %s (priority %d); a Trainyard job has one priority", name, p, c.priorityField, *c.priority)
		return
	}
	c.priority, c.priorityField = &p, field
}

// replicaTypes maps the operator's replica type names, in any case.
var replicaTypes = map[string]job.ReplicaType{
	"chief": job.Chief, "master": job.Chief, "worker": job.Worker, "ps": job.PS, "evaluator": job.Evaluator,
}

// replicas converts every replica type, in Trainyard's order (chief,
// worker, ps, evaluator) whatever the map's, then puts the checkpoint
// volume together from their mounts.
func (c *converter) replicas(at path, specs map[string]*ReplicaSpec) {
	if len(specs) == 0 {
		c.issues.unsupported(string(at), "is required: at least a Chief (or Master) or a Worker")
		return
	}
	byType := map[job.ReplicaType]string{}
	var keys []string
	for _, k := range sortedKeys(specs) {
		t, ok := replicaTypes[strings.ToLower(k)]
		switch {
		case !ok:
			c.issues.unsupported(string(at.f(k)), "is not a TFJob replica type (Chief, Master, Worker, PS, Evaluator)")
		case byType[t] != "":
			c.issues.unsupported(string(at.f(k)), "is a second %s replica type (after %s); a TFJob has one Chief or Master", t, byType[t])
		default:
			byType[t] = k
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		return slices.Index(job.ReplicaTypes, replicaTypes[strings.ToLower(a)]) - slices.Index(job.ReplicaTypes, replicaTypes[strings.ToLower(b)])
	})
	var mounts []claimMount
	for _, k := range keys {
		if specs[k] == nil {
			c.issues.unsupported(string(at.f(k)), "is empty")
			continue
		}
		r, m := c.replica(at.f(k), k, replicaTypes[strings.ToLower(k)], specs[k])
		c.job.Spec.Replicas = append(c.job.Spec.Replicas, r)
		mounts = append(mounts, m...)
	}
	c.checkpoint(keys, mounts)
}
