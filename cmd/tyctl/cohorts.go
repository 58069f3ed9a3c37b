package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Cohorts' own pools (issue 42): capacity that belongs to a cohort, not to
// any of its tenants. Platform admins only.

func newCohortsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cohorts",
		Aliases: []string{"cohort"},
		Short:   "Manage cohorts' own pools of quota, lent to their tenants (platform admins)",
	}
	cmd.AddCommand(newCohortsPutCmd(a), newCohortsGetCmd(a), newCohortsListCmd(a), newCohortsDeleteCmd(a))
	return cmd
}

// cohortName is cohorts/{name} for a bare name or a full one.
func cohortName(arg string) string {
	if strings.HasPrefix(arg, "cohorts/") {
		return arg
	}
	return "cohorts/" + arg
}

func newCohortsPutCmd(a *app) *cobra.Command {
	var (
		gpu, pods   int32
		cpu, memory string
		gpuTypes    []string
	)
	cmd := &cobra.Command{
		Use:   "put NAME",
		Short: "Create or replace a cohort's own pool",
		Long: `Create or replace a cohort's own pool: quota nobody owns, lent to the
cohort's tenants (those whose --cohort names it) beside what they lend one
another. The flags given are the whole pool; those not given are none.`,
		Example: `  tyctl cohorts put lab --gpu 16 --gpu-type A100=16`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			co := &pb.Cohort{Name: cohortName(args[0])}
			if q := (&pb.Quota{Gpu: gpu, Cpu: cpu, Memory: memory, Pods: pods}); gpu != 0 || pods != 0 || cpu != "" || memory != "" {
				co.NominalQuota = q
			}
			for _, kv := range gpuTypes {
				model, n, ok := strings.Cut(kv, "=")
				count, err := strconv.ParseInt(n, 10, 64)
				if !ok || model == "" || err != nil {
					return fmt.Errorf("--gpu-type %q: want MODEL=N, e.g. A100=8", kv)
				}
				if co.GpuTypes == nil {
					co.GpuTypes = map[string]int64{}
				}
				co.GpuTypes[model] = count
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.PutCohort(ctx, &pb.PutCohortRequest{Cohort: co})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) { writeCohortDetail(w, out) })
		},
	}
	fs := cmd.Flags()
	fs.Int32Var(&gpu, "gpu", 0, "GPUs in the pool")
	fs.StringVar(&cpu, "cpu", "", "CPU in the pool, a quantity (e.g. 64)")
	fs.StringVar(&memory, "memory", "", "memory in the pool, a quantity (e.g. 256Gi)")
	fs.Int32Var(&pods, "pods", 0, "pods in the pool")
	fs.StringArrayVar(&gpuTypes, "gpu-type", nil, "GPUs of a GPU model in the pool, MODEL=N (repeatable)")
	return cmd
}

func newCohortsGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a cohort's pool and its tenants",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			out, err := c.GetCohort(ctx, &pb.GetCohortRequest{Name: cohortName(args[0])})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) { writeCohortDetail(w, out) })
		},
	}
}

func newCohortsListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List cohorts: those with a pool and those tenants only name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.ListCohorts(ctx, &pb.ListCohortsRequest{})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) {
				tw := newTabWriter(w)
				fmt.Fprintln(tw, "NAME\tPOOL\tTENANTS")
				for _, co := range resp.GetCohorts() {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", lastSegment(co.GetName()), cohortPool(co), dash(cohortTenants(co)))
				}
				_ = tw.Flush()
			})
		},
	}
}

func newCohortsDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove a cohort's pool (its tenants keep lending one another)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			name := cohortName(args[0])
			resp, err := c.DeleteCohort(ctx, &pb.DeleteCohortRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { fmt.Fprintf(w, "cohort %s: pool removed\n", lastSegment(name)) })
		},
	}
}

// cohortPool is a cohort's pool in a line: "gpu=16 (A100 16)", or "-".
func cohortPool(co *pb.Cohort) string {
	s := ""
	if q := co.GetNominalQuota(); q != nil {
		s = formatQuota(q)
	}
	var models []string
	for m, n := range co.GetGpuTypes() {
		models = append(models, fmt.Sprintf("%s %d", m, n))
	}
	slices.Sort(models)
	if len(models) > 0 {
		s += " (" + strings.Join(models, ", ") + ")"
	}
	return dash(strings.TrimSpace(s))
}

func cohortTenants(co *pb.Cohort) string {
	var ids []string
	for _, t := range co.GetTenants() {
		ids = append(ids, lastSegment(t))
	}
	return strings.Join(ids, ",")
}

func writeCohortDetail(w io.Writer, co *pb.Cohort) {
	tw := newTabWriter(w)
	fmt.Fprintf(tw, "Name:\t%s\n", lastSegment(co.GetName()))
	fmt.Fprintf(tw, "Pool:\t%s\n", cohortPool(co))
	fmt.Fprintf(tw, "Tenants:\t%s\n", dash(cohortTenants(co)))
	_ = tw.Flush()
}
