package api

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/job"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Clusters (issue 45): ClusterService, for platform admins (the
// interceptor checked). Every change is audited by the store under no
// tenant; health is never set here (the sweep derives it from heartbeats).

// ClusterStore is the part of *store.Store ClusterServer uses.
type ClusterStore interface {
	ClusterCreate(ctx context.Context, c cluster.Cluster) (cluster.Cluster, error)
	ClusterGet(ctx context.Context, name string) (cluster.Cluster, error)
	ClusterList(ctx context.Context) ([]cluster.Cluster, error)
	ClusterUpdate(ctx context.Context, name string, fn func(*cluster.Cluster) error) (cluster.Cluster, error)
	ClusterSetAdmin(ctx context.Context, name string, state cluster.AdminState) (cluster.Cluster, error)
	ClusterDelete(ctx context.Context, name string, force bool) error
}

// ClusterServer implements trainyard.v1.ClusterService.
type ClusterServer struct {
	pb.UnimplementedClusterServiceServer
	deps
	clusters ClusterStore
}

// NewClusterServer returns the ClusterService implementation.
func NewClusterServer(d Deps, cs ClusterStore) *ClusterServer {
	return &ClusterServer{deps: d.withDefaults(), clusters: cs}
}

const clusterPrefix = "clusters/"

// parseCluster reads clusters/{cluster}; the error names field.
func parseCluster(field, name string) (string, error) {
	id, ok := strings.CutPrefix(name, clusterPrefix)
	if !ok {
		return "", invalid(job.FieldViolation{Field: field, Description: fmt.Sprintf("%q is not a cluster name (clusters/{cluster})", name)})
	}
	if err := cluster.ValidateName(id); err != nil {
		return "", invalid(job.FieldViolation{Field: field, Description: err.Error()})
	}
	return id, nil
}

var clusterStateToPB = map[cluster.State]pb.ClusterState{
	cluster.Ready:       pb.ClusterState_CLUSTER_STATE_READY,
	cluster.Unreachable: pb.ClusterState_CLUSTER_STATE_UNREACHABLE,
	cluster.Draining:    pb.ClusterState_CLUSTER_STATE_DRAINING,
	cluster.Cordoned:    pb.ClusterState_CLUSTER_STATE_CORDONED,
}

var adminStateToPB = map[cluster.AdminState]pb.ClusterState{
	cluster.Active:        pb.ClusterState_CLUSTER_STATE_READY,
	cluster.AdminDraining: pb.ClusterState_CLUSTER_STATE_DRAINING,
	cluster.AdminCordoned: pb.ClusterState_CLUSTER_STATE_CORDONED,
}

func clusterToPB(c cluster.Cluster) *pb.Cluster {
	return &pb.Cluster{
		Name: clusterPrefix + c.Name, DisplayName: c.DisplayName, Labels: c.Labels,
		State: clusterStateToPB[c.State()], AdminState: adminStateToPB[c.Admin],
		HeartbeatTime: ts(c.HeartbeatTime), Agent: c.Agent,
		Capacity: quotaOfVector(c.Capacity), Usage: quotaOfVector(c.Usage), NodeCount: int32(c.Nodes),
		CreateTime: ts(c.CreateTime), UpdateTime: ts(c.UpdateTime),
		AgentIdentity: identityToPB(c.AgentIdentity),
	}
}

func identityToPB(a cluster.AgentIdentity) *pb.AgentIdentity {
	if a.IsZero() {
		return nil
	}
	return &pb.AgentIdentity{Issuer: a.Issuer, Subject: a.Subject, Jwks: a.JWKS, JwksUri: a.JWKSURI}
}

func identityOf(a *pb.AgentIdentity) cluster.AgentIdentity {
	return cluster.AgentIdentity{Issuer: a.GetIssuer(), Subject: a.GetSubject(), JWKS: a.GetJwks(), JWKSURI: a.GetJwksUri()}
}

func (s *ClusterServer) CreateCluster(ctx context.Context, req *pb.CreateClusterRequest) (*pb.Cluster, error) {
	var vs job.Violations
	if err := cluster.ValidateName(req.GetClusterId()); err != nil {
		vs.Add("clusterId", "%v", err)
	}
	in := req.GetCluster()
	if in == nil {
		vs.Add("cluster", "is required")
		return nil, invalid(vs...)
	}
	c := cluster.Cluster{Name: req.GetClusterId(), DisplayName: in.GetDisplayName(), Labels: in.GetLabels(),
		AgentIdentity: identityOf(in.GetAgentIdentity())}
	for _, v := range cluster.Validate(&c) {
		if v.Field != "name" { // clusterId, reported above
			vs.AddAt("cluster.", []job.FieldViolation{v})
		}
	}
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	out, err := s.clusters.ClusterCreate(ctx, c)
	if err != nil {
		return nil, err
	}
	return clusterToPB(out), nil
}

func (s *ClusterServer) GetCluster(ctx context.Context, req *pb.GetClusterRequest) (*pb.Cluster, error) {
	name, err := parseCluster("name", req.GetName())
	if err != nil {
		return nil, err
	}
	c, err := s.clusters.ClusterGet(ctx, name)
	if err != nil {
		return nil, err
	}
	return clusterToPB(c), nil
}

func (s *ClusterServer) ListClusters(ctx context.Context, _ *pb.ListClustersRequest) (*pb.ListClustersResponse, error) {
	list, err := s.clusters.ClusterList(ctx)
	if err != nil {
		return nil, err
	}
	out := &pb.ListClustersResponse{}
	for _, c := range list {
		out.Clusters = append(out.Clusters, clusterToPB(c))
	}
	return out, nil
}

// clusterUpdateFields reads an update mask: display_name, labels, "*";
// empty: the fields set in the request (AIP-134).
func clusterUpdateFields(in *pb.Cluster, paths []string) (map[string]bool, error) {
	fields := map[string]bool{}
	if len(paths) == 0 {
		fields["display_name"] = in.GetDisplayName() != ""
		fields["labels"] = in.GetLabels() != nil
		fields["agent_identity"] = in.GetAgentIdentity() != nil
		return fields, nil
	}
	for _, p := range paths {
		switch p {
		case "*":
			fields["display_name"], fields["labels"], fields["agent_identity"] = true, true, true
		case "agent_identity", "agentIdentity":
			fields["agent_identity"] = true
		case "display_name", "displayName":
			fields["display_name"] = true
		case "labels":
			fields["labels"] = true
		default:
			return nil, invalid(job.FieldViolation{Field: "updateMask",
				Description: fmt.Sprintf("%q cannot be updated: only display_name, labels and agent_identity can", p)})
		}
	}
	return fields, nil
}

func (s *ClusterServer) UpdateCluster(ctx context.Context, req *pb.UpdateClusterRequest) (*pb.Cluster, error) {
	in := req.GetCluster()
	if in == nil {
		return nil, invalid(job.FieldViolation{Field: "cluster", Description: "is required"})
	}
	name, err := parseCluster("cluster.name", in.GetName())
	if err != nil {
		return nil, err
	}
	fields, err := clusterUpdateFields(in, req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	// Validated before the store is asked, so a bad request names its
	// field whether or not the cluster exists.
	probe := cluster.Cluster{Name: name, DisplayName: in.GetDisplayName(), Labels: in.GetLabels(), AgentIdentity: identityOf(in.GetAgentIdentity())}
	var vs job.Violations
	vs.AddAt("cluster.", cluster.Validate(&probe))
	if len(vs) > 0 {
		return nil, invalid(vs...)
	}
	out, err := s.clusters.ClusterUpdate(ctx, name, func(c *cluster.Cluster) error {
		if fields["display_name"] {
			c.DisplayName = in.GetDisplayName()
		}
		if fields["labels"] {
			c.Labels = maps.Clone(in.GetLabels())
		}
		if fields["agent_identity"] {
			// An empty identity removes it: the cluster's remote agent is
			// refused from then on.
			c.AgentIdentity = identityOf(in.GetAgentIdentity())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return clusterToPB(out), nil
}

func (s *ClusterServer) setAdmin(ctx context.Context, name string, state cluster.AdminState) (*pb.Cluster, error) {
	id, err := parseCluster("name", name)
	if err != nil {
		return nil, err
	}
	out, err := s.clusters.ClusterSetAdmin(ctx, id, state)
	if err != nil {
		return nil, err
	}
	return clusterToPB(out), nil
}

func (s *ClusterServer) DrainCluster(ctx context.Context, req *pb.DrainClusterRequest) (*pb.Cluster, error) {
	return s.setAdmin(ctx, req.GetName(), cluster.AdminDraining)
}

func (s *ClusterServer) CordonCluster(ctx context.Context, req *pb.CordonClusterRequest) (*pb.Cluster, error) {
	return s.setAdmin(ctx, req.GetName(), cluster.AdminCordoned)
}

func (s *ClusterServer) UncordonCluster(ctx context.Context, req *pb.UncordonClusterRequest) (*pb.Cluster, error) {
	return s.setAdmin(ctx, req.GetName(), cluster.Active)
}

func (s *ClusterServer) DeleteCluster(ctx context.Context, req *pb.DeleteClusterRequest) (*pb.DeleteClusterResponse, error) {
	name, err := parseCluster("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if err := s.clusters.ClusterDelete(ctx, name, req.GetForce()); err != nil {
		return nil, err
	}
	return &pb.DeleteClusterResponse{}, nil
}
