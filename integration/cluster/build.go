package cluster

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildScript is build.sh, embedded so that Start works from any package's
// test binary, whatever its working directory.
//
//go:embed build.sh
var buildScript string

// Binaries are the programs build.sh provides in its bin directory.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// EnsureBinaries runs build.sh (a no-op taking milliseconds once everything
// is cached, minutes the first time) and returns the directory holding
// Binaries. Its progress goes to progress (nil: discarded).
func EnsureBinaries(ctx context.Context, progress io.Writer) (string, error) {
	dir, err := RunBuildScript(ctx, "build.sh", buildScript, progress)
	if err != nil {
		return "", err
	}
	for _, b := range Binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("build.sh printed %q but %s is missing there", dir, b)
		}
	}
	return dir, nil
}

// RunBuildScript runs a build script (an embedded build.sh: this one, or
// integration/prometheus's) with its progress on stderr going to progress
// (nil: discarded), and returns the last line it printed on stdout: the
// directory of what it built. A failure quotes the last 8 KiB of stderr;
// name names the script in it.
func RunBuildScript(ctx context.Context, name, script string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	// Run from a file, not `bash -s`: a build step that read stdin would eat the script.
	f, err := os.CreateTemp("", "trainyard-build-*.sh")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(script); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", f.Name())
	cmd.Stdout = &stdout
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(progress, &tail{buf: &stderr, max: 8 << 10})
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", name, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	buf *bytes.Buffer
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}
