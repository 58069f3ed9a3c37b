package tfjob

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainyard/trainyard/internal/job"
)

// resourceGPU is the one extended resource Trainyard schedules.
const resourceGPU corev1.ResourceName = "nvidia.com/gpu"

// container converts the tensorflow container (containers[ci]) into r.
func (c *converter) container(spec path, key string, r *job.ReplicaSpec, ct corev1.Container, ci int, vols []corev1.Volume) []claimMount {
	at := spec.f("containers").i(ci)
	left := ct.DeepCopy()
	r.Image, r.Command, r.Args, r.WorkingDir = ct.Image, ct.Command, ct.Args, ct.WorkingDir
	left.Name, left.Image, left.Command, left.Args, left.WorkingDir = "", "", nil, nil, ""

	if p := ct.ImagePullPolicy; p != "" {
		if want := defaultPullPolicy(ct.Image); p != want {
			c.issues.unsupported(string(at.f("imagePullPolicy")), "%s: Trainyard leaves the pull policy to Kubernetes' default for this image (%s)", p, want)
		}
		left.ImagePullPolicy = ""
	}
	c.ports(at.f("ports"), r, ct.Ports)
	left.Ports = nil
	c.env(at.f("env"), r, ct.Env)
	left.Env = nil
	if len(ct.EnvFrom) > 0 {
		c.issues.unsupported(string(at.f("envFrom")), "%s: list the variables one by one (valueFrom.secretKeyRef reads a tenant secret)", notSupported)
		left.EnvFrom = nil
	}
	c.resources(at.f("resources"), r, ct.Resources)
	left.Resources.Requests, left.Resources.Limits, left.Resources.Claims = nil, nil, nil
	mounts := c.volumeMounts(spec, key, r, at, ct.VolumeMounts, vols)
	left.VolumeMounts = nil
	r.LivenessProbe = c.probe(at.f("livenessProbe"), ct.LivenessProbe, r.Port, ct.Ports)
	r.ReadinessProbe = c.probe(at.f("readinessProbe"), ct.ReadinessProbe, r.Port, ct.Ports)
	r.StartupProbe = c.probe(at.f("startupProbe"), ct.StartupProbe, r.Port, ct.Ports)
	left.LivenessProbe, left.ReadinessProbe, left.StartupProbe = nil, nil, nil
	if ct.TerminationMessagePath != "" || ct.TerminationMessagePolicy != "" {
		c.issues.note(string(at.f("terminationMessagePolicy")), "Trainyard keeps the container's termination message, or the end of its log when it failed without one")
		left.TerminationMessagePath, left.TerminationMessagePolicy = "", ""
	}
	if sc := left.SecurityContext; sc != nil {
		c.securityContext(r, sc)
	}
	c.issues.leftovers(at, left, notSupported)
	return mounts
}

// defaultPullPolicy is what Kubernetes defaults imagePullPolicy to, and so
// what Trainyard's pods get: Always for :latest or no tag, else
// IfNotPresent.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); !ok || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// ports takes the port TF_CONFIG addresses from tfjob-port (the operator's
// default, 2222, when there is none). Other ports are declarations only.
func (c *converter) ports(at path, r *job.ReplicaSpec, ports []corev1.ContainerPort) {
	for i, p := range ports {
		pp := at.i(i)
		if p.HostPort != 0 || p.HostIP != "" {
			c.issues.unsupported(string(pp.f("hostPort")), "%s: replicas are reached through their namespace's headless Service", notSupported)
		}
		if p.Name == PortName {
			r.Port = p.ContainerPort
			continue
		}
		c.issues.note(string(pp), "port %d (%s) is only declared: as in TFJob, only %s is in TF_CONFIG and the job's EndpointSlice", p.ContainerPort, p.Name, PortName)
	}
}

// env carries variables over: literal values, and keys of tenant secrets
// (a Kubernetes Secret of the tenant's namespace is a tenant secret, named
// by its id). TF_CONFIG is Trainyard's to set.
func (c *converter) env(at path, r *job.ReplicaSpec, env []corev1.EnvVar) {
	for i, e := range env {
		p := at.i(i)
		if e.Name == job.TFConfigEnv || strings.HasPrefix(e.Name, job.ReservedEnvPrefix) {
			c.issues.unsupported(string(p.f("name")), "Trainyard sets %s itself", e.Name)
			continue
		}
		vf := e.ValueFrom
		if vf == nil {
			r.Env = append(r.Env, job.EnvVar{Name: e.Name, Value: e.Value})
			continue
		}
		sk := vf.SecretKeyRef
		if sk == nil || vf.ConfigMapKeyRef != nil || vf.FieldRef != nil || vf.ResourceFieldRef != nil || vf.FileKeyRef != nil {
			c.issues.unsupported(string(p.f("valueFrom")), "only secretKeyRef (a key of a tenant secret) is supported by Trainyard")
			continue
		}
		if sk.Optional != nil && *sk.Optional {
			c.issues.unsupported(string(p.f("valueFrom").f("secretKeyRef").f("optional")), "Trainyard checks at submit that the secret and its key exist; optional references are not supported")
		}
		r.Env = append(r.Env, job.EnvVar{Name: e.Name, Secret: &job.SecretKeyRef{Secret: sk.Name, Key: sk.Key}})
	}
}

// resources maps requests and limits of cpu, memory and nvidia.com/gpu. As
// in Kubernetes, a limit without a request is also the request.
func (c *converter) resources(at path, r *job.ReplicaSpec, rr corev1.ResourceRequirements) {
	for _, l := range []struct {
		field string
		list  corev1.ResourceList
	}{{"requests", rr.Requests}, {"limits", rr.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(l.list)) {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != resourceGPU {
				c.issues.unsupported(string(at.f(l.field)), "%q %s (cpu, memory and nvidia.com/gpu are)", name, notSupported)
			}
		}
	}
	if len(rr.Claims) > 0 {
		c.issues.unsupported(string(at.f("claims")), "dynamic resource claims are %s", notSupported)
	}
	get := func(l corev1.ResourceList, n corev1.ResourceName) string {
		if q, ok := l[n]; ok {
			return q.String()
		}
		return ""
	}
	res := &r.Resources
	res.CPU, res.CPULimit = get(rr.Requests, corev1.ResourceCPU), get(rr.Limits, corev1.ResourceCPU)
	if res.CPU == "" {
		res.CPU = res.CPULimit
	}
	res.Memory, res.MemoryLimit = get(rr.Requests, corev1.ResourceMemory), get(rr.Limits, corev1.ResourceMemory)
	if res.Memory == "" {
		res.Memory = res.MemoryLimit
	}
	if res.Memory != "" && res.MemoryLimit == "" {
		c.issues.note(string(at.f("limits")), "no memory limit: Trainyard limits memory to the request (%s), as a namespace's LimitRange may", res.Memory)
	}
	gpuReq, hasReq := rr.Requests[resourceGPU]
	gpuLim, hasLim := rr.Limits[resourceGPU]
	switch {
	case hasReq && hasLim && gpuReq.Cmp(gpuLim) != 0:
		c.issues.unsupported(string(at.f("requests")), "nvidia.com/gpu request %s differs from its limit %s; GPUs are requested whole, request = limit", gpuReq.String(), gpuLim.String())
	case hasLim:
		c.gpu(string(at.f("limits")), r, gpuLim)
	case hasReq:
		c.gpu(string(at.f("requests")), r, gpuReq)
	}
}

func (c *converter) gpu(field string, r *job.ReplicaSpec, q resource.Quantity) {
	n, ok := q.AsInt64()
	if !ok || n < 0 || n > 1<<20 {
		c.issues.unsupported(field, "nvidia.com/gpu %s is not a whole number of GPUs", q.String())
		return
	}
	r.Resources.GPU = int32(n)
}

// probe converts a probe; named ports are looked up in the container's
// ports. nil when it has no handler Trainyard supports (reported).
func (c *converter) probe(at path, p *corev1.Probe, tfPort int32, ports []corev1.ContainerPort) *job.Probe {
	if p == nil {
		return nil
	}
	left := p.DeepCopy()
	out := &job.Probe{
		InitialDelaySeconds: p.InitialDelaySeconds, PeriodSeconds: p.PeriodSeconds, TimeoutSeconds: p.TimeoutSeconds,
		SuccessThreshold: p.SuccessThreshold, FailureThreshold: p.FailureThreshold,
	}
	left.InitialDelaySeconds, left.PeriodSeconds, left.TimeoutSeconds, left.SuccessThreshold, left.FailureThreshold = 0, 0, 0, 0, 0
	port := func(field path, v intstr.IntOrString) int32 {
		if v.Type == intstr.Int {
			return v.IntVal
		}
		if v.StrVal == PortName && tfPort != 0 {
			return tfPort
		}
		for _, cp := range ports {
			if cp.Name == v.StrVal {
				return cp.ContainerPort
			}
		}
		if v.StrVal == PortName {
			return job.DefaultPort
		}
		c.issues.unsupported(string(field), "names port %q, which the container does not declare", v.StrVal)
		return 0
	}
	switch {
	case p.Exec != nil:
		out.Exec = &job.ExecAction{Command: p.Exec.Command}
		left.Exec = nil
	case p.TCPSocket != nil:
		out.TCPSocket = &job.TCPSocketAction{Port: port(at.f("tcpSocket").f("port"), p.TCPSocket.Port)}
		left.TCPSocket.Port = intstr.IntOrString{}
	case p.HTTPGet != nil:
		h := p.HTTPGet
		out.HTTPGet = &job.HTTPGetAction{Path: h.Path, Port: port(at.f("httpGet").f("port"), h.Port), Scheme: string(h.Scheme)}
		for _, hd := range h.HTTPHeaders {
			out.HTTPGet.Headers = append(out.HTTPGet.Headers, job.HTTPHeader{Name: hd.Name, Value: hd.Value})
		}
		left.HTTPGet.Path, left.HTTPGet.Port, left.HTTPGet.Scheme, left.HTTPGet.HTTPHeaders = "", intstr.IntOrString{}, "", nil
	default:
		out = nil
	}
	c.issues.leftovers(at, left, notSupported)
	return out
}

// securityContext carries privileged over and clears what Trainyard sets
// anyway (no privilege escalation, all capabilities dropped); the rest is
// left for leftovers to report.
func (c *converter) securityContext(r *job.ReplicaSpec, sc *corev1.SecurityContext) {
	if sc.Privileged != nil {
		r.Privileged = *sc.Privileged
		sc.Privileged = nil
	}
	if a := sc.AllowPrivilegeEscalation; a != nil && !*a {
		sc.AllowPrivilegeEscalation = nil
	}
	if caps := sc.Capabilities; caps != nil && len(caps.Add) == 0 && slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) {
		sc.Capabilities = nil
	}
	if sp := sc.SeccompProfile; sp != nil && sp.Type == corev1.SeccompProfileTypeRuntimeDefault {
		sc.SeccompProfile = nil
	}
}
