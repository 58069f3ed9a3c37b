package api

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// tfjobStruct reads a TFJob manifest of internal/tfjob's testdata as the
// request carries it.
func tfjobStruct(t *testing.T, file string) *structpb.Struct {
	t.Helper()
	b, err := os.ReadFile("../tfjob/testdata/" + file)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(b, &m))
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

func importServer() (*JobServer, *fakeStore) {
	st := newFakeStore()
	st.tenants["a"] = tenant.Tenant{ID: "a", Namespace: "ty-a", State: tenant.Active}
	st.secrets["a/wandb"] = tenant.Secret{Tenant: "a", Name: "wandb", Keys: []string{"api-key"}}
	st.secrets["a/gcs-creds"] = tenant.Secret{Tenant: "a", Name: "gcs-creds", Keys: []string{"key.json"}}
	return NewJobServer(Deps{Store: st, TFJobPriorityClasses: map[string]int32{"high": 500}}), st
}

func TestImportTFJob(t *testing.T) {
	srv, st := importServer()
	ctx := context.Background()
	resp, err := srv.ImportTFJob(ctx, &pb.ImportTFJobRequest{Parent: "tenants/a", Tfjob: tfjobStruct(t, "full.yaml"), RequestId: "r1"})
	require.NoError(t, err)
	j := resp.GetJob()
	require.Equal(t, "tenants/a/jobs/resnet", j.GetName(), "the id is the TFJob's metadata.name")
	require.Equal(t, int32(500), j.GetSpec().GetPriority(), "priorityClass high, through the server's map")
	require.Len(t, j.GetSpec().GetReplicas(), 4)
	require.Equal(t, int32(3000), j.GetSpec().GetReplicas()[0].GetReadinessProbe().GetTcpSocket().GetPort())
	require.Len(t, resp.GetWarnings(), 1)
	require.False(t, resp.GetWarnings()[0].GetUnsupported(), "minAvailable is a note")
	require.Equal(t, 1, st.count("JobCreate"))

	again, err := srv.ImportTFJob(ctx, &pb.ImportTFJobRequest{Parent: "tenants/a", RequestId: "r1"})
	require.NoError(t, err, "a retry finds the first job before looking at the body")
	require.Equal(t, j.GetUid(), again.GetJob().GetUid())
	require.Equal(t, 1, st.count("JobCreate"))
}

func TestImportTFJobRefusesWhatItCannotHonour(t *testing.T) {
	srv, st := importServer()
	ctx := context.Background()
	_, err := srv.ImportTFJob(ctx, &pb.ImportTFJobRequest{Parent: "tenants/a", Tfjob: tfjobStruct(t, "unsupported.yaml")})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	vs := badRequest(t, err).GetFieldViolations()
	require.Len(t, vs, 17, "16 fields and the hint")
	require.Equal(t, "tfjob.spec.tfReplicaSpecs.Worker.template.spec.containers[0].imagr", vs[0].GetField())
	require.Equal(t, "allowWarnings", vs[len(vs)-1].GetField())
	require.Zero(t, st.count("JobCreate"))

	resp, err := srv.ImportTFJob(ctx, &pb.ImportTFJobRequest{Parent: "tenants/a", Tfjob: tfjobStruct(t, "unsupported.yaml"), AllowWarnings: true, JobId: "sink"})
	require.NoError(t, err)
	require.Equal(t, "tenants/a/jobs/sink", resp.GetJob().GetName(), "the request's job id wins over metadata.name")
	require.Len(t, resp.GetWarnings(), 19)
	require.Equal(t, 1, st.count("JobCreate"))
}

func TestImportTFJobValidateOnlyCreatesNothing(t *testing.T) {
	srv, st := importServer()
	resp, err := srv.ImportTFJob(context.Background(), &pb.ImportTFJobRequest{Parent: "tenants/a", Tfjob: tfjobStruct(t, "master.yaml"), ValidateOnly: true})
	require.NoError(t, err)
	require.Equal(t, pb.ReplicaType_REPLICA_TYPE_CHIEF, resp.GetJob().GetSpec().GetReplicas()[0].GetType())
	require.Equal(t, int32(2222), resp.GetJob().GetSpec().GetReplicas()[1].GetPort(), "defaulted as a created job would be")
	require.Zero(t, st.count("JobCreate"))
}

func TestImportTFJobNotATFJob(t *testing.T) {
	srv, _ := importServer()
	for name, s := range map[string]*structpb.Struct{
		"PyTorchJob": tfjobStruct(t, "pytorchjob.yaml"),
		"missing":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := srv.ImportTFJob(context.Background(), &pb.ImportTFJobRequest{Parent: "tenants/a", Tfjob: s})
			require.Equal(t, codes.InvalidArgument, status.Code(err))
			vs := badRequest(t, err).GetFieldViolations()
			require.Len(t, vs, 1)
			require.Equal(t, "tfjob", vs[0].GetField())
		})
	}
}

func TestImportTFJobChecksTenantSecrets(t *testing.T) {
	srv, st := importServer()
	delete(st.secrets, "a/wandb")
	_, err := srv.ImportTFJob(context.Background(), &pb.ImportTFJobRequest{Parent: "tenants/a", Tfjob: tfjobStruct(t, "full.yaml")})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, "spec.replicas[0].env[1].secret.secret", badRequest(t, err).GetFieldViolations()[0].GetField())
}
