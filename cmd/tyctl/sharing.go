package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// sharingFlags are a tenant's sharing settings (issue 42) on tenants
// create and update.
type sharingFlags struct {
	cohort                   string
	borrowGPU, lendGPU       int32
	weight                   float64
	reclaim                  string
	fairShare                bool
	halfLife                 time.Duration
	budgetHours              float64
	budgetPeriod, overBudget string
	gpuTypes                 []string
}

func (f *sharingFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.cohort, "cohort", "", "cohort to share quota in: the quota becomes the tenant's nominal (guaranteed) share")
	fs.Int32Var(&f.borrowGPU, "borrowing-limit-gpu", 0, "most GPUs the tenant may use above its nominal quota; 0 for the cohort's whole unused pool")
	fs.Int32Var(&f.lendGPU, "lending-limit-gpu", 0, "most of its unused nominal GPUs others may borrow; 0 for all of them")
	fs.Float64Var(&f.weight, "weight", 0, "fair-share weight (0 means 1): weight 2 borrows twice as much before it yields")
	fs.StringVar(&f.reclaim, "reclaim", "", "any (default), lower-priority or never: which borrowers it may preempt to get its nominal quota back")
	fs.BoolVar(&f.fairShare, "fair-share-preemption", false, "its borrowing jobs may preempt borrowers of a larger weighted share")
	fs.DurationVar(&f.halfLife, "usage-half-life", 0, "fair share that remembers: count usage decayed with this half-life, e.g. 24h (0: off)")
	fs.Float64Var(&f.budgetHours, "budget-gpu-hours", 0, "GPU-hour budget per period (0: none)")
	fs.StringVar(&f.budgetPeriod, "budget-period", "", "month (default) or rolling-30d")
	fs.StringVar(&f.overBudget, "over-budget", "", "wait (default: jobs wait with reason BUDGET) or borrow-only (run only on borrowed capacity, first to be reclaimed)")
	fs.StringArrayVar(&f.gpuTypes, "gpu-type", nil, "nominal GPUs of a GPU model, MODEL=N, e.g. A100=8 (repeatable)")
}

// sharingFlagPaths maps each flag to the update mask's path it sets.
var sharingFlagPaths = map[string]string{
	"cohort": "sharing.cohort", "borrowing-limit-gpu": "sharing.borrowing_limit", "lending-limit-gpu": "sharing.lending_limit",
	"weight": "sharing.weight", "reclaim": "sharing.reclaim_policy", "fair-share-preemption": "sharing.fair_share_preemption",
	"usage-half-life": "sharing.usage_half_life_seconds", "budget-gpu-hours": "sharing.budget", "budget-period": "sharing.budget",
	"over-budget": "sharing.budget", "gpu-type": "sharing.gpu_types",
}

// build returns the sharing the flags set and the mask paths of the flags
// given (nil, nil when none is).
func (f *sharingFlags) build(fs *pflag.FlagSet) (*pb.Sharing, []string, error) {
	var paths []string
	for flag, path := range sharingFlagPaths {
		if fs.Changed(flag) && !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	if len(paths) == 0 {
		return nil, nil, nil
	}
	slices.Sort(paths)
	s := &pb.Sharing{Cohort: f.cohort, Weight: f.weight, FairSharePreemption: f.fairShare,
		UsageHalfLifeSeconds: int64(f.halfLife / time.Second)}
	if f.borrowGPU != 0 {
		s.BorrowingLimit = &pb.Quota{Gpu: f.borrowGPU}
	}
	if f.lendGPU != 0 {
		s.LendingLimit = &pb.Quota{Gpu: f.lendGPU}
	}
	if f.reclaim != "" {
		v, err := parseEnum(pb.ReclaimPolicy(0).Descriptor(), f.reclaim)
		if err != nil {
			return nil, nil, fmt.Errorf("--reclaim: %w", err)
		}
		s.ReclaimPolicy = pb.ReclaimPolicy(v.Number())
	}
	if f.budgetHours != 0 || f.budgetPeriod != "" || f.overBudget != "" {
		s.Budget = &pb.Budget{GpuHours: f.budgetHours}
		if f.budgetPeriod != "" {
			v, err := parseEnum(pb.BudgetPeriod(0).Descriptor(), f.budgetPeriod)
			if err != nil {
				return nil, nil, fmt.Errorf("--budget-period: %w", err)
			}
			s.Budget.Period = pb.BudgetPeriod(v.Number())
		}
		if f.overBudget != "" {
			v, err := parseEnum(pb.OverBudgetPolicy(0).Descriptor(), f.overBudget)
			if err != nil {
				return nil, nil, fmt.Errorf("--over-budget: %w", err)
			}
			s.Budget.OverBudget = pb.OverBudgetPolicy(v.Number())
		}
	}
	if len(f.gpuTypes) > 0 {
		s.GpuTypes = map[string]int64{}
		for _, kv := range f.gpuTypes {
			model, n, ok := strings.Cut(kv, "=")
			count, err := strconv.ParseInt(n, 10, 64)
			if !ok || model == "" || err != nil {
				return nil, nil, fmt.Errorf("--gpu-type %q: want MODEL=N, e.g. A100=8", kv)
			}
			s.GpuTypes[model] = count
		}
	}
	return s, paths, nil
}

func newTenantsUpdateCmd(a *app) *cobra.Command {
	var (
		sf                  sharingFlags
		quotaGPU, quotaPods int32
		quotaCPU, quotaMem  string
		clusters            []string
	)
	cmd := &cobra.Command{
		Use:   "update ID",
		Short: "Change a tenant's quota, sharing and clusters (platform admins); only the flags given change",
		Long: `Change a tenant's quota and how it shares it: its cohort, borrowing and
lending limits, fair-share weight, reclaim policy, fair-share preemption,
usage half-life, GPU-hour budget and GPU quotas per model. Only the flags
given change; --budget-* flags together replace the budget
(--budget-gpu-hours 0 removes it). --cluster replaces the clusters the
tenant is allowed (--cluster "" allows every cluster); taking one away is
refused while unfinished jobs of the tenant run there.`,
		Example: `  tyctl tenants update team-a --quota-gpu 8 --cohort lab --borrowing-limit-gpu 8 --weight 2 \
      --reclaim lower-priority --usage-half-life 24h --budget-gpu-hours 2000 --budget-period rolling-30d`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.tenantName(args)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			t := &pb.Tenant{Name: name, Quota: &pb.Quota{Gpu: quotaGPU, Cpu: quotaCPU, Memory: quotaMem, Pods: quotaPods}}
			var paths []string
			if fs.Changed("cluster") {
				t.Clusters = slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return c == "" })
				paths = append(paths, "clusters")
			}
			for flag, path := range map[string]string{"quota-gpu": "quota.gpu", "quota-cpu": "quota.cpu", "quota-memory": "quota.memory", "quota-pods": "quota.pods"} {
				if fs.Changed(flag) {
					paths = append(paths, path)
				}
			}
			sh, shPaths, err := sf.build(fs)
			if err != nil {
				return err
			}
			t.Sharing = sh
			paths = append(paths, shPaths...)
			if len(paths) == 0 {
				return fmt.Errorf("nothing to update: give a --quota-*, sharing or --cluster flag")
			}
			slices.Sort(paths)
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			got, err := c.UpdateTenant(ctx, &pb.UpdateTenantRequest{Tenant: t, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}})
			if err != nil {
				return err
			}
			return a.print(got, func(w io.Writer) { writeTenantDetail(w, got, a.now()) })
		},
	}
	fs := cmd.Flags()
	fs.Int32Var(&quotaGPU, "quota-gpu", 0, "GPUs the tenant's running jobs may use together (its nominal share in a cohort); 0 for no limit")
	fs.StringVar(&quotaCPU, "quota-cpu", "", "CPU quota, a Kubernetes quantity such as 64")
	fs.StringVar(&quotaMem, "quota-memory", "", "memory quota, a Kubernetes quantity such as 256Gi")
	fs.Int32Var(&quotaPods, "quota-pods", 0, "pods the tenant's running jobs may have together; 0 for no limit")
	fs.StringArrayVar(&clusters, "cluster", nil, "a cluster the tenant's jobs may run in (repeatable; replaces the list; \"\" alone: every cluster)")
	sf.add(fs)
	return cmd
}

// writeSharing adds a tenant's sharing and its status to a detail view.
func writeSharing(row func(k, v string), t *pb.Tenant) {
	s := t.GetSharing()
	if s != nil {
		var parts []string
		if s.GetCohort() != "" {
			parts = append(parts, "cohort "+s.GetCohort())
		}
		if q := formatQuota(s.GetBorrowingLimit()); s.GetBorrowingLimit() != nil {
			parts = append(parts, "borrowing limit "+q)
		}
		if q := formatQuota(s.GetLendingLimit()); s.GetLendingLimit() != nil {
			parts = append(parts, "lending limit "+q)
		}
		if s.GetWeight() != 0 {
			parts = append(parts, fmt.Sprintf("weight %g", s.GetWeight()))
		}
		if s.GetReclaimPolicy() != 0 {
			parts = append(parts, "reclaim "+shortEnum(s.GetReclaimPolicy()))
		}
		if s.GetFairSharePreemption() {
			parts = append(parts, "fair-share preemption")
		}
		if h := s.GetUsageHalfLifeSeconds(); h > 0 {
			parts = append(parts, "usage half-life "+(time.Duration(h)*time.Second).String())
		}
		row("Sharing", strings.Join(parts, ", "))
		if len(s.GetGpuTypes()) > 0 {
			models := make([]string, 0, len(s.GetGpuTypes()))
			for m, n := range s.GetGpuTypes() {
				models = append(models, fmt.Sprintf("%s=%d", m, n))
			}
			slices.Sort(models)
			row("GPU types", strings.Join(models, ", "))
		}
		if b := s.GetBudget(); b != nil {
			period := "month"
			if b.GetPeriod() == pb.BudgetPeriod_BUDGET_PERIOD_ROLLING_30D {
				period = "rolling 30 days"
			}
			v := fmt.Sprintf("%g GPU-hours per %s", b.GetGpuHours(), period)
			if b.GetOverBudget() == pb.OverBudgetPolicy_OVER_BUDGET_POLICY_BORROW_ONLY {
				v += ", then borrow only"
			}
			row("Budget", v)
		}
	}
	if st := t.GetSharingStatus(); st != nil {
		if s.GetBudget() != nil {
			v := fmt.Sprintf("%.1f used, %.1f remaining", st.GetBudgetUsedGpuHours(), st.GetBudgetRemainingGpuHours())
			if r := st.GetBudgetResetTime(); r != nil {
				v += ", resets " + r.AsTime().UTC().Format(time.RFC3339)
			}
			row("Budget use", v)
		}
		if d := st.GetDecayedUsage(); d != nil {
			row("Decayed usage", formatQuota(d))
		}
	}
}
