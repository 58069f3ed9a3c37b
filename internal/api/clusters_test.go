package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/trainyard/trainyard/internal/auth"
	"github.com/trainyard/trainyard/internal/cluster"
	"github.com/trainyard/trainyard/internal/grpctest"
	"github.com/trainyard/trainyard/internal/job"
	"github.com/trainyard/trainyard/internal/store"
	"github.com/trainyard/trainyard/internal/tenant"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// fakeClusters is an in-memory ClusterStore.
type fakeClusters struct {
	m       map[string]cluster.Cluster
	deleted []string
}

func newFakeClusters() *fakeClusters {
	return &fakeClusters{m: map[string]cluster.Cluster{
		cluster.Default: {Name: cluster.Default, Admin: cluster.Active, Reachable: true, Nodes: 3,
			Capacity: job.Vector{job.GPU: 16, job.CPU: 64000}, Usage: job.Vector{job.GPU: 4}, HeartbeatTime: time.Unix(1e9, 0)},
	}}
}

func (f *fakeClusters) ClusterCreate(_ context.Context, c cluster.Cluster) (cluster.Cluster, error) {
	if _, ok := f.m[c.Name]; ok {
		return cluster.Cluster{}, fmt.Errorf("%w: cluster %q", store.ErrAlreadyExists, c.Name)
	}
	c.Admin = cluster.Active
	f.m[c.Name] = c
	return c, nil
}

func (f *fakeClusters) ClusterGet(_ context.Context, name string) (cluster.Cluster, error) {
	c, ok := f.m[name]
	if !ok {
		return cluster.Cluster{}, fmt.Errorf("%w: cluster %q", store.ErrNotFound, name)
	}
	return c, nil
}

func (f *fakeClusters) ClusterList(context.Context) ([]cluster.Cluster, error) {
	var out []cluster.Cluster
	for _, c := range f.m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fakeClusters) ClusterUpdate(ctx context.Context, name string, fn func(*cluster.Cluster) error) (cluster.Cluster, error) {
	c, err := f.ClusterGet(ctx, name)
	if err != nil {
		return c, err
	}
	c.Labels = maps.Clone(c.Labels)
	if err := fn(&c); err != nil {
		return cluster.Cluster{}, err
	}
	f.m[name] = c
	return c, nil
}

func (f *fakeClusters) ClusterSetAdmin(ctx context.Context, name string, state cluster.AdminState) (cluster.Cluster, error) {
	return f.ClusterUpdate(ctx, name, func(c *cluster.Cluster) error { c.Admin = state; return nil })
}

func (f *fakeClusters) ClusterDelete(_ context.Context, name string, force bool) error {
	if name == cluster.Default {
		return fmt.Errorf("%w: the default cluster cannot be deleted", store.ErrFailedPrecondition)
	}
	if _, ok := f.m[name]; !ok {
		return fmt.Errorf("%w: cluster %q", store.ErrNotFound, name)
	}
	delete(f.m, name)
	f.deleted = append(f.deleted, fmt.Sprintf("%s force=%v", name, force))
	return nil
}

// platformByName authenticates "Bearer <subject>"; the subject "root" is
// a platform admin.
type platformByName struct{}

func (platformByName) Authenticate(_ context.Context, token string) (auth.Principal, error) {
	return auth.Principal{Subject: token, PlatformAdmin: token == "root"}, nil
}

// clusterClient serves ClusterService behind the real auth interceptor
// and the error interceptor's mapping, in memory, where tenant "a" has
// vera as viewer, ed as editor and ada as admin.
func clusterClient(t *testing.T, cs ClusterStore) func(subject string) (context.Context, pb.ClusterServiceClient) {
	t.Helper()
	src := &members{m: []tenant.Member{
		{Subject: "vera", Role: tenant.RoleViewer}, {Subject: "ed", Role: tenant.RoleEditor}, {Subject: "ada", Role: tenant.RoleAdmin}}}
	ic := auth.NewInterceptor(platformByName{}, auth.NewAuthorizer(src), auth.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	codeOf := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if err != nil {
			if _, ok := status.FromError(err); !ok {
				err = status.Error(Code(err), err.Error())
			}
		}
		return resp, err
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary(), codeOf))
	pb.RegisterClusterServiceServer(srv, NewClusterServer(Deps{Store: newFakeStore()}, cs))
	conn := grpctest.Serve(t, srv)
	client := pb.NewClusterServiceClient(conn)
	return func(subject string) (context.Context, pb.ClusterServiceClient) {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+subject), 10*time.Second)
		t.Cleanup(cancel)
		return ctx, client
	}
}

// Every ClusterService method is the platform admins': a tenant's members,
// its admin included, get PERMISSION_DENIED and the store is not touched;
// a platform admin gets the answer.
func TestClusterServiceAuthorization(t *testing.T) {
	calls := map[string]func(context.Context, pb.ClusterServiceClient) error{
		"CreateCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "eu-1", Cluster: &pb.Cluster{DisplayName: "EU"}})
			return err
		},
		"GetCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.GetCluster(ctx, &pb.GetClusterRequest{Name: "clusters/default"})
			return err
		},
		"ListClusters": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.ListClusters(ctx, &pb.ListClustersRequest{})
			return err
		},
		"UpdateCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/default", DisplayName: "Home"}})
			return err
		},
		"DrainCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.DrainCluster(ctx, &pb.DrainClusterRequest{Name: "clusters/default"})
			return err
		},
		"CordonCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.CordonCluster(ctx, &pb.CordonClusterRequest{Name: "clusters/default"})
			return err
		},
		"UncordonCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.UncordonCluster(ctx, &pb.UncordonClusterRequest{Name: "clusters/default"})
			return err
		},
		"DeleteCluster": func(ctx context.Context, c pb.ClusterServiceClient) error {
			_, err := c.DeleteCluster(ctx, &pb.DeleteClusterRequest{Name: "clusters/eu-1", Force: true})
			return err
		},
	}
	require.Len(t, calls, len(pb.ClusterService_ServiceDesc.Methods), "a call for every method")
	for _, subject := range []string{"vera", "ed", "ada", "stranger"} {
		fc := newFakeClusters()
		before := maps.Clone(fc.m)
		as := clusterClient(t, fc)
		for name, call := range calls {
			ctx, c := as(subject)
			err := call(ctx, c)
			require.Equal(t, codes.PermissionDenied, status.Code(err), "%s as %s: %v", name, subject, err)
		}
		require.Equal(t, before, fc.m, "nothing changed for %s", subject)
	}
	// The platform admin: in order, so that delete finds what create made.
	fc := newFakeClusters()
	as := clusterClient(t, fc)
	for _, name := range []string{"CreateCluster", "GetCluster", "ListClusters", "UpdateCluster", "DrainCluster", "CordonCluster", "UncordonCluster", "DeleteCluster"} {
		ctx, c := as("root")
		require.NoError(t, calls[name](ctx, c), name)
	}
	require.Equal(t, []string{"eu-1 force=true"}, fc.deleted)
	require.Equal(t, "Home", fc.m[cluster.Default].DisplayName)
	require.Equal(t, cluster.Active, fc.m[cluster.Default].Admin)
}

// What a platform admin reads and sets, and errors that name the field.
func TestClusterServer(t *testing.T) {
	fc := newFakeClusters()
	srv := NewClusterServer(Deps{Store: newFakeStore()}, fc)
	ctx := context.Background()

	got, err := srv.GetCluster(ctx, &pb.GetClusterRequest{Name: "clusters/default"})
	require.NoError(t, err)
	require.Equal(t, pb.ClusterState_CLUSTER_STATE_READY, got.GetState())
	require.EqualValues(t, 16, got.GetCapacity().GetGpu())
	require.EqualValues(t, 4, got.GetUsage().GetGpu())
	require.Equal(t, "64", got.GetCapacity().GetCpu())
	require.EqualValues(t, 3, got.GetNodeCount())

	created, err := srv.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "eu-1",
		Cluster: &pb.Cluster{DisplayName: "Frankfurt", Labels: map[string]string{"region": "eu"}}})
	require.NoError(t, err)
	require.Equal(t, "clusters/eu-1", created.GetName())
	require.Equal(t, pb.ClusterState_CLUSTER_STATE_UNREACHABLE, created.GetState(), "until its agent reports")
	require.Equal(t, pb.ClusterState_CLUSTER_STATE_READY, created.GetAdminState())

	dr, err := srv.DrainCluster(ctx, &pb.DrainClusterRequest{Name: "clusters/default"})
	require.NoError(t, err)
	require.Equal(t, pb.ClusterState_CLUSTER_STATE_DRAINING, dr.GetState())
	co, err := srv.CordonCluster(ctx, &pb.CordonClusterRequest{Name: "clusters/eu-1"})
	require.NoError(t, err)
	require.Equal(t, pb.ClusterState_CLUSTER_STATE_UNREACHABLE, co.GetState(), "health first")
	require.Equal(t, pb.ClusterState_CLUSTER_STATE_CORDONED, co.GetAdminState())

	up, err := srv.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/eu-1", Labels: map[string]string{"cloud": "gcp"}}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cloud": "gcp"}, up.GetLabels())
	require.Equal(t, "Frankfurt", up.GetDisplayName(), "not in the (implicit) mask: kept")
	up, err = srv.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/eu-1"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"*"}}})
	require.NoError(t, err)
	require.Empty(t, up.GetLabels())
	require.Empty(t, up.GetDisplayName())

	_, err = srv.DeleteCluster(ctx, &pb.DeleteClusterRequest{Name: "clusters/default"})
	require.ErrorIs(t, err, store.ErrFailedPrecondition)
	require.Equal(t, codes.FailedPrecondition, Code(err))

	for _, c := range []struct {
		call  func() error
		field string
	}{
		{func() error {
			_, err := srv.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "EU", Cluster: &pb.Cluster{}})
			return err
		}, "clusterId"},
		{func() error { _, err := srv.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "eu"}); return err }, "cluster"},
		{func() error {
			_, err := srv.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: "eu", Cluster: &pb.Cluster{Labels: map[string]string{"a b": "c"}}})
			return err
		}, "cluster.labels"},
		{func() error { _, err := srv.GetCluster(ctx, &pb.GetClusterRequest{Name: "tenants/a"}); return err }, "name"},
		{func() error { _, err := srv.DrainCluster(ctx, &pb.DrainClusterRequest{Name: "clusters/"}); return err }, "name"},
		{func() error { _, err := srv.UpdateCluster(ctx, &pb.UpdateClusterRequest{}); return err }, "cluster"},
		{func() error {
			_, err := srv.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "eu-1"}})
			return err
		}, "cluster.name"},
		{func() error {
			_, err := srv.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/eu-1"},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"state"}}})
			return err
		}, "updateMask"},
		{func() error {
			_, err := srv.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: &pb.Cluster{Name: "clusters/eu-1", DisplayName: string(make([]byte, 201))}})
			return err
		}, "cluster.displayName"},
	} {
		err := c.call()
		s := status.Convert(err)
		require.Equal(t, codes.InvalidArgument, s.Code(), "%v", err)
		require.Len(t, s.Details(), 1)
		br := s.Details()[0].(*errdetails.BadRequest)
		require.Equal(t, c.field, br.GetFieldViolations()[0].GetField(), s.Message())
	}
}
