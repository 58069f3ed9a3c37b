package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RunDir is where `localcluster up` keeps the state of the cluster called
// name: $TRAINYARD_CACHE/cluster/run/<name>, TRAINYARD_CACHE defaulting to
// ~/.cache/trainyard (the cache build.sh uses too).
func RunDir(name string) string {
	cache := os.Getenv("TRAINYARD_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		cache = filepath.Join(home, ".cache", "trainyard")
	}
	return filepath.Join(cache, "cluster", "run", name)
}

// Up makes sure a detached cluster runs with its state in dir and returns it
// with started=false when one was already up. State left by a crash (a
// process gone, or a start that never became ready) is stopped and removed
// first. opts.StateDir, Detach and KeepState are set by Up.
func Up(ctx context.Context, dir string, opts Options) (c *Cluster, started bool, err error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, false, err
	}
	defer unlock()

	s, err := ReadState(dir)
	switch {
	case err == nil:
		if s.Ready && len(s.Alive()) == len(s.Processes) {
			if c, err := Attach(ctx, s.Kubeconfig); err == nil {
				c.StateDir = dir
				return c, false, nil
			}
		}
		fmt.Fprintf(progress, "cluster: %s holds a dead or half-started cluster: cleaning up\n", dir)
		if err := StopDir(dir, false); err != nil {
			return nil, false, fmt.Errorf("clean up stale cluster in %s: %w", dir, err)
		}
	case errors.Is(err, os.ErrNotExist):
		// Leftovers without a state file (a start killed before it wrote one) hold no process.
		if err := os.RemoveAll(dir); err != nil {
			return nil, false, err
		}
	default:
		return nil, false, err
	}

	opts.StateDir, opts.Detach, opts.KeepState = dir, true, true
	c, err = StartLocal(ctx, opts)
	if err != nil {
		return nil, false, err
	}
	return c, true, nil
}

// Down stops the cluster whose state is in dir (exactly the processes it
// recorded), checks they and their ports are gone, and removes dir. A dir
// without a cluster is not an error.
func Down(dir string) error {
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	// The lock file stays: removing it under a waiting `up` would let two runs in.
	return StopDir(dir, false)
}
