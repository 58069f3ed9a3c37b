package prometheus

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/trainyard/trainyard/integration/cluster"
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
	dir, err := cluster.RunBuildScript(ctx, "prometheus build.sh", buildScript, progress)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "prometheus")
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("prometheus build.sh printed %q but no executable prometheus is there", dir)
	}
	return bin, nil
}
