package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeClusterService records calls and answers with a fixed picture.
type fakeClusterService struct {
	pb.UnimplementedClusterServiceServer
	*recorder
}

func testCluster(name string, state pb.ClusterState) *pb.Cluster {
	return &pb.Cluster{Name: "clusters/" + name, State: state, AdminState: pb.ClusterState_CLUSTER_STATE_READY,
		Labels: map[string]string{"region": "eu"}, NodeCount: 12, Agent: "w-1",
		HeartbeatTime: timestamppb.New(testNow.Add(-7 * time.Second)),
		Capacity:      &pb.Quota{Gpu: 64, Cpu: "768", Memory: "3Ti", Pods: 1320}, Usage: &pb.Quota{Gpu: 24, Cpu: "0", Memory: "0", Pods: 30}}
}

func (f *fakeClusterService) ListClusters(ctx context.Context, req *pb.ListClustersRequest) (*pb.ListClustersResponse, error) {
	f.record(ctx, "ListClusters", req)
	lost := testCluster("us-1", pb.ClusterState_CLUSTER_STATE_UNREACHABLE)
	lost.AdminState = pb.ClusterState_CLUSTER_STATE_DRAINING
	lost.HeartbeatTime = timestamppb.New(testNow.Add(-5 * time.Minute))
	return &pb.ListClustersResponse{Clusters: []*pb.Cluster{testCluster("default", pb.ClusterState_CLUSTER_STATE_READY), lost}}, nil
}

func (f *fakeClusterService) GetCluster(ctx context.Context, req *pb.GetClusterRequest) (*pb.Cluster, error) {
	f.record(ctx, "GetCluster", req)
	return testCluster(lastSegment(req.GetName()), pb.ClusterState_CLUSTER_STATE_READY), nil
}

func (f *fakeClusterService) CreateCluster(ctx context.Context, req *pb.CreateClusterRequest) (*pb.Cluster, error) {
	f.record(ctx, "CreateCluster", req)
	return &pb.Cluster{Name: "clusters/" + req.GetClusterId(), State: pb.ClusterState_CLUSTER_STATE_UNREACHABLE}, nil
}

func (f *fakeClusterService) UpdateCluster(ctx context.Context, req *pb.UpdateClusterRequest) (*pb.Cluster, error) {
	f.record(ctx, "UpdateCluster", req)
	return req.GetCluster(), nil
}

func (f *fakeClusterService) DrainCluster(ctx context.Context, req *pb.DrainClusterRequest) (*pb.Cluster, error) {
	f.record(ctx, "DrainCluster", req)
	return &pb.Cluster{Name: req.GetName(), State: pb.ClusterState_CLUSTER_STATE_DRAINING}, nil
}

func (f *fakeClusterService) CordonCluster(ctx context.Context, req *pb.CordonClusterRequest) (*pb.Cluster, error) {
	f.record(ctx, "CordonCluster", req)
	return &pb.Cluster{Name: req.GetName(), State: pb.ClusterState_CLUSTER_STATE_CORDONED}, nil
}

func (f *fakeClusterService) UncordonCluster(ctx context.Context, req *pb.UncordonClusterRequest) (*pb.Cluster, error) {
	f.record(ctx, "UncordonCluster", req)
	return &pb.Cluster{Name: req.GetName(), State: pb.ClusterState_CLUSTER_STATE_READY}, nil
}

func (f *fakeClusterService) DeleteCluster(ctx context.Context, req *pb.DeleteClusterRequest) (*pb.DeleteClusterResponse, error) {
	f.record(ctx, "DeleteCluster", req)
	if lastSegment(req.GetName()) == "default" {
		return nil, status.Error(codes.FailedPrecondition, "failed precondition: the default cluster cannot be deleted")
	}
	return &pb.DeleteClusterResponse{}, nil
}

// startClusterFake serves only ClusterService, on the fixture's recorder.
func startClusterFake(t *testing.T) *fixture {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fixture{addr: lis.Addr().String(), rec: &recorder{}}
	s := grpc.NewServer()
	pb.RegisterClusterServiceServer(s, &fakeClusterService{recorder: f.rec})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return f
}

// list shows state (with the operator's under UNREACHABLE), heartbeat
// age, nodes and GPUs used/capacity; get the detail.
func TestClustersListAndGet(t *testing.T) {
	f := startClusterFake(t)
	r := f.tyctl(t, nil, "--token", testToken, "clusters", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `NAME\s+STATE\s+HEARTBEAT\s+NODES\s+GPUS\s+LABELS`, r.stdout)
	require.Regexp(t, `default\s+READY\s+7s\s+12\s+24/64\s+region=eu`, r.stdout)
	require.Regexp(t, `us-1\s+UNREACHABLE \(DRAINING\)\s+5m\S*\s+12\s+24/64`, r.stdout)

	r = f.tyctl(t, nil, "--token", testToken, "clusters", "get", "default")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "clusters/default", f.rec.methodCalls("GetCluster")[0].req.(*pb.GetClusterRequest).GetName())
	require.Regexp(t, `State:\s+READY`, r.stdout)
	require.Regexp(t, `Heartbeat:\s+.*\(7s ago\) from w-1`, r.stdout)
	require.Regexp(t, `GPUs:\s+24/64 used`, r.stdout)
	require.Regexp(t, `Usage:\s+gpu=24 pods=30\n`, r.stdout, "zeros left out")

	r = f.tyctl(t, nil, "--token", testToken, "-o", "json", "clusters", "get", "default")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"state": "CLUSTER_STATE_READY"`)
}

// register, update, drain, cordon, uncordon and delete send what the
// command line says.
func TestClustersWrites(t *testing.T) {
	f := startClusterFake(t)
	r := f.tyctl(t, nil, "--token", testToken, "clusters", "register", "eu-1", "--display-name", "Frankfurt", "--label", "region=eu")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "cluster eu-1 registered; start its agent: trainyard worker --cluster eu-1\n", r.stdout)
	want := &pb.CreateClusterRequest{ClusterId: "eu-1", Cluster: &pb.Cluster{DisplayName: "Frankfurt", Labels: map[string]string{"region": "eu"}}}
	got := f.rec.methodCalls("CreateCluster")[0].req
	require.True(t, proto.Equal(want, got), "got %v", got)

	r = f.tyctl(t, nil, "--token", testToken, "clusters", "update", "eu-1", "--label", "cost=spot")
	require.Equal(t, 0, r.code, r.stderr)
	wantUp := &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/eu-1", Labels: map[string]string{"cost": "spot"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}}
	gotUp := f.rec.methodCalls("UpdateCluster")[0].req
	require.True(t, proto.Equal(wantUp, gotUp), "got %v", gotUp)
	r = f.tyctl(t, nil, "--token", testToken, "clusters", "update", "eu-1")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "nothing to update")

	for verb, want := range map[string]string{"drain": "DRAINING", "cordon": "CORDONED", "uncordon": "READY"} {
		r = f.tyctl(t, nil, "--token", testToken, "clusters", verb, "eu-1")
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "cluster eu-1: "+want+"\n", r.stdout)
	}
	require.Len(t, f.rec.methodCalls("DrainCluster"), 1)
	require.Len(t, f.rec.methodCalls("CordonCluster"), 1)
	require.Len(t, f.rec.methodCalls("UncordonCluster"), 1)

	r = f.tyctl(t, nil, "--token", testToken, "clusters", "delete", "eu-1", "--force")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, proto.Equal(&pb.DeleteClusterRequest{Name: "clusters/eu-1", Force: true}, f.rec.methodCalls("DeleteCluster")[0].req))
	r = f.tyctl(t, nil, "--token", testToken, "clusters", "delete", "default")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "default cluster cannot be deleted")
}
