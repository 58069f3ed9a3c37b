package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

func newWhoamiCmd(a *app) *cobra.Command {
	var groupsClaim string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show who tyctl calls as: subject, groups, token expiry and your tenants with your role",
		Long: `Show the identity of the token tyctl sends (its claims, as the token
states them: the server verifies it on every call) and the tenants the
server lets you see, with your role in each.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.settings()
			if err != nil {
				return err
			}
			if s.token == "" {
				return fmt.Errorf("no token: run tyctl login, or set %s", envToken)
			}
			claims := jwtClaims(s.token)
			subject, _ := claims["sub"].(string)
			email, _ := claims["email"].(string)
			groups := stringList(claims[groupsClaim])
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			var roles []string
			var tenants []any
			token := ""
			for {
				resp, err := c.ListTenants(ctx, &pb.ListTenantsRequest{PageToken: token})
				if err != nil {
					return err
				}
				for _, t := range resp.GetTenants() {
					id := lastSegment(t.GetName())
					role := roleOf(t, subject, groups)
					roles = append(roles, id+" ("+role+")")
					tenants = append(tenants, map[string]any{"tenant": id, "role": role})
				}
				if token = resp.GetNextPageToken(); token == "" {
					break
				}
			}
			var exp time.Time
			if f, ok := claims["exp"].(float64); ok {
				exp = time.Unix(int64(f), 0)
			}
			out, err := structpb.NewStruct(map[string]any{
				"subject": subject, "email": email, "groups": toAny(groups), "issuer": claims["iss"],
				"expiry": exp.UTC().Format(time.RFC3339), "tokenSource": s.tokenSource, "tenants": tenants,
			})
			if err != nil {
				return err
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "subject:  %s\n", subject)
				if email != "" {
					fmt.Fprintf(w, "email:    %s\n", email)
				}
				fmt.Fprintf(w, "groups:   %s\n", orDefault(strings.Join(groups, ", "), "(none)"))
				fmt.Fprintf(w, "issuer:   %v\n", claims["iss"])
				if !exp.IsZero() {
					fmt.Fprintf(w, "expires:  %s (%s)\n", exp.Local().Format(time.DateTime), s.tokenSource)
				}
				fmt.Fprintf(w, "tenants:  %s\n", orDefault(strings.Join(roles, ", "), "(none)"))
			})
		},
	}
	cmd.Flags().StringVar(&groupsClaim, "groups-claim", "groups", "the token claim holding your groups (the server's --oidc-groups-claim)")
	return cmd
}

// roleOf is the caller's highest role in t by its members, as the server
// decides it (platform admins see every tenant without a member entry).
func roleOf(t *pb.Tenant, subject string, groups []string) string {
	best := pb.Role_ROLE_UNSPECIFIED
	for _, m := range t.GetMembers() {
		if (m.GetSubject() != "" && m.GetSubject() == subject) || (m.GetGroup() != "" && contains(groups, m.GetGroup())) {
			best = max(best, m.GetRole())
		}
	}
	if best == pb.Role_ROLE_UNSPECIFIED {
		return "platform admin"
	}
	return strings.ToLower(strings.TrimPrefix(best.String(), "ROLE_"))
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// jwtClaims reads a JWT's claims without verifying it: whoami only shows
// them; the server verifies the token on every call.
func jwtClaims(token string) map[string]any {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return map[string]any{}
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		return map[string]any{}
	}
	return m
}

func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func newLogoutCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the login tyctl login stored (server and tenant stay)",
		Long: `Remove the tokens tyctl login stored from tyctl's config file. The
server, tenant and TLS settings stay. The tokens are not revoked at the
issuer: an ID token stays valid until it expires (sign out there to end
the session).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, cfg, err := a.configFileOf()
			if err != nil {
				return err
			}
			if cfg.Login == nil {
				fmt.Fprintln(a.stderr, "Not logged in.")
				return nil
			}
			issuer := cfg.Login.Issuer
			cfg.Login = nil
			if err := saveConfig(path, cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Logged out of %s.\n", issuer)
			return nil
		},
	}
}
