//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/trainyard/trainyard/integration/harness"
	"github.com/trainyard/trainyard/internal/auth/oidctest"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The Python client (clients/python) against the live server: the
// notebook-style example, which submits a job and a Kubeflow TFJob, waits
// for both, reads a log and catches a validation error with its field
// violations. Its offline tests are `make python-test` (pytest, mypy).

// python is the interpreter with Debian's python3-grpcio, python3-protobuf
// and python3-yaml (.ci/run installs them): $TRAINYARD_PYTHON, else the
// system's /usr/bin/python3, which a user's pyenv or venv would shadow on
// PATH.
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("TRAINYARD_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			py = "python3"
		}
	}
	out, err := exec.Command(py, "-c", "import grpc, google.protobuf, yaml").CombinedOutput()
	require.NoError(t, err, "%s cannot import grpc, protobuf and yaml (apt-get install python3-grpcio python3-protobuf python3-yaml): %s", py, out)
	return py
}

func clientDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "clients", "python")
}

// asMember runs the Python client (cmd, in clients/python) against env's
// server as user in tenant, with a token in the environment and a tyctl
// config of its own (never the user's), and returns what it printed once
// it exited 0.
func asMember(t *testing.T, env *harness.Env, tenant, user string, cmd *exec.Cmd) string {
	t.Helper()
	cmd.Dir = clientDir()
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+clientDir(),
		"TYCTL_SERVER="+env.GRPCAddr, "TYCTL_INSECURE=true", "TYCTL_TENANT="+tenant, "TYCTL_TOKEN="+env.Token(user),
		"TYCTL_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func TestPythonClientExample(t *testing.T) {
	e := startWorkers(t, 1)
	text := asMember(t, e.Env, workerTenant, "alice", exec.Command(python(t), "examples/train_mnist.py"))
	require.Contains(t, text, "finished JOB_STATE_SUCCEEDED")
	require.Contains(t, text, "tfjob finished JOB_STATE_SUCCEEDED")
	require.Regexp(t, `chief-0 \| .+`, text, "a log line of the chief")
	require.Contains(t, text, "invalid: spec.replicas[0].count - ")
	require.Contains(t, text, "invalid: spec.replicas[0].image - ")
	require.NotContains(t, text, e.Token("alice")[:20], "the token is never printed")
	require.True(t, strings.Contains(text, "RUNNING") || strings.Contains(text, "SUCCEEDED"), "progress lines")
}

// A login tyctl stored whose ID token has expired: the Python client
// renews it with the refresh token at the test issuer, writes the renewed
// login back for tyctl, and the server accepts the new token.
func TestPythonClientRenewsTheStoredLogin(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_VIEWER))
	env.Issuer.SetLogin(oidctest.Claims{Subject: "alice"})
	refresh := loginAtIssuer(t, env.Issuer)
	config := filepath.Join(t.TempDir(), "config.yaml")
	stale := env.Issuer.ExpiredToken(oidctest.Claims{Subject: "alice"})
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(
		"server: %s\ntenant: acme\ninsecure: true\nlogin:\n  issuer: %s\n  clientId: %s\n  idToken: %s\n  refreshToken: %s\n  expiry: %q\n",
		env.GRPCAddr, env.Issuer.URL(), oidctest.DefaultAudience, stale, refresh, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))), 0o600))

	cmd := exec.Command(python(t), "-c", "import trainyard; print('jobs:', len(list(trainyard.Client().list())))")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+clientDir(), "TYCTL_CONFIG="+config)
	for _, k := range []string{"TYCTL_SERVER", "TYCTL_TENANT", "TYCTL_TOKEN", "TYCTL_TOKEN_FILE", "TYCTL_INSECURE"} {
		cmd.Env = append(cmd.Env, k+"=")
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "jobs: 0\n", string(out))
	require.Equal(t, 1, env.Issuer.TokenRequests("refresh_token"))

	b, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NotContains(t, string(b), stale, "the renewed token replaced the expired one")
	require.NotContains(t, string(b), refresh, "and the rotated refresh token the used one")
	st, err := os.Stat(config)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// loginAtIssuer signs in at the test issuer as a CLI would (authorization
// code with PKCE) and returns the refresh token.
func loginAtIssuer(t *testing.T, iss *oidctest.Issuer) string {
	t.Helper()
	conf := &oauth2.Config{ClientID: oidctest.DefaultAudience, RedirectURL: "http://127.0.0.1:1/callback", Scopes: []string{"openid", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: iss.URL() + "/authorize", TokenURL: iss.URL() + "/token"}}
	verifier := oauth2.GenerateVerifier()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)))
	require.NoError(t, err)
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	tok, err := conf.Exchange(ctxT(t), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.NotEmpty(t, tok.RefreshToken)
	return tok.RefreshToken
}

// snapshot, then watch from its position: a job submitted in between still
// arrives.
func TestPythonClientSnapshotThenWatch(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "acme", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	const script = `
import trainyard
ty = trainyard.Client()
spec = {"replicas": [{"type": "WORKER", "image": "tensorflow/tensorflow:2.16.1", "command": ["python", "train.py"]}]}
ty.submit(spec, job_id="before")
jobs, position = ty.snapshot()
print("listed", [j.name.rsplit("/", 1)[-1] for j in jobs], position > 0)
ty.submit(spec, job_id="between")
for update in ty.watch(after_event_id=position):
    if update.job.name.endswith("/jobs/between"):
        print("watched between")
        break
`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := asMember(t, env, "acme", "alice", exec.CommandContext(ctx, python(t), "-c", script))
	require.Equal(t, "listed ['before'] True\nwatched between\n", out)
}
