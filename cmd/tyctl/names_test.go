package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/internal/resname"
)

func TestNameOf(t *testing.T) {
	current := func() (string, error) { return "ml", nil }
	for _, c := range []struct {
		p      resname.Pattern
		arg    string
		tenant func() (string, error)
		want   string
	}{
		{resname.Job, "mnist-1", current, "tenants/ml/jobs/mnist-1"},
		{resname.Job, "tenants/cv/jobs/resnet", current, "tenants/cv/jobs/resnet"},
		{resname.Secret, "hf-token", current, "tenants/ml/secrets/hf-token"},
		{resname.Tenant, "cv", nil, "tenants/cv"},
		{resname.Tenant, "tenants/cv", nil, "tenants/cv"},
	} {
		got, err := nameOf(c.p, c.arg, c.tenant)
		require.NoError(t, err, c.arg)
		require.Equal(t, c.want, got)
	}
	for _, c := range []struct {
		p   resname.Pattern
		arg string
	}{
		{resname.Job, "Bad_Name"},
		{resname.Job, "a/b"},
		{resname.Job, "tenants/cv/secrets/s"},
		{resname.Job, "a\x00b"},
		{resname.Tenant, "tenants/CV"},
	} {
		_, err := nameOf(c.p, c.arg, current)
		require.Error(t, err, c.arg)
		require.Contains(t, err.Error(), "want a "+c.p.Kind()+" id")
	}
}
