package tenant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidateSharingNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sharing Sharing
		field   string
	}{
		{"cohort not a label", Sharing{Cohort: "Team_A"}, "sharing.cohort"},
		{"limit without cohort", Sharing{BorrowingLimit: &Quota{GPU: 4}}, "sharing.borrowingLimit"},
		{"negative lending limit", Sharing{Cohort: "c", LendingLimit: &Quota{GPU: -1}}, "sharing.lendingLimit.gpu"},
		{"bad limit cpu", Sharing{Cohort: "c", BorrowingLimit: &Quota{CPU: "lots"}}, "sharing.borrowingLimit.cpu"},
		{"weight", Sharing{Weight: -2}, "sharing.weight"},
		{"reclaim", Sharing{Reclaim: "SOMETIMES"}, "sharing.reclaim"},
		{"half-life", Sharing{UsageHalfLifeSeconds: -1}, "sharing.usageHalfLifeSeconds"},
		{"budget amount", Sharing{Budget: &Budget{}}, "sharing.budget.gpuHours"},
		{"budget period", Sharing{Budget: &Budget{GPUHours: 1, Period: "WEEK"}}, "sharing.budget.period"},
		{"borrow only needs a cohort", Sharing{Budget: &Budget{GPUHours: 1, OverBudget: OverBudgetBorrowOnly}}, "sharing.budget.overBudget"},
		{"gpu model quota", Sharing{GPUTypes: map[string]int64{"A100": -8}}, `sharing.gpuTypes["A100"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Validate(&Tenant{Sharing: tc.sharing})
			require.NotEmpty(t, v)
			require.Equal(t, tc.field, v[0].Field, v[0].Description)
		})
	}
	ok := Sharing{Cohort: "research", BorrowingLimit: &Quota{GPU: 8}, LendingLimit: &Quota{GPU: 4}, Weight: 2,
		Reclaim: ReclaimLowerPriority, FairSharePreemption: true, UsageHalfLifeSeconds: 86400,
		Budget:   &Budget{GPUHours: 1000, Period: PeriodRolling30d, OverBudget: OverBudgetBorrowOnly},
		GPUTypes: map[string]int64{"A100": 8, "H100": 8}}
	require.Empty(t, Validate(&Tenant{Sharing: ok}))
}

func TestBudgetPeriods(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	month := Budget{GPUHours: 1}
	require.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), month.PeriodStart(now))
	require.Equal(t, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), month.Reset(now, time.Time{}))
	rolling := Budget{GPUHours: 1, Period: PeriodRolling30d}
	require.Equal(t, time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC), rolling.PeriodStart(now))
	require.Equal(t, time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC), rolling.Reset(now, time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)),
		"the oldest day with usage leaves the window")
}
