package job

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets (make fuzz runs each for $(FUZZTIME); make test for a few
// seconds). A crasher the fuzzer finds lands in testdata/fuzz/<Target>/
// and is then a regression case of every go test.

// fuzzSeedSpecs are the specs of the unit tests, as the fuzzer's seeds.
func fuzzSeedSpecs() []Spec {
	seeds := []Spec{
		specOf(Chief, 1, Worker, 1),
		specOf(Worker, 2),
		specOf(PS, 1, Worker, 2),
		specOf(Evaluator, 1, Chief, 1),
		specOf(Chief, 1, Worker, 4, PS, 2, Evaluator, 1),
		specOf(Chief, 1),
		{Replicas: []ReplicaSpec{{Type: Chief}, {Type: PS, Count: 1, Port: 1234}}},
		{Replicas: []ReplicaSpec{{Type: Chief, Count: 1, Port: 5000}, {Type: Worker, Count: 2, Port: 6000},
			{Type: PS, Count: 1, Port: 7000}, {Type: Evaluator, Count: 1, Port: 8000}}},
	}
	return append(seeds, valJob().Spec)
}

// FuzzSpec: any spec a client can send is validated without panicking;
// every spec that validates has a demand, and renders, for every replica, a
// TF_CONFIG that TensorFlow's own cluster rules accept.
func FuzzSpec(f *testing.F) {
	for _, s := range fuzzSeedSpecs() {
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add("mnist", b)
	}
	f.Add("Bad_Name", []byte(`{"replicas":[{"type":"worker","count":-1}]}`))
	f.Fuzz(func(t *testing.T, id string, specJSON []byte) {
		var spec Spec
		if json.Unmarshal(specJSON, &spec) != nil {
			return
		}
		j := Job{Tenant: "t", Name: id, Spec: spec}
		j.Spec.Default()
		if len(Validate(&j)) > 0 {
			return
		}
		if _, err := j.Spec.Demand(); err != nil {
			t.Fatalf("a valid spec has no demand: %v", err)
		}
		checkTFConfigs(t, j)
	})
}

// checkTFConfigs renders the TF_CONFIG of every replica of a valid job (the
// first and last of each type when there are many) and checks each.
func checkTFConfigs(t *testing.T, j Job) {
	t.Helper()
	var total int32
	for _, r := range j.Spec.Replicas {
		total += r.Count
	}
	for _, r := range j.Spec.Replicas {
		indexes := []int32{0, r.Count - 1}
		if total <= 64 {
			indexes = nil
			for i := range r.Count {
				indexes = append(indexes, i)
			}
		}
		for _, i := range indexes {
			cfg, ok := TFConfig(j.Name, "ty-t", j.Spec, r.Type, i)
			if total == 1 {
				if ok {
					t.Fatalf("a job of one replica got TF_CONFIG %s", cfg)
				}
				continue
			}
			if !ok {
				t.Fatalf("%s-%d of a valid job got no TF_CONFIG", r.Type, i)
			}
			if err := tensorFlowAccepts(cfg, j.Name); err != nil {
				t.Fatalf("TF_CONFIG of %s-%d: %v\n%s", r.Type, i, err, cfg)
			}
		}
	}
}

// parsedTFConfig is TF_CONFIG as TensorFlow reads it.
type parsedTFConfig struct {
	Cluster map[string][]string `json:"cluster"`
	Task    struct {
		Type  string `json:"type"`
		Index int32  `json:"index"`
	} `json:"task"`
	Environment string `json:"environment"`
}

// tensorFlowAccepts checks a TF_CONFIG against the rules TensorFlow
// applies to it (tf.distribute's multi_worker_util._validate_cluster_spec
// and tf.train.ClusterSpec): only the task types chief, worker, ps and
// evaluator; at most one chief and one evaluator; the task's type in the
// cluster and its index within it; every address host:port and no address
// twice. And ours: environment "cloud", tasks ordered by index
// (<job>-<type>-<i>).
func tensorFlowAccepts(cfg, jobName string) error {
	var c parsedTFConfig
	dec := json.NewDecoder(strings.NewReader(cfg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("not the TF_CONFIG format: %v", err)
	}
	allowed := []string{"chief", "worker", "ps", "evaluator"}
	seen := map[string]bool{}
	for typ, tasks := range c.Cluster {
		if !slices.Contains(allowed, typ) {
			return fmt.Errorf("task type %q is not one TensorFlow allows", typ)
		}
		if len(tasks) == 0 {
			return fmt.Errorf("task type %q has no tasks", typ)
		}
		for i, addr := range tasks {
			host, port, err := net.SplitHostPort(addr)
			if err != nil || host == "" {
				return fmt.Errorf("%s[%d] %q is not host:port", typ, i, addr)
			}
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("%s[%d] %q has no valid port", typ, i, addr)
			}
			if !strings.HasPrefix(host, PodName(jobName, ReplicaType(typ), int32(i))+".") {
				return fmt.Errorf("%s[%d] is %q, not task %d's pod", typ, i, addr, i)
			}
			if seen[addr] {
				return fmt.Errorf("address %q appears twice", addr)
			}
			seen[addr] = true
		}
	}
	if len(c.Cluster["chief"]) > 1 {
		return fmt.Errorf("there must be at most one 'chief' job")
	}
	if len(c.Cluster["evaluator"]) > 1 {
		return fmt.Errorf("there must be at most one 'evaluator' job")
	}
	if !slices.Contains(allowed, c.Task.Type) {
		return fmt.Errorf("task type %q is not allowed", c.Task.Type)
	}
	tasks, ok := c.Cluster[c.Task.Type]
	if !ok && c.Task.Type != "evaluator" {
		return fmt.Errorf("task type %q not found in the cluster", c.Task.Type)
	}
	if ok && (c.Task.Index < 0 || int(c.Task.Index) >= len(tasks)) {
		return fmt.Errorf("task index %d exceeds the %d %s tasks", c.Task.Index, len(tasks), c.Task.Type)
	}
	if c.Environment != "cloud" {
		return fmt.Errorf("environment %q, want cloud", c.Environment)
	}
	return nil
}

func TestTensorFlowAcceptsRefusesWhatTensorFlowRefuses(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"cluster":{"master":["j-master-0.replicas.ns.svc:2222"]},"task":{"type":"master","index":0},"environment":"cloud"}`:                                   "not one TensorFlow allows",
		`{"cluster":{"chief":["j-chief-0.replicas.ns.svc:2222","j-chief-1.replicas.ns.svc:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"}`:     "at most one 'chief'",
		`{"cluster":{"worker":["j-worker-0.replicas.ns.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}`:                                   "exceeds",
		`{"cluster":{"worker":["j-worker-0.replicas.ns.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"}`:                                       "not found",
		`{"cluster":{"worker":["j-worker-0.replicas.ns.svc"]},"task":{"type":"worker","index":0},"environment":"cloud"}`:                                        "host:port",
		`{"cluster":{"worker":["j-worker-0.replicas.ns.svc:2222","j-worker-0.replicas.ns.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}`: "not task 1's pod",
	} {
		err := tensorFlowAccepts(cfg, "j")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", cfg, err, want)
		}
	}
	// An evaluator may be left out of the cluster.
	if err := tensorFlowAccepts(`{"cluster":{"worker":["j-worker-0.replicas.ns.svc:2222"]},"task":{"type":"evaluator","index":0},"environment":"cloud"}`, "j"); err != nil {
		t.Error(err)
	}
}
