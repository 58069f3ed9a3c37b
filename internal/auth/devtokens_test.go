package auth

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const devFile = `
# local development only
tokens:
  - token: alice-local-token
    subject: alice
    email: alice@example.com
    groups: [ml-team]
  - token: root-local-token
    subject: root
    groups: [platform-admins]
  - token: ops-local-token
    subject: ops
    platformAdmin: true
`

func TestDevTokens(t *testing.T) {
	d, err := ParseDevTokens([]byte(devFile), "platform-admins")
	require.NoError(t, err)
	cases := []struct {
		token string
		want  Principal // zero: rejected
	}{
		{"alice-local-token", Principal{Subject: "alice", Email: "alice@example.com", Groups: []string{"ml-team"}}},
		{"root-local-token", Principal{Subject: "root", Groups: []string{"platform-admins"}, PlatformAdmin: true}},
		{"ops-local-token", Principal{Subject: "ops", PlatformAdmin: true}},
		{"alice-local-toke", Principal{}},
		{"alice-local-token ", Principal{}},
		{"ALICE-LOCAL-TOKEN", Principal{}},
		{"", Principal{}},
	}
	for _, c := range cases {
		t.Run(c.token, func(t *testing.T) {
			p, err := d.Authenticate(context.Background(), c.token)
			if c.want.Subject == "" {
				require.ErrorIs(t, err, ErrUnauthenticated)
				require.NotContains(t, err.Error(), "local-token")
				return
			}
			require.NoError(t, err)
			require.Equal(t, DevIssuer, p.Issuer)
			p.Issuer = ""
			require.Equal(t, c.want, p)
		})
	}

	// Callers cannot change the configured principal through the result.
	p, _ := d.Authenticate(context.Background(), "alice-local-token")
	p.Groups[0] = "platform-admins"
	p, _ = d.Authenticate(context.Background(), "alice-local-token")
	require.Equal(t, []string{"ml-team"}, p.Groups)
	require.NoError(t, d.Ready())
}

func TestDevTokensAdminGroupUnset(t *testing.T) {
	d, err := ParseDevTokens([]byte(devFile), "")
	require.NoError(t, err)
	p, err := d.Authenticate(context.Background(), "root-local-token")
	require.NoError(t, err)
	require.False(t, p.PlatformAdmin, "without an admin group only platformAdmin: true makes admins")
}

func TestDevTokensInvalid(t *testing.T) {
	for name, content := range map[string]string{
		"empty":           ``,
		"no tokens":       `tokens: []`,
		"not yaml":        `tokens: [`,
		"short token":     `tokens: [{token: short, subject: a}]`,
		"whitespace":      `tokens: [{token: "has a space", subject: a}]`,
		"no subject":      `tokens: [{token: long-enough-token}]`,
		"duplicate token": `tokens: [{token: long-enough-token, subject: a}, {token: long-enough-token, subject: b}]`,
		"unknown field":   `tokens: [{token: long-enough-token, subject: a, group: [admins]}]`,
		"top-level typo":  `token: [{token: long-enough-token, subject: a}]`,
		"NUL in subject":  `tokens: [{token: long-enough-token, subject: "a\0b"}]`,
		"NUL in a group":  `tokens: [{token: long-enough-token, subject: a, groups: ["g\0"]}]`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDevTokens([]byte(content), "")
			require.Error(t, err)
			require.NotContains(t, err.Error(), "long-enough-token", "errors may be logged")
		})
	}
}

func TestLoadDevTokensWarns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev-tokens.yaml")
	require.NoError(t, os.WriteFile(path, []byte(devFile), 0o600))
	var logs logBuffer
	d, err := LoadDevTokens(path, DevOptions{AdminGroup: "platform-admins", Logger: logs.logger()})
	require.NoError(t, err)
	require.Contains(t, logs.String(), "level=ERROR")
	require.Contains(t, logs.String(), "DEV AUTH IS ON")
	require.NotContains(t, logs.String(), "local-token")
	_, err = d.Authenticate(context.Background(), "alice-local-token")
	require.NoError(t, err)

	_, err = LoadDevTokens(filepath.Join(t.TempDir(), "missing.yaml"), DevOptions{})
	require.Error(t, err)
}

func TestDevTokensJSON(t *testing.T) {
	d, err := ParseDevTokens([]byte(`{"tokens":[{"token":"json-local-token","subject":"j","groups":["g"]}]}`), "")
	require.NoError(t, err)
	p, err := d.Authenticate(context.Background(), "json-local-token")
	require.NoError(t, err)
	require.Equal(t, Principal{Subject: "j", Groups: []string{"g"}, Issuer: DevIssuer}, p)
}
