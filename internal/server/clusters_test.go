package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// stubClusters records what ClusterService received over the gateway.
type stubClusters struct {
	pb.UnimplementedClusterServiceServer
	mu  sync.Mutex
	got []string
}

func (s *stubClusters) note(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, v)
}

func (s *stubClusters) ListClusters(context.Context, *pb.ListClustersRequest) (*pb.ListClustersResponse, error) {
	s.note("list")
	return &pb.ListClustersResponse{Clusters: []*pb.Cluster{{Name: "clusters/default", State: pb.ClusterState_CLUSTER_STATE_READY,
		Capacity: &pb.Quota{Gpu: 8}, NodeCount: 2}}}, nil
}

func (s *stubClusters) DrainCluster(_ context.Context, req *pb.DrainClusterRequest) (*pb.Cluster, error) {
	s.note("drain " + req.GetName())
	return &pb.Cluster{Name: req.GetName(), State: pb.ClusterState_CLUSTER_STATE_DRAINING}, nil
}

func (s *stubClusters) CreateCluster(_ context.Context, req *pb.CreateClusterRequest) (*pb.Cluster, error) {
	s.note("create " + req.GetClusterId() + " " + req.GetCluster().GetLabels()["region"])
	return &pb.Cluster{Name: "clusters/" + req.GetClusterId()}, nil
}

func (s *stubClusters) DeleteCluster(_ context.Context, req *pb.DeleteClusterRequest) (*pb.DeleteClusterResponse, error) {
	if req.GetForce() {
		s.note("delete " + req.GetName() + " forced")
	} else {
		s.note("delete " + req.GetName())
	}
	return &pb.DeleteClusterResponse{}, nil
}

// ClusterService is served over REST (issue 45): its routes, its 405s,
// and its paths in the OpenAPI document.
func TestClusterServiceOverREST(t *testing.T) {
	cs := &stubClusters{}
	s := startServer(t, &stubJobs{}, func(c *Config) { c.Clusters = cs })

	resp, body := do(t, s, "GET", "/v1/clusters", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"clusters":[{"name":"clusters/default","state":"CLUSTER_STATE_READY","capacity":{"gpu":8},"nodeCount":2}]}`, body)
	resp, body = do(t, s, "POST", "/v1/clusters/eu-1:drain", strings.NewReader(`{}`), "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"state":"CLUSTER_STATE_DRAINING"`)
	resp, body = do(t, s, "POST", "/v1/clusters?clusterId=eu-2", strings.NewReader(`{"labels":{"region":"eu"}}`), "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = do(t, s, "DELETE", "/v1/clusters/eu-2?force=true", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, []string{"list", "drain clusters/eu-1", "create eu-2 eu", "delete clusters/eu-2 forced"}, cs.got)

	resp, _ = do(t, s, "PUT", "/v1/clusters/eu-1", nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "DELETE, GET, PATCH", resp.Header.Get("Allow"))
	resp, _ = do(t, s, "GET", "/v1/clusters/eu-1:cordon", nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))

	resp, body = do(t, s, "GET", "/openapi.json", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, p := range []string{`"/v1/clusters"`, `"/v1/clusters/{cluster}:drain"`, `"ClusterService_DeleteCluster"`} {
		require.True(t, strings.Contains(body, p), "the OpenAPI document has no %s", p)
	}
}
