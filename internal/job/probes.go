package job

import (
	"fmt"
	"regexp"
	"strings"
)

// Health probes of a replica's container: Kubernetes' own liveness,
// readiness and startup probes, with the handlers and knobs training code
// needs (exec, TCP socket, HTTP GET; delays, periods, thresholds).
//
// A TCP readiness probe on the replica's TensorFlow port is the suggested
// default: the replica is ready once its tf.distribute server listens.
// Readiness feeds the AllReplicasReady condition (plan_ready.go); it never
// holds a job back, as TensorFlow's servers find each other before they are
// ready (the headless Service publishes unready addresses).
//
// Replica pods run with restartPolicy Never, so a container its liveness
// probe kills ends its pod; the replica's restart policy then decides, as
// for any other failure. The kill's exit code (137, or 143 when the
// program exits on SIGTERM) is retryable under ExitCode, so with OnFailure
// or ExitCode a liveness failure is a restart like any other: recorded on
// the replica, counted against backoffLimit. With Never it fails the job,
// which turns a hung program into a failure instead of a job that runs
// until its deadline.

// Probe is a Kubernetes container probe. Exactly one of Exec, TCPSocket
// and HTTPGet is set. Zero numbers mean Kubernetes' defaults (period 10 s,
// timeout 1 s, success threshold 1, failure threshold 3).
type Probe struct {
	Exec                *ExecAction      `json:"exec,omitempty"`
	TCPSocket           *TCPSocketAction `json:"tcpSocket,omitempty"`
	HTTPGet             *HTTPGetAction   `json:"httpGet,omitempty"`
	InitialDelaySeconds int32            `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32            `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int32            `json:"timeoutSeconds,omitempty"`
	SuccessThreshold    int32            `json:"successThreshold,omitempty"`
	FailureThreshold    int32            `json:"failureThreshold,omitempty"`
}

// ExecAction runs a command in the container; exit status 0 is success.
type ExecAction struct {
	Command []string `json:"command"`
}

// TCPSocketAction succeeds when the port accepts a connection. Port 0 is
// the replica's TensorFlow port (Default fills it in).
type TCPSocketAction struct {
	Port int32 `json:"port,omitempty"`
}

// HTTPGetAction succeeds on a 2xx or 3xx answer to GET path on the port.
type HTTPGetAction struct {
	Path string `json:"path,omitempty"`
	Port int32  `json:"port"`
	// Scheme is HTTP (the default) or HTTPS.
	Scheme  string       `json:"scheme,omitempty"`
	Headers []HTTPHeader `json:"headers,omitempty"`
}

// HTTPHeader is a request header of an HTTP probe.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Probe kinds, as the fields of ReplicaSpec name them.
const (
	ProbeLiveness  = "livenessProbe"
	ProbeReadiness = "readinessProbe"
	ProbeStartup   = "startupProbe"
)

// Probes returns the replica's probes by kind, leaving out unset ones, in
// the order liveness, readiness, startup.
func (r *ReplicaSpec) Probes() []NamedProbe {
	var out []NamedProbe
	for _, p := range []NamedProbe{{ProbeLiveness, r.LivenessProbe}, {ProbeReadiness, r.ReadinessProbe}, {ProbeStartup, r.StartupProbe}} {
		if p.Probe != nil {
			out = append(out, p)
		}
	}
	return out
}

// NamedProbe is a probe with its kind.
type NamedProbe struct {
	Kind  string
	Probe *Probe
}

// defaultProbes makes a TCP probe's port explicit: the replica's port.
func (r *ReplicaSpec) defaultProbes() {
	for _, p := range r.Probes() {
		if t := p.Probe.TCPSocket; t != nil && t.Port == 0 {
			t.Port = r.Port
		}
	}
}

// Probe limits. Kubernetes takes larger numbers; these keep a typo (an
// hour-long period in milliseconds) from making a probe that never runs.
const (
	MaxProbeSeconds   = 3600
	MaxProbeThreshold = 100
	MaxProbeHeaders   = 16
)

// httpHeaderName is an RFC 7230 token.
var httpHeaderName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// probes checks a replica's probes.
func (v *Violations) probes(p string, r *ReplicaSpec) {
	for _, np := range r.Probes() {
		v.probe(p+"."+np.Kind, np.Kind, np.Probe)
	}
}

func (v *Violations) probe(p, kind string, pr *Probe) {
	handlers := 0
	if pr.Exec != nil {
		handlers++
		if len(pr.Exec.Command) == 0 {
			v.Add(p+".exec.command", "is required: the command to run in the container")
		}
		v.argv(p+".exec.command", pr.Exec.Command)
	}
	if pr.TCPSocket != nil {
		handlers++
		v.probePort(p+".tcpSocket.port", pr.TCPSocket.Port)
	}
	if h := pr.HTTPGet; h != nil {
		handlers++
		v.probePort(p+".httpGet.port", h.Port)
		if h.Path != "" && !strings.HasPrefix(h.Path, "/") {
			v.Add(p+".httpGet.path", "%q must start with /", h.Path)
		}
		switch strings.ToUpper(h.Scheme) {
		case "", "HTTP", "HTTPS":
		default:
			v.Add(p+".httpGet.scheme", "%q is not HTTP or HTTPS", h.Scheme)
		}
		if len(h.Headers) > MaxProbeHeaders {
			v.Add(p+".httpGet.headers", "has %d headers; at most %d are allowed", len(h.Headers), MaxProbeHeaders)
		}
		for i, hd := range h.Headers {
			if !httpHeaderName.MatchString(hd.Name) {
				v.Add(fmt.Sprintf("%s.httpGet.headers[%d].name", p, i), "%q is not an HTTP header name", hd.Name)
			}
		}
	}
	if handlers != 1 {
		v.Add(p, "needs exactly one of exec, tcpSocket or httpGet, not %d", handlers)
	}
	for _, f := range []struct {
		name     string
		val, max int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds, MaxProbeSeconds},
		{"periodSeconds", pr.PeriodSeconds, MaxProbeSeconds},
		{"timeoutSeconds", pr.TimeoutSeconds, MaxProbeSeconds},
		{"successThreshold", pr.SuccessThreshold, MaxProbeThreshold},
		{"failureThreshold", pr.FailureThreshold, MaxProbeThreshold},
	} {
		if f.val < 0 || f.val > f.max {
			v.Add(p+"."+f.name, "%d is out of range 0..%d (0: Kubernetes' default)", f.val, f.max)
		}
	}
	// Kubernetes' own rule: a liveness or startup probe that had to
	// succeed twice would kill a container that has just recovered.
	if kind != ProbeReadiness && pr.SuccessThreshold > 1 {
		v.Add(p+".successThreshold", "must be 1 (or unset) for a %s", kind)
	}
}

func (v *Violations) probePort(p string, port int32) {
	if port < 1 || port > 65535 {
		v.Add(p, "%d is not a port number (1..65535)", port)
	}
}
