package prometheus

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

// EnsureBinary runs build.sh (milliseconds once cached, minutes the first
// time) and returns the path of the prometheus binary. Its progress goes
// to progress (nil: discarded).
func EnsureBinary(ctx context.Context, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	f, err := os.CreateTemp("", "trainyard-prometheus-build-*.sh")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(buildScript); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", f.Name())
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(progress, &stderr)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("prometheus build.sh: %w\n%s", err, tailOf(stderr.String(), 8<<10))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	bin := filepath.Join(strings.TrimSpace(lines[len(lines)-1]), "prometheus")
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("prometheus build.sh printed %q but no executable prometheus is there", filepath.Dir(bin))
	}
	return bin, nil
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
