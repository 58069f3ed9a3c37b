package main

import (
	"fmt"
	"strings"
)

// Commands take short ids (mnist-1) and the tenant from --tenant; a full
// resource name (tenants/ml/jobs/mnist-1, as -o json prints) works too and
// carries its own tenant.

// tenantID is the tenant from --tenant or TYCTL_TENANT.
func (a *app) tenantID() (string, error) {
	s, err := a.settings()
	if err != nil {
		return "", err
	}
	if s.tenant == "" {
		return "", fmt.Errorf("no tenant: pass --tenant or set %s", envTenant)
	}
	if strings.Contains(s.tenant, "/") {
		return "", fmt.Errorf("tenant %q: want the tenant id, e.g. ml-team", s.tenant)
	}
	return s.tenant, nil
}

// tenantParent is tenants/{tenant}.
func (a *app) tenantParent() (string, error) {
	t, err := a.tenantID()
	if err != nil {
		return "", err
	}
	return "tenants/" + t, nil
}

// tenantName turns an argument (ml-team or tenants/ml-team) into a name;
// with no argument, the current tenant's.
func (a *app) tenantName(args []string) (string, error) {
	if len(args) == 0 {
		return a.tenantParent()
	}
	id := strings.TrimPrefix(args[0], "tenants/")
	if id == "" || strings.Contains(id, "/") {
		return "", fmt.Errorf("%q is not a tenant: want an id such as ml-team", args[0])
	}
	return "tenants/" + id, nil
}

// childName turns a job or secret argument into its resource name.
func (a *app) childName(collection, arg string) (string, error) {
	if strings.HasPrefix(arg, "tenants/") {
		parts := strings.Split(arg, "/")
		if len(parts) != 4 || parts[1] == "" || parts[2] != collection || parts[3] == "" {
			return "", fmt.Errorf("%q: want an id, or tenants/TENANT/%s/ID", arg, collection)
		}
		return arg, nil
	}
	if arg == "" || strings.Contains(arg, "/") {
		return "", fmt.Errorf("%q: want an id, or tenants/TENANT/%s/ID", arg, collection)
	}
	parent, err := a.tenantParent()
	if err != nil {
		return "", err
	}
	return parent + "/" + collection + "/" + arg, nil
}
