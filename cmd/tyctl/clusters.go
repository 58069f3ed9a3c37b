package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Clusters (issue 45): the Kubernetes clusters Trainyard places jobs in,
// each reported by its agent (trainyard worker --cluster NAME). Platform
// admins only.

func (a *app) clusterClient() (pb.ClusterServiceClient, error) {
	conn, err := a.connect()
	if err != nil {
		return nil, err
	}
	return pb.NewClusterServiceClient(conn), nil
}

func newClustersCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "Manage the Kubernetes clusters jobs run in: register, drain, cordon, delete (platform admins)",
	}
	cmd.AddCommand(newClustersListCmd(a), newClustersGetCmd(a), newClustersRegisterCmd(a), newClustersUpdateCmd(a),
		newClusterStateCmd(a, "drain", "Drain a cluster: nothing new is placed there; running jobs finish"),
		newClusterStateCmd(a, "cordon", "Cordon a cluster: nothing new is placed there; running jobs stay"),
		newClusterStateCmd(a, "uncordon", "End a drain or a cordon: the cluster takes new jobs again"),
		newClustersDeleteCmd(a))
	return cmd
}

// clusterName is clusters/{name} for a bare name or a full one.
func clusterName(arg string) string {
	if strings.HasPrefix(arg, "clusters/") {
		return arg
	}
	return "clusters/" + arg
}

func newClustersListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List clusters with their state, last heartbeat, nodes and GPUs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.clusterClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.ListClusters(ctx, &pb.ListClustersRequest{})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { writeClustersTable(w, resp.GetClusters(), a.now()) })
		},
	}
}

func newClustersGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clusterClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.GetCluster(ctx, &pb.GetClusterRequest{Name: clusterName(args[0])})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) { writeClusterDetail(w, out, a.now()) })
		},
	}
}

// agentIdentityFlags are a remote agent's identity (cluster.AgentIdentity).
type agentIdentityFlags struct {
	issuer, subject, jwksFile, jwksURI string
	clear                              bool
}

func (f *agentIdentityFlags) register(fs *pflag.FlagSet, update bool) {
	fs.StringVar(&f.issuer, "agent-issuer", "", "the cluster's service-account issuer (kubectl get --raw /.well-known/openid-configuration), for a remote agent (trainyard worker --control-plane)")
	fs.StringVar(&f.subject, "agent-subject", "system:serviceaccount:trainyard:trainyard-worker", "the remote agent's ServiceAccount, as its tokens name it (deploy/agent runs it as trainyard-worker)")
	fs.StringVar(&f.jwksFile, "agent-jwks-file", "", "FILE holding the issuer's keys: the output of kubectl get --raw /openid/v1/jwks (- reads stdin)")
	fs.StringVar(&f.jwksURI, "agent-jwks-uri", "", "or an https URL the control plane fetches the issuer's keys from (then it must reach the cluster)")
	if update {
		fs.BoolVar(&f.clear, "clear-agent-identity", false, "remove the agent identity: the cluster's remote agent is refused from then on")
	}
}

// identity is the identity the flags give; nil when none was given.
func (f *agentIdentityFlags) identity(cmd *cobra.Command) (*pb.AgentIdentity, error) {
	if f.issuer == "" && f.jwksFile == "" && f.jwksURI == "" {
		if cmd.Flags().Changed("agent-subject") {
			return nil, fmt.Errorf("--agent-subject needs --agent-issuer and --agent-jwks-file or --agent-jwks-uri")
		}
		return nil, nil
	}
	if f.issuer == "" {
		return nil, fmt.Errorf("--agent-issuer is required with --agent-jwks-file or --agent-jwks-uri")
	}
	id := &pb.AgentIdentity{Issuer: f.issuer, Subject: f.subject, JwksUri: f.jwksURI}
	if f.jwksFile != "" {
		var (
			b   []byte
			err error
		)
		if f.jwksFile == "-" {
			b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
		} else {
			b, err = os.ReadFile(f.jwksFile)
		}
		if err != nil {
			return nil, fmt.Errorf("--agent-jwks-file: %w", err)
		}
		id.Jwks = strings.TrimSpace(string(b))
	}
	return id, nil
}

func newClustersRegisterCmd(a *app) *cobra.Command {
	var (
		displayName string
		labels      []string
		agent       agentIdentityFlags
	)
	cmd := &cobra.Command{
		Use:   "register NAME",
		Short: "Register a cluster; it is UNREACHABLE until its agent reports",
		Long: `Register a cluster. Then run its agent in it, with credentials for that
cluster only: trainyard worker --cluster NAME. The cluster is UNREACHABLE
until the agent's first heartbeat; the cluster "default" always exists.

A remote cluster's agent holds no database credentials: it reaches only the
API server (trainyard worker --cluster NAME --control-plane ADDR
--agent-token-file PATH) and authenticates with a ServiceAccount token of
its own cluster. Register that cluster's issuer and keys with --agent-*:
run kubectl against the cluster to get them (the control plane never needs
to reach it).`,
		Example: `  tyctl clusters register eu-1 --display-name Frankfurt --label region=eu --label cloud=gcp
  kubectl --context eu-1 get --raw /openid/v1/jwks > eu-1.jwks
  tyctl clusters register eu-1 --agent-issuer https://kubernetes.default.svc.cluster.local --agent-jwks-file eu-1.jwks`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ls, err := parsePairs("label", labels)
			if err != nil {
				return err
			}
			id, err := agent.identity(cmd)
			if err != nil {
				return err
			}
			c, err := a.clusterClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.CreateCluster(ctx, &pb.CreateClusterRequest{ClusterId: strings.TrimPrefix(args[0], "clusters/"),
				Cluster: &pb.Cluster{DisplayName: displayName, Labels: ls, AgentIdentity: id}})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "cluster %s registered; start its agent: trainyard worker --cluster %s\n", lastSegment(out.GetName()), lastSegment(out.GetName()))
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&displayName, "display-name", "", "a display name")
	fs.StringArrayVar(&labels, "label", nil, "a label, KEY=VALUE (repeatable): region, cloud, GPU models, cost class")
	agent.register(fs, false)
	return cmd
}

func newClustersUpdateCmd(a *app) *cobra.Command {
	var (
		displayName string
		labels      []string
		agent       agentIdentityFlags
	)
	cmd := &cobra.Command{
		Use:     "update NAME",
		Short:   "Change a cluster's display name or labels (--label replaces them all)",
		Example: `  tyctl clusters update eu-1 --label region=eu --label cost=spot`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := &pb.Cluster{Name: clusterName(args[0])}
			var mask []string
			if cmd.Flags().Changed("display-name") {
				in.DisplayName, mask = displayName, append(mask, "display_name")
			}
			if cmd.Flags().Changed("label") {
				ls, err := parsePairs("label", labels)
				if err != nil {
					return err
				}
				in.Labels, mask = ls, append(mask, "labels")
			}
			id, err := agent.identity(cmd)
			if err != nil {
				return err
			}
			switch {
			case id != nil && agent.clear:
				return fmt.Errorf("--clear-agent-identity and --agent-* go apart")
			case id != nil:
				in.AgentIdentity, mask = id, append(mask, "agent_identity")
			case agent.clear:
				mask = append(mask, "agent_identity")
			}
			if len(mask) == 0 {
				return fmt.Errorf("nothing to update: give --display-name, --label, --agent-* or --clear-agent-identity")
			}
			c, err := a.clusterClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.UpdateCluster(ctx, &pb.UpdateClusterRequest{Cluster: in, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) { writeClusterDetail(w, out, a.now()) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&displayName, "display-name", "", "the display name")
	fs.StringArrayVar(&labels, "label", nil, "a label, KEY=VALUE (repeatable); the labels given replace all others")
	agent.register(fs, true)
	return cmd
}

// newClusterStateCmd is drain, cordon or uncordon.
func newClusterStateCmd(a *app, verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clusterClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			name := clusterName(args[0])
			var out *pb.Cluster
			switch verb {
			case "drain":
				out, err = c.DrainCluster(ctx, &pb.DrainClusterRequest{Name: name})
			case "cordon":
				out, err = c.CordonCluster(ctx, &pb.CordonClusterRequest{Name: name})
			default:
				out, err = c.UncordonCluster(ctx, &pb.UncordonClusterRequest{Name: name})
			}
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "cluster %s: %s\n", lastSegment(out.GetName()), shortEnum(out.GetState()))
			})
		},
	}
}

func newClustersDeleteCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a cluster (not \"default\"; one running jobs or reporting only with --force)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.clusterClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			name := clusterName(args[0])
			resp, err := c.DeleteCluster(ctx, &pb.DeleteClusterRequest{Name: name, Force: force})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { fmt.Fprintf(w, "cluster %s deleted\n", lastSegment(name)) })
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete even while jobs are admitted there or its agent reports")
	return cmd
}

// clusterGPUs is "used/capacity" GPUs.
func clusterGPUs(c *pb.Cluster) string {
	return fmt.Sprintf("%d/%d", c.GetUsage().GetGpu(), c.GetCapacity().GetGpu())
}

// clusterState is the state, with the operator's when health hides it
// ("UNREACHABLE (DRAINING)").
func clusterState(c *pb.Cluster) string {
	s := shortEnum(c.GetState())
	if c.GetState() == pb.ClusterState_CLUSTER_STATE_UNREACHABLE && c.GetAdminState() != pb.ClusterState_CLUSTER_STATE_READY &&
		c.GetAdminState() != pb.ClusterState_CLUSTER_STATE_UNSPECIFIED {
		s += " (" + shortEnum(c.GetAdminState()) + ")"
	}
	return s
}

func writeClustersTable(w io.Writer, clusters []*pb.Cluster, now time.Time) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tHEARTBEAT\tNODES\tGPUS\tLABELS")
	for _, c := range clusters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", lastSegment(c.GetName()), clusterState(c), age(now, c.GetHeartbeatTime()),
			c.GetNodeCount(), clusterGPUs(c), dash(formatMap(c.GetLabels())))
	}
	_ = tw.Flush()
}

func writeClusterDetail(w io.Writer, c *pb.Cluster, now time.Time) {
	kv := newTabWriter(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(kv, "%s:\t%s\n", k, v)
		}
	}
	row("Name", lastSegment(c.GetName()))
	row("Display name", c.GetDisplayName())
	row("State", clusterState(c))
	row("Labels", formatMap(c.GetLabels()))
	hb := "never"
	if c.GetHeartbeatTime() != nil {
		hb = when(now, c.GetHeartbeatTime())
		if c.GetAgent() != "" {
			hb += " from " + c.GetAgent()
		}
	}
	row("Heartbeat", hb)
	row("Nodes", fmt.Sprint(c.GetNodeCount()))
	row("GPUs", clusterGPUs(c)+" used")
	row("Capacity", formatResources(c.GetCapacity()))
	row("Usage", formatResources(c.GetUsage()))
	if id := c.GetAgentIdentity(); id != nil {
		keys := "inline JWKS"
		if id.GetJwksUri() != "" {
			keys = id.GetJwksUri()
		}
		row("Remote agent", fmt.Sprintf("%s from %s (keys: %s)", id.GetSubject(), id.GetIssuer(), keys))
	}
	row("Created", when(now, c.GetCreateTime()))
	_ = kv.Flush()
}

// formatResources is a capacity or usage, zeros left out; "-" for none
// (formatQuota says "unlimited", which a capacity never is).
func formatResources(q *pb.Quota) string {
	nonZero := &pb.Quota{Gpu: q.GetGpu(), Pods: q.GetPods()}
	if c := q.GetCpu(); c != "0" {
		nonZero.Cpu = c
	}
	if m := q.GetMemory(); m != "0" {
		nonZero.Memory = m
	}
	if proto.Equal(nonZero, &pb.Quota{}) {
		return "-"
	}
	return formatQuota(nonZero)
}
