package api

import (
	"strings"
)

// Resource names (AIP-122): tenants/{tenant}, tenants/{tenant}/jobs/{job},
// tenants/{tenant}/secrets/{secret}. Parsing checks the shape only; the ids
// themselves are checked where they are created.

func tenantName(t string) string        { return "tenants/" + t }
func jobName(tenant, job string) string { return "tenants/" + tenant + "/jobs/" + job }
func secretName(tenant, s string) string {
	return "tenants/" + tenant + "/secrets/" + s
}

// parseName splits name into the ids of a pattern like tenants/*/jobs/*.
// field is the request field, for the error.
func parseName(field, name string, collections ...string) ([]string, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 2*len(collections) {
		return nil, invalidName(field, name, collections)
	}
	ids := make([]string, len(collections))
	for i, c := range collections {
		if parts[2*i] != c || parts[2*i+1] == "" {
			return nil, invalidName(field, name, collections)
		}
		ids[i] = parts[2*i+1]
	}
	return ids, nil
}

func invalidName(field, name string, collections []string) error {
	pattern := make([]string, 0, 2*len(collections))
	for _, c := range collections {
		pattern = append(pattern, c, "{"+strings.TrimSuffix(c, "s")+"}")
	}
	return invalid(violation(field, "must look like "+strings.Join(pattern, "/")+", got "+quote(name)))
}

func parseTenant(field, name string) (string, error) {
	ids, err := parseName(field, name, "tenants")
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

func parseJob(field, name string) (tenant, job string, err error) {
	ids, err := parseName(field, name, "tenants", "jobs")
	if err != nil {
		return "", "", err
	}
	return ids[0], ids[1], nil
}

func parseSecret(field, name string) (tenant, secret string, err error) {
	ids, err := parseName(field, name, "tenants", "secrets")
	if err != nil {
		return "", "", err
	}
	return ids[0], ids[1], nil
}

// quote shortens and quotes user input echoed in an error.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return `"` + s + `"`
}
