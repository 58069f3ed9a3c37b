package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeAudit serves 5 records in pages of 2.
type fakeAudit struct {
	pb.UnimplementedAuditServiceServer
	*recorder
}

func (f *fakeAudit) ListAuditRecords(ctx context.Context, req *pb.ListAuditRecordsRequest) (*pb.ListAuditRecordsResponse, error) {
	f.record(ctx, "ListAuditRecords", req)
	from := 0
	if req.GetPageToken() != "" {
		from, _ = strconv.Atoi(req.GetPageToken())
	}
	resp := &pb.ListAuditRecordsResponse{}
	for i := from; i < 5 && len(resp.AuditRecords) < int(min(req.GetPageSize(), 2)); i++ {
		details, _ := structpb.NewStruct(map[string]any{"keys": []any{"token"}})
		resp.AuditRecords = append(resp.AuditRecords, &pb.AuditRecord{
			Id: int64(5 - i), Time: timestamppb.New(testNow.Add(-time.Duration(i) * time.Minute)), Tenant: "tenants/ml",
			Action: "secret.put", Resource: "tenants/ml/secrets/hf-" + strconv.Itoa(i), Details: details,
			Actor: &pb.AuditActor{Subject: "alice", Groups: []string{"ml-team"}, Address: "192.0.2.7", RequestId: "r" + strconv.Itoa(i)},
		})
		if i+1 < 5 {
			resp.NextPageToken = strconv.Itoa(i + 1)
		} else {
			resp.NextPageToken = ""
		}
	}
	return resp, nil
}

func TestAuditListsTheTenantsRecords(t *testing.T) {
	f := startFake(t)
	env := map[string]string{envToken: testToken, envTenant: "ml"}
	r := f.tyctl(t, env, "audit", "--since", "24h", "--action", "secret.put", "--limit", "3", "--wide")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "SUBJECT")
	require.Contains(t, r.stdout, "tenants/ml/secrets/hf-0")
	require.Contains(t, r.stdout, `{"keys":["token"]}`)
	require.Contains(t, r.stdout, "192.0.2.7")
	require.NotContains(t, r.stdout, "hf-3", "--limit")

	calls := f.rec.methodCalls("ListAuditRecords")
	require.Len(t, calls, 2, "pages until the limit")
	req := calls[0].req.(*pb.ListAuditRecordsRequest)
	require.Equal(t, "tenants/ml", req.GetParent())
	require.Equal(t, "secret.put", req.GetAction())
	require.True(t, testNow.Add(-24*time.Hour).Equal(req.GetStartTime().AsTime()))

	r = f.tyctl(t, env, "audit", "--all", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"auditRecords"`)
	calls = f.rec.methodCalls("ListAuditRecords")
	require.Empty(t, calls[len(calls)-1].req.(*pb.ListAuditRecordsRequest).GetParent(), "--all: every tenant")
}
