package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/trainyard/trainyard/internal/cluster"
)

// Remote clusters' agents (issue 45) authenticate with a Kubernetes
// ServiceAccount token of their own cluster. Such a token is an OIDC ID
// token: go-oidc verifies its signature, issuer, audience and expiry
// against the identity registered with the cluster (cluster.AgentIdentity:
// issuer, subject, and the issuer's keys inline or at a URI), and its
// subject must be the agent's ServiceAccount.
//
// A token maps to exactly one cluster. Local clusters often share an
// issuer name (https://kubernetes.default.svc.cluster.local), so the
// issuer only narrows the candidates: the token is verified against each
// candidate's keys, and it is accepted only when exactly one cluster's
// identity verifies it. Two clusters registered with the same keys and
// subject are ambiguous, and their agents are refused until an operator
// fixes the registration.
//
//	token ─► "iss" (unverified) ─► clusters registered with that issuer
//	      ─► go-oidc Verify with each one's keys and the audience
//	      ─► "sub" == the registered subject ─► exactly one ─► Principal{Cluster}

// IdentitySource lists the registered agent identities by cluster name
// (*store.Store's ClusterIdentities).
type IdentitySource interface {
	ClusterIdentities(ctx context.Context) (map[string]cluster.AgentIdentity, error)
}

// AgentConfig configures an AgentAuthenticator.
type AgentConfig struct {
	Identities IdentitySource
	// Audience a token must carry. Defaults to cluster.DefaultAgentAudience.
	Audience string
	// Refresh is how long the identities read are used before they are
	// read again. Defaults to 10s; an unknown issuer reads them again at
	// most once a second.
	Refresh time.Duration
	// Now is the clock of expiry checks (tests). Defaults to time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// AgentAuthenticator authenticates remote clusters' agents. Its principals
// carry Principal.Cluster; nothing else produces one.
type AgentAuthenticator struct {
	cfg AgentConfig
	log *slog.Logger

	mu        sync.Mutex
	read      time.Time                 // when identities were last read
	verifiers map[string]*agentVerifier // by cluster name
}

// agentVerifier is one cluster's identity with its go-oidc verifier.
type agentVerifier struct {
	id       cluster.AgentIdentity
	verifier *oidc.IDTokenVerifier
}

// NewAgentAuthenticator returns an authenticator of agents' tokens.
func NewAgentAuthenticator(cfg AgentConfig) (*AgentAuthenticator, error) {
	if cfg.Identities == nil {
		return nil, errors.New("auth: AgentConfig.Identities is required")
	}
	if cfg.Audience == "" {
		cfg.Audience = cluster.DefaultAgentAudience
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &AgentAuthenticator{cfg: cfg, log: cfg.Logger.With("component", "agent-auth"), verifiers: map[string]*agentVerifier{}}, nil
}

// Authenticate maps a ServiceAccount token to its cluster's agent. The
// errors never hold the token.
func (a *AgentAuthenticator) Authenticate(ctx context.Context, raw string) (Principal, error) {
	if raw == "" {
		return Principal{}, unauthenticated("empty token", nil)
	}
	if len(raw) > maxTokenBytes {
		return Principal{}, unauthenticated(fmt.Sprintf("token of %d bytes exceeds %d", len(raw), maxTokenBytes), nil)
	}
	iss, err := unverifiedIssuer(raw)
	if err != nil {
		return Principal{}, unauthenticated("not a JWT", err)
	}
	candidates, err := a.candidates(ctx, iss)
	if err != nil {
		return Principal{}, err
	}
	if len(candidates) == 0 {
		return Principal{}, unauthenticated(fmt.Sprintf("no cluster is registered with issuer %q", iss), nil)
	}
	var (
		matched []string
		p       Principal
		reasons []error
	)
	for _, name := range slices.Sorted(maps.Keys(candidates)) {
		v := candidates[name]
		tok, err := v.verifier.Verify(ctx, raw)
		if err != nil {
			reasons = append(reasons, fmt.Errorf("cluster %s: %w", name, err))
			continue
		}
		if tok.Subject != v.id.Subject {
			reasons = append(reasons, fmt.Errorf("cluster %s: subject %q is not the registered agent %q", name, tok.Subject, v.id.Subject))
			continue
		}
		matched = append(matched, name)
		p = Principal{Subject: tok.Subject, Issuer: tok.Issuer, Expiry: tok.Expiry, Cluster: name}
	}
	switch len(matched) {
	case 0:
		return Principal{}, unauthenticated("agent token rejected", errors.Join(reasons...))
	case 1:
		return p, nil
	}
	return Principal{}, unauthenticated(fmt.Sprintf("agent token is valid for clusters %s at once: register each cluster's own keys", strings.Join(matched, ", ")), nil)
}

// candidates are the verifiers of the clusters registered with issuer.
func (a *AgentAuthenticator) candidates(ctx context.Context, issuer string) (map[string]*agentVerifier, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	stale := now.Sub(a.read) > a.cfg.Refresh
	if !stale && !a.knows(issuer) && now.Sub(a.read) > time.Second {
		stale = true // registered since the last read, maybe
	}
	if stale {
		ids, err := a.cfg.Identities.ClusterIdentities(ctx)
		if err != nil {
			if a.read.IsZero() {
				return nil, unavailable("reading the clusters' agent identities", err)
			}
			a.log.Warn("reading the clusters' agent identities failed; using the last ones read", "error", err)
		} else {
			a.read = now
			a.rebuild(ctx, ids)
		}
	}
	out := map[string]*agentVerifier{}
	for name, v := range a.verifiers {
		if v.id.Issuer == issuer {
			out[name] = v
		}
	}
	return out, nil
}

func (a *AgentAuthenticator) knows(issuer string) bool {
	for _, v := range a.verifiers {
		if v.id.Issuer == issuer {
			return true
		}
	}
	return false
}

// rebuild keeps the verifiers of unchanged identities (a remote key set
// keeps its cache) and makes the others.
func (a *AgentAuthenticator) rebuild(ctx context.Context, ids map[string]cluster.AgentIdentity) {
	next := make(map[string]*agentVerifier, len(ids))
	for name, id := range ids {
		if v, ok := a.verifiers[name]; ok && v.id == id {
			next[name] = v
			continue
		}
		var keys oidc.KeySet
		if id.JWKS != "" {
			pub, err := id.PublicKeys()
			if err != nil {
				a.log.Warn("a cluster's registered key set is unusable; its agent is refused", "cluster", name, "error", err)
				continue
			}
			keys = &oidc.StaticKeySet{PublicKeys: pub}
		} else {
			// The key set's fetches must outlive this request.
			keys = oidc.NewRemoteKeySet(context.WithoutCancel(ctx), id.JWKSURI)
		}
		next[name] = &agentVerifier{id: id, verifier: oidc.NewVerifier(id.Issuer, keys, &oidc.Config{
			ClientID: a.cfg.Audience, SupportedSigningAlgs: signingAlgs, Now: a.cfg.Now,
		})}
	}
	a.verifiers = next
}

// unverifiedIssuer reads a JWT's "iss" without checking anything: it only
// picks the identities to verify the token against.
func unverifiedIssuer(raw string) (string, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("%d parts, not 3", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("payload: %v", err)
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fmt.Errorf("payload: %v", err)
	}
	if claims.Issuer == "" {
		return "", errors.New("no iss claim")
	}
	return claims.Issuer, nil
}
