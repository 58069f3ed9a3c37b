package job

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNames(t *testing.T) {
	require.Equal(t, "mnist-worker-3", PodName("mnist", Worker, 3))
	require.Equal(t, "mnist-tensorboard", TensorBoardName("mnist"))
	require.Equal(t, "evaluator-0", ReplicaName(Evaluator, 0))
}

func TestParseReplicaName(t *testing.T) {
	for _, tc := range []struct {
		in    string
		typ   ReplicaType
		index int32
		err   bool
	}{
		{in: "worker-0", typ: Worker, index: 0},
		{in: "chief-0", typ: Chief, index: 0},
		{in: "ps-12", typ: PS, index: 12},
		{in: "evaluator-0", typ: Evaluator, index: 0},
		{in: "worker-2147483647", typ: Worker, index: 2147483647},
		{in: "", err: true},
		{in: "worker", err: true},
		{in: "worker-", err: true},
		{in: "-0", err: true},
		{in: "master-0", err: true},
		{in: "Worker-0", err: true},
		{in: "worker-01", err: true},
		{in: "worker-+1", err: true},
		{in: "worker--1", err: true},
		{in: "worker-1x", err: true},
		{in: "worker-2147483648", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			typ, index, err := ParseReplicaName(tc.in)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.typ, typ)
			require.Equal(t, tc.index, index)
			require.Equal(t, tc.in, ReplicaName(typ, index), "round trip")
		})
	}
}

func TestNewJobID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewJobID()
		require.Len(t, id, len("job-")+10)
		require.True(t, strings.HasPrefix(id, "job-"), id)
		require.Empty(t, validation.IsDNS1035Label(id), id)
		require.NoError(t, ValidJobID(id))
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
		// Generated ids leave room for the largest job Validate accepts.
		require.NoError(t, ValidNames(id, Spec{
			Replicas:    []ReplicaSpec{{Type: Evaluator, Count: MaxReplicaCount}},
			TensorBoard: &TensorBoard{},
		}))
	}
}

func TestValidJobID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{id: "mnist", ok: true},
		{id: "a", ok: true},
		{id: "resnet-50-run-7", ok: true},
		{id: strings.Repeat("a", 63), ok: true},
		{id: ""},
		{id: strings.Repeat("a", 64)},
		{id: "7up"},     // DNS-1035: starts with a letter
		{id: "Mnist"},   // lowercase only
		{id: "mnist-"},  // ends with an alphanumeric
		{id: "mn_ist"},  // no underscores
		{id: "mn.ist"},  // a label, not a subdomain
		{id: "-mnist"},  // starts with a letter
		{id: "mnist 2"}, // no spaces
	} {
		t.Run(tc.id, func(t *testing.T) {
			err := ValidJobID(tc.id)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestValidNames(t *testing.T) {
	// "-evaluator-0" is 12 characters, "-worker-9" 9, "-tensorboard" 12,
	// "-ps-9" 5: the id may use what is left of 63.
	id := func(n int) string { return strings.Repeat("j", n) }
	for _, tc := range []struct {
		name string
		id   string
		spec Spec
		ok   bool
	}{
		{name: "evaluator fits", id: id(51), spec: Spec{Replicas: []ReplicaSpec{{Type: Evaluator, Count: 1}}}, ok: true},
		{name: "evaluator too long", id: id(52), spec: Spec{Replicas: []ReplicaSpec{{Type: Evaluator, Count: 1}}}},
		{name: "index 9 fits", id: id(54), spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 10}}}, ok: true},
		{name: "index 10 does not", id: id(54), spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 11}}}},
		{name: "ps", id: id(58), spec: Spec{Replicas: []ReplicaSpec{{Type: PS, Count: 10}}}, ok: true},
		{name: "tensorboard fits", id: id(51), spec: Spec{Replicas: []ReplicaSpec{{Type: PS, Count: 1}}, TensorBoard: &TensorBoard{}}, ok: true},
		{name: "tensorboard too long", id: id(52), spec: Spec{Replicas: []ReplicaSpec{{Type: PS, Count: 1}}, TensorBoard: &TensorBoard{}}},
		{name: "huge count is clamped", id: id(51), spec: Spec{Replicas: []ReplicaSpec{{Type: Worker, Count: 1 << 30}}}, ok: true},
		{name: "unknown type ignored", id: id(63), spec: Spec{Replicas: []ReplicaSpec{{Type: "x", Count: 1}}}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidNames(tc.id, tc.spec)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestReservedJobID(t *testing.T) {
	require.NoError(t, ReservedJobID("mnist"))
	require.NoError(t, ReservedJobID("tensorboard"))
	err := ReservedJobID("mnist-tensorboard")
	require.EqualError(t, err, `"mnist-tensorboard" ends in "-tensorboard", which is how job "mnist" names its TensorBoard; choose another id`)
}
