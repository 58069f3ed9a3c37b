package server

import (
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestYAMLBody(t *testing.T) {
	y := yamlBody{strictJSON{JSONPb: &runtime.JSONPb{}}}
	var s *structpb.Struct
	require.NoError(t, y.NewDecoder(strings.NewReader("apiVersion: kubeflow.org/v1\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n    Worker: {replicas: 2}\n")).Decode(&s))
	require.Equal(t, "TFJob", s.GetFields()["kind"].GetStringValue())
	require.Equal(t, 2.0, s.GetFields()["spec"].GetStructValue().GetFields()["tfReplicaSpecs"].GetStructValue().GetFields()["Worker"].GetStructValue().GetFields()["replicas"].GetNumberValue())

	var json *structpb.Struct
	require.NoError(t, y.NewDecoder(strings.NewReader(`{"kind": "TFJob"}`)).Decode(&json), "JSON is YAML too")
	require.Equal(t, "TFJob", json.GetFields()["kind"].GetStringValue())

	require.ErrorContains(t, y.NewDecoder(strings.NewReader("a: [")).Decode(&s), "not YAML")
	require.ErrorContains(t, y.NewDecoder(strings.NewReader("kind: TFJob\nkind: Pod\n")).Decode(&s), "kind: the key appears twice")
	require.ErrorContains(t, y.NewDecoder(strings.NewReader("kind: TFJob\n---\nkind: Pod\n")).Decode(&s), "more than one YAML document")
	require.Equal(t, "application/json", y.ContentType(nil), "answers are JSON")
}
