package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DevWarning is logged (at ERROR, so it shows up in any log filter) when dev
// authentication is on.
const DevWarning = "DEV AUTH IS ON: static bearer tokens from a file are accepted. " +
	"Anyone holding one of them acts as its subject. Never enable --dev-auth outside local development."

// DevOptions configures LoadDevTokens.
type DevOptions struct {
	// AdminGroup makes tokens listing it in groups platform admins, exactly
	// as for OIDC tokens. Defaults to none.
	AdminGroup string
	// Logger gets DevWarning. Defaults to slog.Default().
	Logger *slog.Logger
}

// minDevTokenLen keeps "test" and "x" out: even local tokens end up in shell
// history and screenshots.
const minDevTokenLen = 8

// devTokenFile is the dev token file format (YAML; JSON is valid YAML):
//
//	tokens:
//	  - token: alice-local-token      # the bearer token, at least 8 characters
//	    subject: alice                # required; what tenant members name
//	    email: alice@example.com      # optional
//	    groups: [ml-team]             # optional
//	  - token: root-local-token
//	    subject: root
//	    platformAdmin: true           # or list the admin group in groups
//
// Unknown fields are errors, so a typo cannot silently drop a group.
type devTokenFile struct {
	Tokens []devTokenEntry `yaml:"tokens"`
}

type devTokenEntry struct {
	Token         string   `yaml:"token"`
	Subject       string   `yaml:"subject"`
	Email         string   `yaml:"email"`
	Groups        []string `yaml:"groups"`
	PlatformAdmin bool     `yaml:"platformAdmin"`
}

// DevTokens authenticates static tokens from a file. For local use only.
type DevTokens struct {
	entries []devToken
}

type devToken struct {
	hash      [sha256.Size]byte
	principal Principal
}

// LoadDevTokens reads a dev token file (format on devTokenFile above and
// in doc.go) and logs DevWarning.
func LoadDevTokens(path string, opts DevOptions) (*DevTokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dev tokens: %w", err)
	}
	d, err := ParseDevTokens(data, opts.AdminGroup)
	if err != nil {
		return nil, fmt.Errorf("dev tokens %s: %w", path, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Error(DevWarning, "component", "auth", "file", path, "tokens", len(d.entries))
	return d, nil
}

// ParseDevTokens parses the content of a dev token file.
func ParseDevTokens(data []byte, adminGroup string) (*DevTokens, error) {
	var f devTokenFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if len(f.Tokens) == 0 {
		return nil, fmt.Errorf("no tokens")
	}
	d := &DevTokens{}
	seen := map[[sha256.Size]byte]bool{}
	for i, e := range f.Tokens {
		switch {
		case len(e.Token) < minDevTokenLen:
			return nil, fmt.Errorf("tokens[%d]: token must be at least %d characters", i, minDevTokenLen)
		case strings.ContainsAny(e.Token, " \t\r\n"):
			return nil, fmt.Errorf("tokens[%d]: token must not contain whitespace", i)
		case e.Subject == "":
			return nil, fmt.Errorf("tokens[%d]: subject is required", i)
		case strings.ContainsRune(e.Subject+strings.Join(e.Groups, ""), 0):
			// Subjects and groups reach Postgres, which stores no NUL byte.
			return nil, fmt.Errorf("tokens[%d]: subject or a group contains a NUL byte", i)
		}
		h := sha256.Sum256([]byte(e.Token))
		if seen[h] {
			return nil, fmt.Errorf("tokens[%d]: duplicate token", i)
		}
		seen[h] = true
		p := Principal{Subject: e.Subject, Email: e.Email, Groups: e.Groups, Issuer: DevIssuer}
		p.PlatformAdmin = e.PlatformAdmin || p.InGroup(adminGroup)
		d.entries = append(d.entries, devToken{hash: h, principal: p})
	}
	return d, nil
}

// Authenticate compares rawToken with every configured token in constant
// time (hashes of equal length, no early exit), so timing reveals neither
// which token matched nor how much of one.
func (d *DevTokens) Authenticate(_ context.Context, rawToken string) (Principal, error) {
	h := sha256.Sum256([]byte(rawToken))
	match := -1
	for i := range d.entries {
		if subtle.ConstantTimeCompare(h[:], d.entries[i].hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return Principal{}, unauthenticated("not a dev token", nil)
	}
	p := d.entries[match].principal
	p.Groups = append([]string(nil), p.Groups...)
	return p, nil
}

// Ready always returns nil; it mirrors OIDC.Ready for /readyz wiring.
func (d *DevTokens) Ready() error { return nil }
