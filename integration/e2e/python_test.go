//go:build integration

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Python client (clients/python) against the live server: its offline
// unit tests, then the notebook-style example, which submits a job and a
// Kubeflow TFJob, waits for both, reads a log and catches a validation
// error with its field violations.

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

func TestPythonClientUnit(t *testing.T) {
	cmd := exec.Command(python(t), "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Dir = clientDir()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestPythonClientExample(t *testing.T) {
	e := startWorkers(t, 1)
	cmd := exec.Command(python(t), "examples/train_mnist.py")
	cmd.Dir = clientDir()
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+clientDir(),
		"TYCTL_SERVER="+e.GRPCAddr, "TYCTL_INSECURE=true", "TYCTL_TENANT="+workerTenant,
		"TYCTL_TOKEN="+e.Token("alice"),
		// Not the user's own tyctl config.
		"TYCTL_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"),
	)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	require.Contains(t, text, "finished JOB_STATE_SUCCEEDED")
	require.Contains(t, text, "tfjob finished JOB_STATE_SUCCEEDED")
	require.Regexp(t, `worker-0 \| .+`, text, "a log line of worker-0")
	require.Contains(t, text, "invalid: spec.replicas[0].count - ")
	require.Contains(t, text, "invalid: spec.replicas[0].image - ")
	require.NotContains(t, text, e.Token("alice")[:20], "the token is never printed")
	require.True(t, strings.Contains(text, "RUNNING") || strings.Contains(text, "SUCCEEDED"), "progress lines")
}
