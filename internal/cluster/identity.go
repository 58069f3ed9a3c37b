package cluster

import (
	"crypto"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/go-jose/go-jose/v4"

	"github.com/trainyard/trainyard/internal/job"
)

// AgentIdentity is how a remote cluster's agent proves that it speaks for
// the cluster (issue 45): it sends a Kubernetes ServiceAccount token of
// its own cluster (TokenRequest, audience DefaultAgentAudience unless the
// API server is told otherwise), an OIDC ID token that the control plane
// verifies against the issuer and keys registered here. With the keys
// inline (what `kubectl get --raw /openid/v1/jwks` prints) the control
// plane never needs to reach the cluster: the agent pulls, nothing
// pushes. A cluster without an identity has no remote agent; its workers
// reach Postgres directly (the default cluster).
type AgentIdentity struct {
	// Issuer is the cluster's service-account issuer (its API server's
	// --service-account-issuer): a token's "iss" must equal it.
	Issuer string `json:"issuer"`
	// Subject is the agent's ServiceAccount as a token names it
	// (system:serviceaccount:<namespace>:<name>): a token's "sub" must
	// equal it, so that no other ServiceAccount of the cluster (a job's)
	// can act as its agent.
	Subject string `json:"subject"`
	// JWKS is the issuer's JSON Web Key Set, inline; or JWKSURI, where
	// the control plane fetches it (then it must reach the cluster).
	// Exactly one of them.
	JWKS    string `json:"jwks,omitempty"`
	JWKSURI string `json:"jwksUri,omitempty"`
}

// DefaultAgentAudience is the audience an agent's token must carry.
const DefaultAgentAudience = "trainyard"

// MaxJWKSLength bounds an inline key set.
const MaxJWKSLength = 64 << 10

// IsZero reports whether no identity is set.
func (a AgentIdentity) IsZero() bool { return a == AgentIdentity{} }

// PublicKeys parses the inline key set: its public signing keys.
func (a AgentIdentity) PublicKeys() ([]crypto.PublicKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(a.JWKS), &set); err != nil {
		return nil, fmt.Errorf("is not a JSON Web Key Set: %v", err)
	}
	var keys []crypto.PublicKey
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if !k.IsPublic() {
			return nil, fmt.Errorf("key %q is not a public key: never register a private key", k.KeyID)
		}
		keys = append(keys, k.Key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("holds no public signing key")
	}
	return keys, nil
}

// ValidateIdentity checks an agent identity; the violations name fields
// under prefix (the API's JSON names, "agentIdentity.issuer").
func ValidateIdentity(prefix string, a AgentIdentity) []job.FieldViolation {
	var v job.Violations
	if a.IsZero() {
		return nil
	}
	if !validURL(a.Issuer, false) {
		v.Add(prefix+"issuer", "must be the cluster's service-account issuer, an http or https URL (kubectl get --raw /.well-known/openid-configuration shows it), not %q", a.Issuer)
	}
	if a.Subject == "" {
		v.Add(prefix+"subject", "is required: the agent's ServiceAccount, system:serviceaccount:<namespace>:<name>")
	}
	switch {
	case a.JWKS == "" && a.JWKSURI == "":
		v.Add(prefix+"jwks", "one of jwks (what kubectl get --raw /openid/v1/jwks prints) and jwksUri is required")
	case a.JWKS != "" && a.JWKSURI != "":
		v.Add(prefix+"jwksUri", "give jwks or jwksUri, not both")
	case len(a.JWKS) > MaxJWKSLength:
		v.Add(prefix+"jwks", "is %d bytes; at most %d are allowed", len(a.JWKS), MaxJWKSLength)
	case a.JWKS != "":
		if _, err := a.PublicKeys(); err != nil {
			v.Add(prefix+"jwks", "%v", err)
		}
	case !validURL(a.JWKSURI, true):
		v.Add(prefix+"jwksUri", "must be an https URL, not %q", a.JWKSURI)
	}
	return v
}

func validURL(s string, httpsOnly bool) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || !httpsOnly && u.Scheme == "http"
}
