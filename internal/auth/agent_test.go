package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/cluster"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

const (
	localIssuer = "https://kubernetes.default.svc.cluster.local"
	agentSub    = "system:serviceaccount:trainyard:trainyard-agent"
)

// saKey is a cluster's service-account signing key.
type saKey struct {
	kid string
	key *ecdsa.PrivateKey
}

func newSAKey(t *testing.T, kid string) saKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return saKey{kid: kid, key: k}
}

// jwks is what `kubectl get --raw /openid/v1/jwks` prints for the key.
func (k saKey) jwks(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: "ES256", Use: "sig"}}})
	require.NoError(t, err)
	return string(b)
}

// token is a ServiceAccount token as TokenRequest makes it.
func (k saKey) token(t *testing.T, iss, sub, aud string, exp time.Time) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.kid))
	require.NoError(t, err)
	claims, err := json.Marshal(map[string]any{"iss": iss, "sub": sub, "aud": []string{aud},
		"exp": exp.Unix(), "iat": time.Now().Unix(), "nbf": time.Now().Add(-time.Minute).Unix()})
	require.NoError(t, err)
	jws, err := signer.Sign(claims)
	require.NoError(t, err)
	s, err := jws.CompactSerialize()
	require.NoError(t, err)
	return s
}

type identities map[string]cluster.AgentIdentity

func (i identities) ClusterIdentities(context.Context) (map[string]cluster.AgentIdentity, error) {
	return i, nil
}

// A token maps to the one cluster whose registered keys, issuer, subject
// and audience it carries; clusters that share an issuer name (every
// local cluster's) are told apart by their keys.
func TestAgentIdentityMapping(t *testing.T) {
	one, two, stranger := newSAKey(t, "one"), newSAKey(t, "two"), newSAKey(t, "x")
	ids := identities{
		"one": {Issuer: localIssuer, Subject: agentSub, JWKS: one.jwks(t)},
		"two": {Issuer: localIssuer, Subject: agentSub, JWKS: two.jwks(t)},
	}
	a, err := NewAgentAuthenticator(AgentConfig{Identities: ids})
	require.NoError(t, err)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)

	p, err := a.Authenticate(ctx, two.token(t, localIssuer, agentSub, "trainyard", hour))
	require.NoError(t, err)
	require.Equal(t, "two", p.Cluster)
	require.Equal(t, agentSub, p.Subject)
	require.Equal(t, localIssuer, p.Issuer)
	p, err = a.Authenticate(ctx, one.token(t, localIssuer, agentSub, "trainyard", hour))
	require.NoError(t, err)
	require.Equal(t, "one", p.Cluster)

	for name, tok := range map[string]string{
		"another cluster's key":  stranger.token(t, localIssuer, agentSub, "trainyard", hour),
		"wrong audience":         two.token(t, localIssuer, agentSub, "https://kubernetes.default.svc", hour),
		"expired":                two.token(t, localIssuer, agentSub, "trainyard", time.Now().Add(-time.Minute)),
		"another ServiceAccount": two.token(t, localIssuer, "system:serviceaccount:team-a:default", "trainyard", hour),
		"an unregistered issuer": two.token(t, "https://elsewhere.example", agentSub, "trainyard", hour),
		"not a JWT":              "abc.def",
		"an empty token":         "",
		"a signature of nothing": two.token(t, localIssuer, agentSub, "trainyard", hour)[:40] + "..x",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := a.Authenticate(ctx, tok)
			require.ErrorIs(t, err, ErrUnauthenticated)
			require.NotContains(t, err.Error(), tok+"x", "the reason must not hold the token")
			if len(tok) > 20 {
				require.NotContains(t, err.Error(), tok)
			}
		})
	}

	// Two clusters registered with the same keys and subject: a token
	// would speak for both, so it speaks for neither.
	same, err := NewAgentAuthenticator(AgentConfig{Identities: identities{
		"one": {Issuer: localIssuer, Subject: agentSub, JWKS: one.jwks(t)},
		"dup": {Issuer: localIssuer, Subject: agentSub, JWKS: one.jwks(t)},
	}})
	require.NoError(t, err)
	_, err = same.Authenticate(ctx, one.token(t, localIssuer, agentSub, "trainyard", hour))
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Contains(t, err.Error(), "dup, one")

	// The audience is the server's to choose.
	custom, err := NewAgentAuthenticator(AgentConfig{Identities: ids, Audience: "trainyard-prod"})
	require.NoError(t, err)
	_, err = custom.Authenticate(ctx, two.token(t, localIssuer, agentSub, "trainyard", hour))
	require.ErrorIs(t, err, ErrUnauthenticated)
	p, err = custom.Authenticate(ctx, two.token(t, localIssuer, agentSub, "trainyard-prod", hour))
	require.NoError(t, err)
	require.Equal(t, "two", p.Cluster)
}

type failingIdentities struct{}

func (failingIdentities) ClusterIdentities(context.Context) (map[string]cluster.AgentIdentity, error) {
	return nil, errors.New("connection refused")
}

func TestAgentIdentitiesUnavailable(t *testing.T) {
	a, err := NewAgentAuthenticator(AgentConfig{Identities: failingIdentities{}})
	require.NoError(t, err)
	k := newSAKey(t, "k")
	_, err = a.Authenticate(context.Background(), k.token(t, localIssuer, agentSub, "trainyard", time.Now().Add(time.Hour)))
	require.ErrorIs(t, err, ErrUnavailable)
}

// An agent may call AgentService and nothing else; nobody else may call
// AgentService.
func TestAgentAuthorization(t *testing.T) {
	a := NewAuthorizer(testTenants)
	ctx := context.Background()
	agent := Principal{Subject: agentSub, Issuer: localIssuer, Cluster: "two"}
	_, err := a.Authorize(ctx, agent, pb.AgentService_LoadJob_FullMethodName, &pb.LoadJobRequest{})
	require.NoError(t, err)
	for _, m := range []string{pb.JobService_GetJob_FullMethodName, pb.TenantService_ListTenants_FullMethodName,
		pb.TenantService_CreateTenant_FullMethodName, pb.ClusterService_ListClusters_FullMethodName} {
		_, err := a.Authorize(ctx, agent, m, requestFor(m, "alpha"))
		require.Equal(t, codes.PermissionDenied, status.Code(err), m)
	}
	admin := Principal{Subject: "root", PlatformAdmin: true}
	_, err = a.Authorize(ctx, admin, pb.AgentService_SaveJob_FullMethodName, &pb.SaveJobRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

// The interceptor authenticates AgentService's callers with the agent
// authenticator only, and everyone else's without it.
func TestAgentAuthenticatorIsPickedByMethod(t *testing.T) {
	k := newSAKey(t, "two")
	agents, err := NewAgentAuthenticator(AgentConfig{Identities: identities{"two": {Issuer: localIssuer, Subject: agentSub, JWKS: k.jwks(t)}}})
	require.NoError(t, err)
	users := fakeAuthn{"user-token": {Subject: "alice", PlatformAdmin: true}}
	i := NewInterceptor(users, NewAuthorizer(testTenants), WithAgentAuthenticator(agents))
	agentTok := k.token(t, localIssuer, agentSub, "trainyard", time.Now().Add(time.Hour))
	ctx := context.Background()

	_, p, err := i.authenticateValues(ctx, pb.AgentService_ClaimJobs_FullMethodName, []string{"Bearer " + agentTok})
	require.NoError(t, err)
	require.Equal(t, "two", p.Cluster)
	_, _, err = i.authenticateValues(ctx, pb.AgentService_ClaimJobs_FullMethodName, []string{"Bearer user-token"})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "a user's token on AgentService")
	_, _, err = i.authenticateValues(ctx, pb.JobService_GetJob_FullMethodName, []string{"Bearer " + agentTok})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "an agent's token on JobService")

	without := NewInterceptor(users, NewAuthorizer(testTenants))
	_, _, err = without.authenticateValues(ctx, pb.AgentService_ClaimJobs_FullMethodName, []string{"Bearer " + agentTok})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}
