package job

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/resname"
)

// Limits enforced by Validate. They keep every object Trainyard renders well
// inside what Kubernetes accepts (a pod must fit in one etcd write) and make
// mistakes fail at submit time instead of in the cluster.
const (
	MaxDisplayNameLength = 200 // characters
	MaxLabels            = 32  // job labels, and pod labels per replica
	MaxReplicaCount      = 1024
	// MaxTotalReplicas bounds a job's pods, and so its TF_CONFIG (every pod
	// carries every address: about 60 bytes each, ~120 KiB at the limit).
	MaxTotalReplicas      = 2048
	MaxChief              = 1
	MaxEvaluator          = 1
	MaxImageLength        = 512
	MaxArgs               = 256      // items in command, and in args
	MaxArgsBytes          = 64 << 10 // total bytes of command, and of args
	MaxEnv                = 128      // per replica
	MaxEnvBytes           = 64 << 10 // names and values of a replica's env
	MaxGPU                = 64       // per replica pod
	MaxNodeSelector       = 32
	MaxClusterSelector    = 16
	MaxClusters           = 64 // names in spec.clusters
	MaxTolerations        = 32
	MaxAffinityTerms      = 16 // required terms, and preferred terms
	MaxMatchExpressions   = 16 // per term
	MaxAffinityValues     = 64 // per requirement
	MaxPodAnnotationBytes = 64 << 10
	MaxSecretVolumes      = 16
	// MaxRetryableExitCodes: there are 255 failure exit codes.
	MaxRetryableExitCodes = 255
	MaxBackoffLimit       = 100
	// MaxActiveDeadlineSeconds is 30 days.
	MaxActiveDeadlineSeconds = 30 * 24 * 60 * 60
	// MaxTerminationGracePeriodSeconds is an hour; operators bound it
	// lower with a flag.
	MaxTerminationGracePeriodSeconds = 3600
	MinPriority                      = -1000
	MaxPriority                      = 1000
)

// Toleration operators and taint effects Kubernetes knows.
const (
	TolerationEqual  = "Equal"
	TolerationExists = "Exists"

	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// Node selector operators.
const (
	OpIn           = "In"
	OpNotIn        = "NotIn"
	OpExists       = "Exists"
	OpDoesNotExist = "DoesNotExist"
	OpGt           = "Gt"
	OpLt           = "Lt"
)

// ReservedEnvPrefix starts environment variable names Trainyard may set;
// users may not. TF_CONFIG (TFConfigEnv) is reserved too.
const ReservedEnvPrefix = "TRAINYARD_"

// LabelManagedBy is the label that marks every object Trainyard owns; the
// worker's informers select on it, so a pod label may not set it.
const LabelManagedBy = "app.kubernetes.io/managed-by"

// Validate checks a job (its id in Name, display name, labels and spec)
// after Spec.Default, and returns every problem found, one violation each,
// in a stable order; nil when the job is valid. Status and the output-only
// fields are not looked at.
func Validate(j *Job) []FieldViolation {
	var v Violations
	if err := ValidJobID(j.Name); err != nil {
		v.Add("jobId", "%v", err)
	} else if err := ReservedJobID(j.Name); err != nil {
		v.Add("jobId", "%v", err)
	} else if err := ValidNames(j.Name, j.Spec); err != nil {
		v.Add("jobId", "%v", err)
	}
	if n := utf8.RuneCountInString(j.DisplayName); n > MaxDisplayNameLength {
		v.Add("displayName", "is %d characters; at most %d are allowed", n, MaxDisplayNameLength)
	}
	v.Labels("labels", j.Labels, MaxLabels, nil)
	v.spec(&j.Spec)
	return v
}

func (v *Violations) spec(s *Spec) {
	v.replicas(s)
	resourcesOK := true
	for i := range s.Replicas {
		if !v.replica(fmt.Sprintf("spec.replicas[%d]", i), &s.Replicas[i], s.Checkpoint) {
			resourcesOK = false
		}
	}
	v.runPolicy(&s.RunPolicy)
	v.dependencies(s)
	v.clusters(s)

	switch s.SuccessPolicy {
	case SuccessChiefOrWorker0:
	case SuccessAllWorkers:
		if !slices.ContainsFunc(s.Replicas, func(r ReplicaSpec) bool { return r.Type == Worker }) {
			v.Add("spec.successPolicy", "AllWorkers needs at least one WORKER replica")
		}
	default:
		v.Add("spec.successPolicy", "%q is not a success policy (ChiefOrWorker0 or AllWorkers)", s.SuccessPolicy)
	}

	if c := s.Checkpoint; c != nil {
		if c.ClaimName == "" {
			v.Add("spec.checkpoint.claimName", "is required")
		} else if msgs := validation.IsDNS1123Subdomain(c.ClaimName); len(msgs) > 0 {
			v.Add("spec.checkpoint.claimName", "%q is not a valid claim name: %s", c.ClaimName, join(msgs))
		}
		v.mountPath("spec.checkpoint.mountPath", c.MountPath)
	}
	if tb := s.TensorBoard; tb != nil {
		if s.Checkpoint == nil {
			v.Add("spec.tensorboard", "TensorBoard reads the checkpoint volume: set spec.checkpoint too")
		}
		v.image("spec.tensorboard.image", tb.Image)
		if tb.LogDir != "" && (path.IsAbs(tb.LogDir) || path.Clean(tb.LogDir) != tb.LogDir || escapes(tb.LogDir)) {
			v.Add("spec.tensorboard.logDir", "%q must be a clean path relative to the checkpoint mount, without '..'", tb.LogDir)
		}
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && (*g < 0 || *g > MaxTerminationGracePeriodSeconds) {
		v.Add("spec.terminationGracePeriodSeconds", "%d is out of range 0..%d", *g, MaxTerminationGracePeriodSeconds)
	}
	if s.Priority < MinPriority || s.Priority > MaxPriority {
		v.Add("spec.priority", "%d is out of range %d..%d", s.Priority, MinPriority, MaxPriority)
	}

	// Quantities that parse can still add up past int64; only worth asking
	// when each one is fine on its own.
	if resourcesOK {
		if _, err := s.Demand(); err != nil {
			v.Add("spec.replicas", "resource requests are too large: %v", err)
		}
	}
}

// replicas checks the replica list as a whole: types, counts and the mix.
func (v *Violations) replicas(s *Spec) {
	if len(s.Replicas) == 0 {
		v.Add("spec.replicas", "at least one replica (a CHIEF or a WORKER) is required")
		return
	}
	first := map[ReplicaType]int{}
	var total int64
	for i, r := range s.Replicas {
		p := fmt.Sprintf("spec.replicas[%d]", i)
		switch {
		case r.Type == "":
			v.Add(p+".type", "is required: CHIEF, WORKER, PS or EVALUATOR")
		case !r.Type.Valid():
			v.Add(p+".type", "%q is not a replica type (CHIEF, WORKER, PS or EVALUATOR)", r.Type)
		default:
			if j, dup := first[r.Type]; dup {
				v.Add(p+".type", "%s is already given in spec.replicas[%d]; give each type once, with a count", upper(r.Type), j)
			} else {
				first[r.Type] = i
			}
		}
		switch {
		case r.Count < 1 || r.Count > MaxReplicaCount:
			v.Add(p+".count", "%d is out of range 1..%d", r.Count, MaxReplicaCount)
		case r.Type == Chief && r.Count > MaxChief:
			v.Add(p+".count", "a job has at most %d CHIEF replica, not %d", MaxChief, r.Count)
		case r.Type == Evaluator && r.Count > MaxEvaluator:
			v.Add(p+".count", "a job has at most %d EVALUATOR replica, not %d", MaxEvaluator, r.Count)
		default:
			total += int64(r.Count)
		}
	}
	if total > MaxTotalReplicas {
		v.Add("spec.replicas", "%d replicas in total; at most %d are allowed", total, MaxTotalReplicas)
	}
	if _, chief := first[Chief]; !chief {
		if _, worker := first[Worker]; !worker {
			v.Add("spec.replicas", "a job needs a CHIEF or at least one WORKER replica")
		}
	}
}

// replica checks one replica's fields and reports whether its resources
// were valid.
func (v *Violations) replica(p string, r *ReplicaSpec, ckpt *CheckpointVolume) (resourcesOK bool) {
	v.image(p+".image", r.Image)
	v.argv(p+".command", r.Command)
	v.argv(p+".args", r.Args)
	v.env(p+".env", r.Env)
	before := len(*v)
	v.resources(p+".resources", &r.Resources)
	resourcesOK = len(*v) == before
	v.Labels(p+".nodeSelector", r.NodeSelector, MaxNodeSelector, nil)
	v.tolerations(p+".tolerations", r.Tolerations)
	if r.Affinity != nil {
		v.affinity(p+".affinity", r.Affinity)
	}
	v.Labels(p+".podLabels", r.PodLabels, MaxLabels, reservedPodLabel)
	v.annotations(p+".podAnnotations", r.PodAnnotations)
	if r.Port < 1 || r.Port > 65535 {
		v.Add(p+".port", "%d is not a port number (1..65535)", r.Port)
	}
	switch r.RestartPolicy {
	case RestartNever, RestartOnFailure, RestartExitCode, RestartAlways:
	case "":
		v.Add(p+".restartPolicy", "is required: Never, OnFailure, ExitCode or Always")
	default:
		v.Add(p+".restartPolicy", "%q is not a restart policy (Never, OnFailure, ExitCode or Always)", r.RestartPolicy)
	}
	v.exitCodes(p+".retryableExitCodes", r.RetryableExitCodes, r.RestartPolicy)
	v.secretVolumes(p+".secretVolumes", r.SecretVolumes, ckpt)
	v.probes(p, r)
	// Privileged is deliberately not refused here: the namespace's Pod
	// Security admission refuses it, and that refusal is what users see.
	return resourcesOK
}

// imageRef is a container image reference as the distribution spec defines
// it: [domain[:port]/]path[:tag][@digest] with a lowercase path.
var imageRef = func() *regexp.Regexp {
	const (
		domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain          = domainComponent + `(?:\.` + domainComponent + `)*(?::[0-9]+)?`
		pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		name            = `(?:` + domain + `/)?` + pathComponent + `(?:/` + pathComponent + `)*`
		tag             = `[\w][\w.-]{0,127}`
		digest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^` + name + `(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

func (v *Violations) image(p, image string) {
	switch {
	case image == "":
		v.Add(p, "is required")
	case len(image) > MaxImageLength:
		v.Add(p, "is %d bytes; at most %d are allowed", len(image), MaxImageLength)
	case strings.IndexFunc(image, unicode.IsSpace) >= 0:
		v.Add(p, "%q contains whitespace", image)
	case !imageRef.MatchString(image):
		v.Add(p, "%q is not an image reference like registry.example.com/team/image:tag or image@sha256:<hex> (the repository path is lowercase)", image)
	}
}

// argv checks command or args.
func (v *Violations) argv(p string, items []string) {
	if len(items) > MaxArgs {
		v.Add(p, "has %d items; at most %d are allowed", len(items), MaxArgs)
	}
	n := 0
	for _, s := range items {
		n += len(s)
	}
	if n > MaxArgsBytes {
		v.Add(p, "is %d bytes in total; at most %d are allowed", n, MaxArgsBytes)
	}
}

func (v *Violations) env(p string, env []EnvVar) {
	if len(env) > MaxEnv {
		v.Add(p, "has %d variables; at most %d are allowed", len(env), MaxEnv)
	}
	seen := map[string]int{}
	size := 0
	for k, e := range env {
		ep := fmt.Sprintf("%s[%d]", p, k)
		size += len(e.Name) + len(e.Value)
		switch {
		case e.Name == "":
			v.Add(ep+".name", "is required")
		case e.Name == TFConfigEnv || strings.HasPrefix(e.Name, ReservedEnvPrefix):
			v.Add(ep+".name", "%s is set by Trainyard (TF_CONFIG and TRAINYARD_* are reserved)", e.Name)
		default:
			if msgs := validation.IsEnvVarName(e.Name); len(msgs) > 0 {
				v.Add(ep+".name", "%q: %s", e.Name, join(msgs))
			} else if j, dup := seen[e.Name]; dup {
				v.Add(ep+".name", "%s is already set by %s[%d]", e.Name, p, j)
			} else {
				seen[e.Name] = k
			}
		}
		if e.Secret == nil {
			continue
		}
		if e.Value != "" {
			v.Add(ep, "set either value or secret, not both")
		}
		v.secretID(ep+".secret.secret", e.Secret.Secret)
		if e.Secret.Key == "" {
			v.Add(ep+".secret.key", "is required")
		} else if msgs := validation.IsConfigMapKey(e.Secret.Key); len(msgs) > 0 {
			v.Add(ep+".secret.key", "%q is not a valid secret key: %s", e.Secret.Key, join(msgs))
		}
	}
	if size > MaxEnvBytes {
		v.Add(p, "names and values are %d bytes in total; at most %d are allowed", size, MaxEnvBytes)
	}
}

// clusters checks spec.clusterSelector (label syntax) and spec.clusters
// (cluster ids, as the clusters API names them: resname's id rule).
func (v *Violations) clusters(s *Spec) {
	v.Labels("spec.clusterSelector", s.ClusterSelector, MaxClusterSelector, nil)
	if len(s.Clusters) > MaxClusters {
		v.Add("spec.clusters", "has %d entries; at most %d are allowed", len(s.Clusters), MaxClusters)
	}
	seen := map[string]int{}
	for i, c := range s.Clusters {
		p := fmt.Sprintf("spec.clusters[%d]", i)
		if !resname.IsID(c) {
			v.Add(p, "%s is not a cluster id: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", resname.Quote(c))
		} else if k, dup := seen[c]; dup {
			v.Add(p, "%q is already given in spec.clusters[%d]", c, k)
		} else {
			seen[c] = i
		}
	}
}

// secretID checks a tenant secret id (a DNS-1123 label, as the tenant
// package requires of secrets it stores).
func (v *Violations) secretID(p, id string) {
	if id == "" {
		v.Add(p, "is required")
	} else if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		v.Add(p, "%q is not a valid secret id: %s", id, join(msgs))
	}
}

func (v *Violations) resources(p string, r *Resources) {
	cpu, cpuOK := v.quantity(p+".cpu", r.CPU)
	cpuLimit, cpuLimitOK := v.quantity(p+".cpuLimit", r.CPULimit)
	mem, memOK := v.quantity(p+".memory", r.Memory)
	memLimit, memLimitOK := v.quantity(p+".memoryLimit", r.MemoryLimit)
	if cpuOK && cpuLimitOK && cpuLimit.Cmp(cpu) < 0 {
		v.Add(p+".cpuLimit", "%s is less than the request cpu %s", r.CPULimit, r.CPU)
	}
	if memOK && memLimitOK && memLimit.Cmp(mem) < 0 {
		v.Add(p+".memoryLimit", "%s is less than the request memory %s", r.MemoryLimit, r.Memory)
	}
	if r.GPU < 0 || r.GPU > MaxGPU {
		v.Add(p+".gpu", "%d is out of range 0..%d", r.GPU, MaxGPU)
	}
}

// quantity parses an optional positive quantity. ok is true only when s was
// set and is valid.
func (v *Violations) quantity(p, s string) (q resource.Quantity, ok bool) {
	if s == "" {
		return q, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		v.Add(p, "%q is not a Kubernetes quantity such as 500m, 2, 8Gi", s)
		return q, false
	}
	if q.Sign() <= 0 {
		v.Add(p, "%s must be positive (leave it empty for none)", s)
		return q, false
	}
	return q, true
}

func (v *Violations) tolerations(p string, ts []Toleration) {
	if len(ts) > MaxTolerations {
		v.Add(p, "has %d tolerations; at most %d are allowed", len(ts), MaxTolerations)
	}
	for k, t := range ts {
		tp := fmt.Sprintf("%s[%d]", p, k)
		if t.Key != "" {
			if msgs := content.IsLabelKey(t.Key); len(msgs) > 0 {
				v.Add(tp+".key", "%q is not a valid taint key: %s", t.Key, join(msgs))
			}
		}
		switch t.Operator {
		case TolerationEqual:
			if t.Key == "" {
				v.Add(tp+".key", "is required with operator Equal (Exists with an empty key tolerates every taint)")
			}
			if msgs := content.IsLabelValue(t.Value); len(msgs) > 0 {
				v.Add(tp+".value", "%q is not a valid taint value: %s", t.Value, join(msgs))
			}
		case TolerationExists:
			if t.Value != "" {
				v.Add(tp+".value", "must be empty with operator Exists")
			}
		default:
			v.Add(tp+".operator", "%q is not Equal or Exists", t.Operator)
		}
		switch t.Effect {
		case "", EffectNoSchedule, EffectPreferNoSchedule, EffectNoExecute:
		default:
			v.Add(tp+".effect", "%q is not NoSchedule, PreferNoSchedule, NoExecute or empty (all effects)", t.Effect)
		}
		if t.TolerationSeconds != nil {
			if t.Effect != EffectNoExecute {
				v.Add(tp+".tolerationSeconds", "applies only to effect NoExecute")
			} else if *t.TolerationSeconds < 0 {
				v.Add(tp+".tolerationSeconds", "%d is negative", *t.TolerationSeconds)
			}
		}
	}
}

func (v *Violations) affinity(p string, a *Affinity) {
	if len(a.Required) > MaxAffinityTerms {
		v.Add(p+".required", "has %d terms; at most %d are allowed", len(a.Required), MaxAffinityTerms)
	}
	for k, t := range a.Required {
		v.nodeSelectorTerm(fmt.Sprintf("%s.required[%d]", p, k), t)
	}
	if len(a.Preferred) > MaxAffinityTerms {
		v.Add(p+".preferred", "has %d terms; at most %d are allowed", len(a.Preferred), MaxAffinityTerms)
	}
	for k, t := range a.Preferred {
		tp := fmt.Sprintf("%s.preferred[%d]", p, k)
		if t.Weight < 1 || t.Weight > 100 {
			v.Add(tp+".weight", "%d is out of range 1..100", t.Weight)
		}
		v.nodeSelectorTerm(tp+".preference", t.Preference)
	}
}

func (v *Violations) nodeSelectorTerm(p string, t NodeSelectorTerm) {
	p += ".matchExpressions"
	switch n := len(t.MatchExpressions); {
	case n == 0:
		v.Add(p, "needs at least one requirement (an empty term matches no node)")
	case n > MaxMatchExpressions:
		v.Add(p, "has %d requirements; at most %d are allowed", n, MaxMatchExpressions)
	}
	for k, e := range t.MatchExpressions {
		ep := fmt.Sprintf("%s[%d]", p, k)
		if e.Key == "" {
			v.Add(ep+".key", "is required")
		} else if msgs := content.IsLabelKey(e.Key); len(msgs) > 0 {
			v.Add(ep+".key", "%q is not a valid label key: %s", e.Key, join(msgs))
		}
		n := len(e.Values)
		switch e.Operator {
		case OpIn, OpNotIn:
			switch {
			case n == 0:
				v.Add(ep+".values", "%s needs at least one value", e.Operator)
			case n > MaxAffinityValues:
				v.Add(ep+".values", "has %d values; at most %d are allowed", n, MaxAffinityValues)
			}
			for i, val := range e.Values {
				if msgs := content.IsLabelValue(val); len(msgs) > 0 {
					v.Add(fmt.Sprintf("%s.values[%d]", ep, i), "%q is not a valid label value: %s", val, join(msgs))
				}
			}
		case OpExists, OpDoesNotExist:
			if n != 0 {
				v.Add(ep+".values", "must be empty with %s", e.Operator)
			}
		case OpGt, OpLt:
			if n != 1 {
				v.Add(ep+".values", "%s needs exactly one value, an integer", e.Operator)
			} else if _, err := strconv.ParseInt(e.Values[0], 10, 64); err != nil {
				v.Add(ep+".values[0]", "%q is not an integer, as %s needs", e.Values[0], e.Operator)
			}
		default:
			v.Add(ep+".operator", "%q is not In, NotIn, Exists, DoesNotExist, Gt or Lt", e.Operator)
		}
	}
}

// Labels checks a map of Kubernetes labels (or node selector entries): the
// count, each key and value, and optionally keys reserved to Trainyard.
func (v *Violations) Labels(p string, m map[string]string, maxEntries int, reserved func(string) bool) {
	if len(m) > maxEntries {
		v.Add(p, "has %d entries; at most %d are allowed", len(m), maxEntries)
	}
	for _, k := range sortedKeys(m) {
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			v.Add(p, "key %q: %s", k, join(msgs))
		} else if reserved != nil && reserved(k) {
			v.Add(p, "key %q is reserved for Trainyard", k)
		}
		if msgs := content.IsLabelValue(m[k]); len(msgs) > 0 {
			v.Add(p, "value %q of key %q: %s", m[k], k, join(msgs))
		}
	}
}

func (v *Violations) annotations(p string, m map[string]string) {
	size := 0
	for _, k := range sortedKeys(m) {
		size += len(k) + len(m[k])
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			v.Add(p, "key %q: %s", k, join(msgs))
		} else if reservedKey(k) {
			v.Add(p, "key %q is reserved for Trainyard", k)
		}
	}
	if size > MaxPodAnnotationBytes {
		v.Add(p, "keys and values are %d bytes in total; at most %d are allowed", size, MaxPodAnnotationBytes)
	}
}

// reservedKey reports whether a label or annotation key is Trainyard's own:
// under trainyard.dev/ or a subdomain of it. sim.trainyard.dev/ is the
// exception: the local cluster's simulated kubelet reads pod annotations
// there (exit codes, run times), and tests set them through job specs.
func reservedKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	if !ok || prefix == "sim.trainyard.dev" {
		return false
	}
	return prefix == "trainyard.dev" || strings.HasSuffix(prefix, ".trainyard.dev")
}

func reservedPodLabel(k string) bool { return k == LabelManagedBy || reservedKey(k) }

func (v *Violations) exitCodes(p string, codes []int32, policy RestartPolicy) {
	if len(codes) > 0 && policy != RestartExitCode {
		v.Add(p, "applies only to restart policy ExitCode, not %s", policy)
	}
	if len(codes) > MaxRetryableExitCodes {
		v.Add(p, "has %d items; at most %d are allowed", len(codes), MaxRetryableExitCodes)
		return
	}
	seen := map[int32]bool{}
	for k, c := range codes {
		switch {
		case c < 1 || c > 255:
			v.Add(fmt.Sprintf("%s[%d]", p, k), "%d is not a failure exit code (1..255)", c)
		case seen[c]:
			v.Add(fmt.Sprintf("%s[%d]", p, k), "%d is listed twice", c)
		}
		seen[c] = true
	}
}

func (v *Violations) secretVolumes(p string, vols []SecretVolume, ckpt *CheckpointVolume) {
	if len(vols) > MaxSecretVolumes {
		v.Add(p, "has %d volumes; at most %d are allowed", len(vols), MaxSecretVolumes)
	}
	seen := map[string]int{}
	for k, sv := range vols {
		vp := fmt.Sprintf("%s[%d]", p, k)
		v.secretID(vp+".secret", sv.Secret)
		if !v.mountPath(vp+".mountPath", sv.MountPath) {
			continue
		}
		if j, dup := seen[sv.MountPath]; dup {
			v.Add(vp+".mountPath", "%s is already used by %s[%d]", sv.MountPath, p, j)
			continue
		}
		seen[sv.MountPath] = k
		if ckpt != nil && ckpt.MountPath != "" && overlaps(sv.MountPath, ckpt.MountPath) {
			v.Add(vp+".mountPath", "%s overlaps the checkpoint mount %s", sv.MountPath, ckpt.MountPath)
		}
	}
}

// mountPath checks a container mount path and reports whether it is valid.
func (v *Violations) mountPath(p, mp string) bool {
	switch {
	case mp == "":
		v.Add(p, "is required")
	case !path.IsAbs(mp) || path.Clean(mp) != mp:
		v.Add(p, "%q must be an absolute, clean path (no '..', '.', '//' or trailing '/')", mp)
	case mp == "/":
		v.Add(p, "cannot be /")
	default:
		return true
	}
	return false
}

func (v *Violations) runPolicy(rp *RunPolicy) {
	const p = "spec.runPolicy"
	if rp.BackoffLimit < 0 || rp.BackoffLimit > MaxBackoffLimit {
		v.Add(p+".backoffLimit", "%d is out of range 0..%d", rp.BackoffLimit, MaxBackoffLimit)
	}
	if s := rp.ActiveDeadlineSeconds; s != nil && (*s < 1 || *s > MaxActiveDeadlineSeconds) {
		v.Add(p+".activeDeadlineSeconds", "%d is out of range 1..%d (30 days); leave it unset for no deadline", *s, MaxActiveDeadlineSeconds)
	}
	if s := rp.TTLSecondsAfterFinished; s != nil && *s < 0 {
		v.Add(p+".ttlSecondsAfterFinished", "%d is negative", *s)
	}
	switch rp.CleanPodPolicy {
	case CleanNone, CleanRunning, CleanAll:
	default:
		v.Add(p+".cleanPodPolicy", "%q is not a clean pod policy (None, Running or All)", rp.CleanPodPolicy)
	}
}

// overlaps reports whether one of two clean absolute paths is the other or
// lies inside it.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// escapes reports whether a clean relative path leaves its base directory.
func escapes(rel string) bool { return rel == ".." || strings.HasPrefix(rel, "../") }

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func join(msgs []string) string { return strings.Join(msgs, "; ") }

func upper(t ReplicaType) string { return strings.ToUpper(string(t)) }
