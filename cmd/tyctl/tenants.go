package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func newTenantsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tenants",
		Aliases: []string{"tenant"},
		Short:   "List and inspect tenants; create, update and delete them (platform admins)",
	}
	cmd.AddCommand(newTenantsListCmd(a), newTenantsGetCmd(a), newTenantsCreateCmd(a), newTenantsUpdateCmd(a), newTenantsDeleteCmd(a))
	return cmd
}

func newTenantsListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the tenants you are a member of (all of them for platform admins)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			resp := &pb.ListTenantsResponse{}
			for {
				ctx, cancel := a.callCtx(cmd)
				page, err := c.ListTenants(ctx, &pb.ListTenantsRequest{PageSize: 1000, PageToken: resp.NextPageToken})
				cancel()
				if err != nil {
					return err
				}
				resp.Tenants = append(resp.Tenants, page.GetTenants()...)
				if resp.NextPageToken = page.GetNextPageToken(); resp.NextPageToken == "" {
					break
				}
			}
			return a.print(resp, func(w io.Writer) { writeTenantsTable(w, resp.Tenants, a.now()) })
		},
	}
}

func newTenantsGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get [ID]",
		Short: "Show a tenant (the current one, --tenant, without ID)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.tenantName(args)
			if err != nil {
				return err
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			t, err := c.GetTenant(ctx, &pb.GetTenantRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(t, func(w io.Writer) { writeTenantDetail(w, t, a.now()) })
		},
	}
}

func newTenantsCreateCmd(a *app) *cobra.Command {
	var (
		displayName         string
		labels, members     []string
		podReaderGroups     []string
		clusters            []string
		quotaCPU, quotaMem  string
		quotaGPU, quotaPods int32
		preemption, queue   string
		sf                  sharingFlags
	)
	cmd := &cobra.Command{
		Use:   "create ID",
		Short: "Create a tenant and its namespace (platform admins)",
		Long: `Create a tenant. Its id (a DNS-1123 label of at most 40 characters) names
its Kubernetes namespace. Members are OIDC groups or subjects with a role:
viewer (read), editor (also submit and cancel jobs), admin (also secrets).`,
		Example: `  tyctl tenants create ml-team --quota-gpu 16 --quota-memory 512Gi \
      --member group:ml-team=editor --member subject:alice=admin --pod-reader-group ml-team \
      --preemption lower-priority --queueing best-effort-fifo`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := strings.TrimPrefix(args[0], "tenants/")
			t := &pb.Tenant{DisplayName: displayName, PodReaderGroups: podReaderGroups, Clusters: clusters}
			var err error
			if len(labels) > 0 {
				if t.Labels, err = parsePairs("label", labels); err != nil {
					return err
				}
			}
			if quotaGPU != 0 || quotaPods != 0 || quotaCPU != "" || quotaMem != "" {
				t.Quota = &pb.Quota{Gpu: quotaGPU, Cpu: quotaCPU, Memory: quotaMem, Pods: quotaPods}
			}
			if preemption != "" || queue != "" {
				t.Scheduling = &pb.Scheduling{}
				if preemption != "" {
					v, err := parseEnum(pb.PreemptionPolicy(0).Descriptor(), preemption)
					if err != nil {
						return fmt.Errorf("--preemption: %w", err)
					}
					t.Scheduling.PreemptionPolicy = pb.PreemptionPolicy(v.Number())
				}
				if queue != "" {
					v, err := parseEnum(pb.QueueingStrategy(0).Descriptor(), queue)
					if err != nil {
						return fmt.Errorf("--queueing: %w", err)
					}
					t.Scheduling.QueueingStrategy = pb.QueueingStrategy(v.Number())
				}
			}
			if t.Sharing, _, err = sf.build(cmd.Flags()); err != nil {
				return err
			}
			for _, m := range members {
				pm, err := parseMember(m)
				if err != nil {
					return err
				}
				t.Members = append(t.Members, pm)
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			got, err := c.CreateTenant(ctx, &pb.CreateTenantRequest{TenantId: id, Tenant: t})
			if err != nil {
				return err
			}
			return a.print(got, func(w io.Writer) {
				fmt.Fprintf(w, "tenant %s created (namespace %s)\n", lastSegment(got.GetName()), dash(got.GetNamespace()))
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&displayName, "display-name", "", "name shown to people")
	fs.StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	fs.Int32Var(&quotaGPU, "quota-gpu", 0, "GPUs the tenant's running jobs may use together; 0 for no limit")
	fs.StringVar(&quotaCPU, "quota-cpu", "", "CPU quota, a Kubernetes quantity such as 64")
	fs.StringVar(&quotaMem, "quota-memory", "", "memory quota, a Kubernetes quantity such as 256Gi")
	fs.Int32Var(&quotaPods, "quota-pods", 0, "pods the tenant's running jobs may have together; 0 for no limit")
	fs.StringArrayVar(&members, "member", nil, "group:NAME=ROLE or subject:NAME=ROLE, ROLE viewer|editor|admin (repeatable)")
	fs.StringArrayVar(&podReaderGroups, "pod-reader-group", nil, "OIDC group given read access to pods and logs in the namespace (repeatable)")
	fs.StringArrayVar(&clusters, "cluster", nil, "a cluster the tenant's jobs may run in and its namespace exists in (repeatable; none: every cluster)")
	fs.StringVar(&preemption, "preemption", "", "never (default) or lower-priority: a pending job may preempt the tenant's running jobs of lower priority")
	fs.StringVar(&queue, "queueing", "", "strict-fifo (default) or best-effort-fifo: a job that fits may start ahead of an earlier one that does not")
	sf.add(fs)
	return cmd
}

// parseMember reads group:ml-team=editor or subject:alice=admin. The role
// follows the last '=', so a group name may itself contain one.
func parseMember(s string) (*pb.Member, error) {
	usage := fmt.Errorf("--member %q: want group:NAME=ROLE or subject:NAME=ROLE, ROLE one of viewer, editor, admin", s)
	kind, rest, ok := strings.Cut(s, ":")
	i := strings.LastIndexByte(rest, '=')
	if !ok || i <= 0 {
		return nil, usage
	}
	who, roleText := rest[:i], rest[i+1:]
	role, err := parseEnum(pb.Role(0).Descriptor(), roleText)
	if err != nil || role.Number() == 0 {
		return nil, usage
	}
	m := &pb.Member{Role: pb.Role(role.Number())}
	switch kind {
	case "group":
		m.Principal = &pb.Member_Group{Group: who}
	case "subject", "user":
		m.Principal = &pb.Member_Subject{Subject: who}
	default:
		return nil, usage
	}
	return m, nil
}

func newTenantsDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Offboard a tenant: cancel its jobs, then delete its namespace (platform admins)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.tenantName(args)
			if err != nil {
				return err
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			t, err := c.DeleteTenant(ctx, &pb.DeleteTenantRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(t, func(w io.Writer) {
				fmt.Fprintf(w, "tenant %s is %s: its jobs are cancelled, then its namespace is deleted\n", lastSegment(t.GetName()), shortEnum(t.GetState()))
			})
		},
	}
}
