package main

import (
	"fmt"
	"strings"

	"github.com/trainyard/trainyard/internal/resname"
)

// Commands take short ids (mnist-1) and the tenant from --tenant; a full
// resource name (tenants/ml/jobs/mnist-1, as -o json prints) works too and
// carries its own tenant. Names are checked with the parser the server
// uses (internal/resname), so a typo is caught before a round trip, with
// the same words.

// tenantID is the tenant from --tenant or TYCTL_TENANT.
func (a *app) tenantID() (string, error) {
	s, err := a.settings()
	if err != nil {
		return "", err
	}
	if s.tenant == "" {
		return "", fmt.Errorf("no tenant: pass --tenant or set %s", envTenant)
	}
	if !resname.IsID(s.tenant) {
		return "", fmt.Errorf("tenant %s: want the tenant id, e.g. ml-team", resname.Quote(s.tenant))
	}
	return s.tenant, nil
}

// tenantParent is tenants/{tenant}.
func (a *app) tenantParent() (string, error) {
	t, err := a.tenantID()
	if err != nil {
		return "", err
	}
	return resname.Tenant.Format(t), nil
}

// tenantName turns an argument (ml-team or tenants/ml-team) into a name;
// with no argument, the current tenant's.
func (a *app) tenantName(args []string) (string, error) {
	if len(args) == 0 {
		return a.tenantParent()
	}
	return nameOf(resname.Tenant, args[0], nil)
}

// childName turns a job or secret argument (an id, or a full name) into
// its resource name.
func (a *app) childName(p resname.Pattern, arg string) (string, error) {
	return nameOf(p, arg, a.tenantID)
}

// nameOf parses arg as a full name of p, or as the last id of one, whose
// other ids come from tenant.
func nameOf(p resname.Pattern, arg string, tenant func() (string, error)) (string, error) {
	name := arg
	if !strings.HasPrefix(arg, resname.Tenant.Collection()+"/") && tenant != nil {
		t, err := tenant()
		if err != nil {
			return "", err
		}
		name = p.Format(t, arg)
	} else if tenant == nil && !strings.Contains(arg, "/") {
		name = p.Format(arg)
	}
	if _, err := p.Parse(name); err != nil {
		return "", fmt.Errorf("%s: %v; want a %s id such as %s, or a name %s", resname.Quote(arg), err, p.Kind(), example[p.Kind()], p)
	}
	return name, nil
}

var example = map[string]string{"tenant": "ml-team", "job": "mnist-1", "secret": "hf-token", "webhook": "registry"}
