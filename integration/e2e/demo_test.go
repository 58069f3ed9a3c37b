//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainyard/trainyard/integration/harness"
)

// make demo (integration/demo.sh) runs the job to SUCCEEDED. Not at a
// terminal it then stops everything at once; with DEMO_KEEP=1 (what a
// terminal gets) it keeps serving until an interrupt, then stops cleanly.

var demoREST = regexp.MustCompile(`REST (http://\S+)`)

func demoCmd(ctx context.Context, t *testing.T, keep string) *exec.Cmd {
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(filepath.Dir(file), "..", "demo.sh"))
	// Out of time: stop it as Ctrl-C would, so that it stops what it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	// Stdin is /dev/null and stdout a pipe or buffer: not a terminal.
	cmd.Env = append(os.Environ(), "TRAINYARD_BIN="+harness.Binary(t), "DEMO_KEEP="+keep)
	return cmd
}

func answers(addr string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestDemoStopsWhenNotATerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := demoCmd(ctx, t, "") // not at a terminal: no DEMO_KEEP needed
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "%s", out.String())
	text := out.String()
	require.Contains(t, text, "The job SUCCEEDED.")
	require.Contains(t, text, "everything stops now")
	require.NotContains(t, text, "sign in with this token", "no console address that is about to stop answering")
	m := demoREST.FindStringSubmatch(text)
	require.NotNil(t, m, "the demo printed its REST address: %s", text)
	require.False(t, answers(m[1]), "the server is stopped when the demo exits")
}

func TestDemoKeepsServingUntilInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := demoCmd(ctx, t, "1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())

	// Read until the demo says it keeps running; it then blocks on the server.
	var text strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		text.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "keeps running until Ctrl-C") {
			break
		}
	}
	require.Contains(t, text.String(), "keeps running until Ctrl-C", "%s", text.String())
	require.Contains(t, text.String(), "sign in with this token")
	m := demoREST.FindStringSubmatch(text.String())
	require.NotNil(t, m, "%s", text.String())
	require.True(t, answers(m[1]), "the console's server answers after the demo ends")
	console, err := http.Get(m[1] + "/")
	require.NoError(t, err)
	console.Body.Close()
	require.Equal(t, http.StatusOK, console.StatusCode, "the console's address answers")

	// Ctrl-C: a clean stop, exit 0.
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	for lines.Scan() {
		text.WriteString(lines.Text() + "\n")
	}
	require.NoError(t, cmd.Wait(), "%s", text.String())
	require.Contains(t, text.String(), "Stopping everything the demo started")
	require.NotContains(t, text.String(), "last lines of trainyard dev", "an interrupt is no failure")
	require.False(t, answers(m[1]), "the server is stopped")
}
