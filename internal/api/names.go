package api

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/resname"
)

// Resource names are parsed by internal/resname, which the Authorizer and
// tyctl share. A malformed name is INVALID_ARGUMENT naming the field; a
// well-formed name whose job or secret id cannot exist (not a DNS-1123
// label: a NUL byte, upper case, ...) is NOT_FOUND, as any id that names
// nothing is, so that such bytes never reach the store.

func tenantName(t string) string      { return resname.Tenant.Format(t) }
func jobName(tenant, j string) string { return resname.Job.Format(tenant, j) }
func secretName(tenant, s string) string {
	return resname.Secret.Format(tenant, s)
}

// parse parses name of pattern p from request field.
func parse(p resname.Pattern, field, name string) ([]string, error) {
	ids, err := p.Parse(name)
	var e *resname.Error
	switch {
	case err == nil:
		return ids, nil
	case errors.As(err, &e) && errors.Is(err, resname.ErrNoSuchID):
		return ids, status.Errorf(codes.NotFound, "%s in tenant %s", e.Description, quote(ids[0]))
	case errors.As(err, &e):
		return nil, invalid(violation(field, e.Description))
	}
	return nil, err
}

// parseNew parses the name of a resource the request creates or replaces:
// an id that cannot exist is the caller's to fix, so it is returned for the
// handler to validate (and report as INVALID_ARGUMENT) rather than being
// NOT_FOUND.
func parseNew(p resname.Pattern, field, name string) ([]string, error) {
	ids, err := p.Parse(name)
	if errors.Is(err, resname.ErrNoSuchID) {
		return ids, nil
	}
	var e *resname.Error
	if errors.As(err, &e) {
		return nil, invalid(violation(field, e.Description))
	}
	return ids, err
}

func parseTenant(field, name string) (string, error) {
	ids, err := parse(resname.Tenant, field, name)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

func parseJob(field, name string) (tenant, job string, err error) {
	ids, err := parse(resname.Job, field, name)
	if err != nil {
		return "", "", err
	}
	return ids[0], ids[1], nil
}

func parseSecret(field, name string) (tenant, secret string, err error) {
	ids, err := parse(resname.Secret, field, name)
	if err != nil {
		return "", "", err
	}
	return ids[0], ids[1], nil
}

// quote shortens, escapes and quotes user input echoed in an error.
func quote(s string) string { return resname.Quote(s) }
