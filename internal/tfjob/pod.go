package tfjob

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/trainyard/trainyard/internal/job"
)

const notSupported = "is not supported by Trainyard"

// claimMount is a PersistentVolumeClaim a replica's container mounts: the
// candidates for the job's one checkpoint volume.
type claimMount struct {
	field     path // the volumeMount
	replica   string
	claim     string
	mountPath string
}

// replica converts one replica type of the TFJob.
func (c *converter) replica(at path, key string, t job.ReplicaType, rs *ReplicaSpec) (job.ReplicaSpec, []claimMount) {
	r := job.ReplicaSpec{Type: t, Count: 1}
	if strings.EqualFold(key, "master") {
		c.issues.note(string(at), "Master runs as Trainyard's chief: TF_CONFIG names its task type \"chief\", not \"master\"")
	}
	if n := rs.Replicas; n != nil {
		if *n < 1 {
			c.issues.unsupported(string(at.f("replicas")), "%d replicas: leave the replica type out instead", *n)
		} else {
			r.Count = *n
		}
	}
	switch rs.RestartPolicy {
	case "", "Never":
		r.RestartPolicy = job.RestartNever
	case "OnFailure":
		r.RestartPolicy = job.RestartOnFailure
	case "ExitCode":
		// As in TFJob: exit codes 128-255 (signals) are retried, 1-127 are not.
		r.RestartPolicy = job.RestartExitCode
	case "Always":
		r.RestartPolicy = job.RestartAlways
	default:
		c.issues.unsupported(string(at.f("restartPolicy")), "%q is not Always, OnFailure, Never or ExitCode", rs.RestartPolicy)
	}
	tat := at.f("template")
	meta := rs.Template.ObjectMeta
	r.PodLabels, r.PodAnnotations = meta.Labels, meta.Annotations
	meta.Labels, meta.Annotations = nil, nil
	var noted issues
	noted.leftovers(tat.f("metadata"), meta, "")
	for _, i := range noted {
		c.issues.note(i.Field, "is not kept: Trainyard names and places its pods itself (pod labels and annotations are kept)")
	}
	mounts := c.podSpec(tat.f("spec"), key, &r, rs.Template.Spec)
	return r, mounts
}

// podSpec converts the pod template's spec into r. Whatever it does not
// carry over or report itself is reported by leftovers.
func (c *converter) podSpec(at path, key string, r *job.ReplicaSpec, ps corev1.PodSpec) []claimMount {
	left := ps.DeepCopy()
	var mounts []claimMount
	if ci, ok := c.mainContainer(at.f("containers"), ps.Containers); ok {
		mounts = c.container(at, key, r, ps.Containers[ci], ci, ps.Volumes)
	}
	left.Containers, left.Volumes = nil, nil

	r.NodeSelector = ps.NodeSelector
	for _, t := range ps.Tolerations {
		r.Tolerations = append(r.Tolerations, job.Toleration{
			Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect), TolerationSeconds: t.TolerationSeconds,
		})
	}
	left.NodeSelector, left.Tolerations = nil, nil
	if a := ps.Affinity; a != nil && a.NodeAffinity != nil {
		r.Affinity = c.nodeAffinity(at.f("affinity").f("nodeAffinity"), a.NodeAffinity)
		left.Affinity.NodeAffinity = nil
	}
	if g := ps.TerminationGracePeriodSeconds; g != nil {
		c.terminationGrace(string(at.f("terminationGracePeriodSeconds")), *g)
		left.TerminationGracePeriodSeconds = nil
	}
	if ps.RestartPolicy != "" {
		c.issues.note(string(at.f("restartPolicy")), "the replica's restartPolicy decides, as in TFJob; Trainyard recreates the pod to restart it")
		left.RestartPolicy = ""
	}
	if s := ps.SchedulerName; s != "" && s != corev1.DefaultSchedulerName {
		c.issues.note(string(at.f("schedulerName")), "Trainyard's scheduler admits the job's pods together (a gang); %q plays no part", s)
	}
	left.SchedulerName = ""
	if ps.PriorityClassName != "" {
		c.priorityClass(string(at.f("priorityClassName")), ps.PriorityClassName)
		left.PriorityClassName = ""
	}
	c.serviceAccount(at, r, ps)
	left.ServiceAccountName, left.DeprecatedServiceAccount, left.AutomountServiceAccountToken = "", "", nil
	if l := ps.EnableServiceLinks; l != nil && !*l {
		left.EnableServiceLinks = nil // Trainyard's own choice
	}
	if sc := left.SecurityContext; sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault {
		sc.SeccompProfile = nil // Trainyard's own choice
	}
	c.issues.leftovers(at, left, notSupported)
	return mounts
}

// mainContainer finds the container that runs TensorFlow: the one named
// tensorflow, as the operator requires, or the only one. Any other is a
// sidecar, which Trainyard does not run.
func (c *converter) mainContainer(at path, cs []corev1.Container) (int, bool) {
	main := -1
	for i, ct := range cs {
		if ct.Name == ContainerName {
			main = i
		}
	}
	if main < 0 && len(cs) == 1 {
		main = 0
		if cs[0].Name != "" {
			c.issues.note(string(at.i(0).f("name")), "the container runs as %q, the name the training operator requires", ContainerName)
		}
	}
	switch {
	case len(cs) == 0:
		c.issues.unsupported(string(at), "is required: the %s container", ContainerName)
		return 0, false
	case main < 0:
		c.issues.unsupported(string(at), "has no container named %q: with several containers, the training operator and Trainyard need to know which runs TensorFlow", ContainerName)
		return 0, false
	}
	for i, ct := range cs {
		if i != main {
			c.issues.unsupported(string(at.i(i)), "sidecar container %q %s: a replica runs the one %s container", ct.Name, notSupported, ContainerName)
		}
	}
	return main, true
}

// serviceAccount: replica pods run as the tenant's trainyard-job account,
// which holds no rights, and mount no token unless asked.
func (c *converter) serviceAccount(at path, r *job.ReplicaSpec, ps corev1.PodSpec) {
	for _, f := range []struct{ field, name string }{{"serviceAccountName", ps.ServiceAccountName}, {"serviceAccount", ps.DeprecatedServiceAccount}} {
		switch f.name {
		case "":
		case "default":
			c.issues.note(string(at.f(f.field)), "pods run as the tenant's ServiceAccount trainyard-job, which like \"default\" holds no rights")
		default:
			c.issues.unsupported(string(at.f(f.field)), "pods run as the tenant's ServiceAccount trainyard-job, which holds no rights; %q and what it is bound to cannot be used", f.name)
		}
	}
	if a := ps.AutomountServiceAccountToken; a != nil && *a {
		r.MountServiceAccountToken = true
		c.issues.note(string(at.f("automountServiceAccountToken")), "the token mounted is one of the tenant's ServiceAccount trainyard-job")
	}
}

func (c *converter) terminationGrace(field string, g int64) {
	switch {
	case c.gracePeriod == nil:
		c.gracePeriod, c.gracePeriodField = &g, field
	case *c.gracePeriod != g:
		longest := max(*c.gracePeriod, g)
		c.issues.note(field, "%d s differs from %s (%d s); a Trainyard job has one grace period, the longest: %d s", g, c.gracePeriodField, *c.gracePeriod, longest)
		if g > *c.gracePeriod {
			c.gracePeriod, c.gracePeriodField = &g, field
		}
	}
}

func (c *converter) nodeAffinity(at path, na *corev1.NodeAffinity) *job.Affinity {
	out := &job.Affinity{}
	term := func(p path, t corev1.NodeSelectorTerm) job.NodeSelectorTerm {
		if len(t.MatchFields) > 0 {
			c.issues.unsupported(string(p.f("matchFields")), "%s: select nodes by label (matchExpressions)", notSupported)
		}
		var jt job.NodeSelectorTerm
		for _, e := range t.MatchExpressions {
			jt.MatchExpressions = append(jt.MatchExpressions, job.NodeSelectorRequirement{Key: e.Key, Operator: string(e.Operator), Values: e.Values})
		}
		return jt
	}
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		p := at.f("requiredDuringSchedulingIgnoredDuringExecution").f("nodeSelectorTerms")
		for i, t := range req.NodeSelectorTerms {
			out.Required = append(out.Required, term(p.i(i), t))
		}
	}
	p := at.f("preferredDuringSchedulingIgnoredDuringExecution")
	for i, pt := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		out.Preferred = append(out.Preferred, job.PreferredTerm{Weight: pt.Weight, Preference: term(p.i(i).f("preference"), pt.Preference)})
	}
	return out
}

// volumeMounts carries the container's mounts over: tenant secrets as
// secret volumes, PersistentVolumeClaims as checkpoint candidates
// (checkpoint puts them together). Volumes nobody mounts are noted.
func (c *converter) volumeMounts(spec path, key string, r *job.ReplicaSpec, ctAt path, ms []corev1.VolumeMount, vols []corev1.Volume) []claimMount {
	byName := map[string]int{}
	for i, v := range vols {
		byName[v.Name] = i
	}
	used := map[string]bool{}
	var out []claimMount
	for i, m := range ms {
		p := ctAt.f("volumeMounts").i(i)
		vi, ok := byName[m.Name]
		if !ok {
			c.issues.unsupported(string(p.f("name")), "names no volume of the pod template (%q)", m.Name)
			continue
		}
		used[m.Name] = true
		if m.SubPath != "" || m.SubPathExpr != "" {
			c.issues.unsupported(string(p.f("subPath")), "%s: Trainyard mounts whole volumes", notSupported)
		}
		if m.MountPropagation != nil || m.RecursiveReadOnly != nil {
			c.issues.unsupported(string(p), "mount propagation and recursive read-only mounts are not supported by Trainyard")
		}
		v, vp := vols[vi], spec.f("volumes").i(vi)
		switch {
		case v.PersistentVolumeClaim != nil:
			if m.ReadOnly || v.PersistentVolumeClaim.ReadOnly {
				c.issues.note(string(p.f("readOnly")), "Trainyard mounts the checkpoint claim read-write in every replica")
			}
			out = append(out, claimMount{field: p, replica: key, claim: v.PersistentVolumeClaim.ClaimName, mountPath: m.MountPath})
		case v.Secret != nil:
			s := v.Secret
			if len(s.Items) > 0 || s.DefaultMode != nil || s.Optional != nil {
				c.issues.unsupported(string(vp.f("secret")), "items, defaultMode and optional are not supported by Trainyard: a tenant secret is mounted whole, one file per key")
			}
			r.SecretVolumes = append(r.SecretVolumes, job.SecretVolume{Secret: s.SecretName, MountPath: m.MountPath})
		default:
			c.issues.unsupported(string(vp), "%s volumes are not supported by Trainyard: a replica mounts the job's checkpoint claim and tenant secrets", volumeKind(v))
		}
	}
	for i, v := range vols {
		if !used[v.Name] {
			c.issues.note(string(spec.f("volumes").i(i)), "volume %q is not mounted by the %s container; left out", v.Name, ContainerName)
		}
	}
	return out
}

// volumeKind names the source of a volume: emptyDir, configMap, ...
func volumeKind(v corev1.Volume) string {
	b, _ := json.Marshal(v.VolumeSource)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k := range m {
		return k
	}
	return "empty"
}

// checkpoint makes the job's checkpoint volume of the claims the replicas
// mount. Trainyard mounts one claim, at one path, in every replica.
func (c *converter) checkpoint(keys []string, mounts []claimMount) {
	if len(mounts) == 0 {
		return
	}
	first := mounts[0]
	c.job.Spec.Checkpoint = &job.CheckpointVolume{ClaimName: first.claim, MountPath: first.mountPath}
	with := map[string]bool{first.replica: true}
	for _, m := range mounts[1:] {
		switch {
		case m.claim != first.claim:
			c.issues.unsupported(string(m.field), "mounts claim %q; a Trainyard job mounts one PersistentVolumeClaim, its checkpoint volume (here %q, from %s)", m.claim, first.claim, first.field)
		case m.mountPath != first.mountPath:
			c.issues.unsupported(string(m.field.f("mountPath")), "%q: Trainyard mounts the checkpoint claim %q at one path in every replica (here %q, from %s)", m.mountPath, first.claim, first.mountPath, first.field)
		case with[m.replica]:
			c.issues.unsupported(string(m.field), "mounts claim %q a second time", m.claim)
		default:
			with[m.replica] = true
		}
	}
	for _, k := range keys {
		if !with[k] {
			c.issues.note("spec.tfReplicaSpecs."+k+".template.spec.containers", "does not mount claim %q; Trainyard mounts the checkpoint claim in every replica, at %s", first.claim, first.mountPath)
		}
	}
}
