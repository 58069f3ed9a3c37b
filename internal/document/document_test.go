package document

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func TestYAMLToJSON(t *testing.T) {
	got, err := YAMLToJSON([]byte("apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n    Worker: {replicas: 2, big: 18446744073709551615}\n  args: [a, 1.5, true, ~]\n  when: 2026-01-02\n"), Limits{})
	require.NoError(t, err)
	require.JSONEq(t, `{"apiVersion":"kubeflow.org/v1","kind":"TFJob","spec":{"tfReplicaSpecs":{"Worker":{"replicas":2,"big":18446744073709551615}},"args":["a",1.5,true,null],"when":"2026-01-02"}}`, string(got))

	got, err = YAMLToJSON([]byte("a: &x [1, 2]\nb: *x\n"), Limits{})
	require.NoError(t, err)
	require.JSONEq(t, `{"a":[1,2],"b":[1,2]}`, string(got))
}

// Issue 41, findings 1, 6 and 7: what a YAML body may not be, each refused
// naming the field (or the limit) in plain words.
func TestYAMLToJSONRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		limits     Limits
		want       string
	}{
		{"duplicate key", "kind: TFJob\nkind: Pod\n", Limits{}, "kind: the key appears twice in one map (line 2)"},
		{"second document", "kind: TFJob\n---\nkind: Pod\n", Limits{}, "more than one YAML document"},
		{"nan", "spec:\n  x: .nan\n", Limits{}, "spec.x: .nan is not a finite number"},
		{"inf", "spec: {x: -.inf}\n", Limits{}, "spec.x: -.inf is not a finite number"},
		{"huge int", "spec:\n  Worker:\n    replicas: 99999999999999999999999999\n", Limits{}, "spec.Worker.replicas: 99999999999999999999999999 is too large: integers must fit in 64 bits"},
		{"complex key", "spec:\n  ? [a, b]\n  : c\n", Limits{}, "spec: a key must be a plain value, not a list or map"},
		{"merge key", "a: &x {b: 1}\nc:\n  <<: *x\n", Limits{}, "c: merge keys (<<) are not supported"},
		{"flow list past the budget", "args: [" + strings.Repeat("0,", 200) + "0]\n", Limits{MaxValues: 100}, "the body has more than 100 values (the server's limit)"},
		{"the probe's 4 MB list", "args: [" + strings.Repeat("0,", 2_000_000) + "0]\n", Limits{}, "the body has more than 100000 values"},
		{"the probe's 300k keys", strings.Repeat("k: v\n", 300_000), Limits{}, "the body has more than 100000 values"},
		{"map past the budget", strings.Repeat("k: v\n", 10), Limits{MaxValues: 15}, "the body has more than 15 values"},
		{"aliases past the budget", "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n", Limits{MaxValues: 500}, "more than 500 values"},
		{"deep", strings.Repeat("[", 70) + strings.Repeat("]", 70), Limits{}, "nested more than 64 levels deep"},
		{"invalid UTF-8", "a: \"\xff\"\n", Limits{}, "not valid UTF-8"},
		{"not yaml", "a: [", Limits{}, "the body is not YAML"},
		{"empty", "", Limits{}, "the body is empty"},
		{"too large once JSON", "a: [" + strings.Repeat("xxxxxxxxxx,", 100) + "x]", Limits{MaxBytes: 500}, "larger than 500 bytes once converted to JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := YAMLToJSON([]byte(tc.yaml), tc.limits)
			require.ErrorContains(t, err, tc.want)
			var de *Error
			require.ErrorAs(t, err, &de)
		})
	}
}

// Issue 41, findings 6 and 7: a JSON body is one value, strictly.
func TestCheckJSON(t *testing.T) {
	require.NoError(t, CheckJSON([]byte(`{"spec":{"a":[1,2,{"b":null}]},"c":"d"}`), Limits{}))
	for _, tc := range []struct{ name, body, want string }{
		{"not json", `{not json`, `the body is not valid JSON: unexpected character 'n' at byte 1`},
		{"trailing garbage", `{"spec":{}}garbage`, "unexpected data after the JSON value"},
		{"two objects", `{"spec":{}}{"spec":{}}`, "unexpected data after the JSON value"},
		{"duplicate key", `{"spec":{"kind":"a","kind":"b"}}`, "spec.kind: the key appears twice"},
		{"invalid UTF-8", "{\"job\":{\"displayName\":\"a\xffb\"}}", "job.displayName: not valid UTF-8 (at byte 24)"},
		{"truncated", `{"spec":{"a":`, "spec.a: the body is not valid JSON: it ends before the value does"},
		{"too many values", "[" + strings.Repeat("0,", 100_000) + "0]", "more than 100000 values"},
		{"too deep", strings.Repeat("[", 65) + strings.Repeat("]", 65), "nested more than 64 levels"},
		{"empty", ``, "the body is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, CheckJSON([]byte(tc.body), Limits{}), tc.want)
		})
	}
}

// The fast path (jsontext) passes exactly the bodies the walker passes.
func FuzzCheckJSONPaths(f *testing.F) {
	for _, body := range []string{
		`{"spec":{"a":[1,2,{"b":null}]},"c":"d"}`, `{}`, `[]`, `"s"`, `0`, ` {"a":{"a":{"a":1}}} `,
		`{"a":1,"b":{"a":1}}`, `{"a":"\u00e9","\u0061":2}`, `{"a":[{"k":1},{"k":2}]}`,
		`{not json`, `{"spec":{}}garbage`, `{"spec":{}}{"spec":{}}`, `{"spec":{"kind":"a","kind":"b"}}`,
		"{\"job\":{\"displayName\":\"a\xffb\"}}", `{"spec":{"a":`, ``, `1 2`, `[1,]`, `{"a":1,}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 65) + strings.Repeat("]", 65),
		"[" + strings.Repeat("0,", 99) + "0]", "[" + strings.Repeat("0,", 100) + "0]",
	} {
		f.Add(body)
	}
	l := Limits{MaxValues: 101, MaxDepth: 64}.withDefaults()
	f.Fuzz(func(t *testing.T, body string) {
		walked := walkCheck([]byte(body), l)
		if got := passes([]byte(body), l); got != (walked == nil) {
			t.Fatalf("%q: the fast path says %v, the walker %v", body, got, walked)
		}
	})
}

func BenchmarkCheckJSON(b *testing.B) {
	body := []byte(`{"parent":"tenants/acme","jobId":"bench-000001","job":{"displayName":"resnet","labels":{"team":"vision"},"spec":{"replicas":[` +
		`{"type":"CHIEF","count":1,"image":"tensorflow/tensorflow:2.16.1","command":["python","train.py","--epochs","10"],"resources":{"cpu":"2","memory":"4Gi","gpu":1}},` +
		`{"type":"WORKER","count":4,"image":"tensorflow/tensorflow:2.16.1","command":["python","train.py","--epochs","10"],"resources":{"cpu":"2","memory":"4Gi","gpu":1},"env":[{"name":"A","value":"1"}]}],` +
		`"runPolicy":{"backoffLimit":3,"activeDeadlineSeconds":3600}}}}`)
	for name, check := range map[string]func([]byte, Limits) error{"CheckJSON": CheckJSON, "walker": walkCheck} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := check(body, Limits{}.withDefaults()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"{\n  \"spec\": {\"priority\": 3000000000}}", "spec.priority: invalid value 3000000000: expected an integer between -2147483648 and 2147483647"},
		{`{"spec": {"replicas": [{"count": "x"}]}}`, `spec.replicas[0].count: invalid value "x": expected an integer between`},
		{`{"spec": {"nope": 1}}`, "spec.nope: unknown field"},
		{`{"createTime": "garbage"}`, "createTime: invalid value"},
	} {
		err := protojson.Unmarshal([]byte(tc.body), &pb.Job{})
		require.Error(t, err, tc.body)
		d := Describe(err, []byte(tc.body))
		require.ErrorContains(t, d, tc.want)
		require.NotContains(t, d.Error(), "proto:")
	}
}
