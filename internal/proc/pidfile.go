package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/internal/wait"
)

// ReadPIDFile reads one pid per line (what a command's `echo $$ >> f`
// wrote); it returns what it could parse.
func ReadPIDFile(path string) []int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		if n, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// WaitPIDFile waits up to within until path lists n pids, and returns them
// as this process sees them: a sandboxed command prints its PID namespace's
// numbering, which HostPID translates (the command's directory is path's).
func WaitPIDFile(ctx context.Context, path string, n int, within time.Duration) ([]int, error) {
	var pids []int
	err := wait.For(ctx, within, 10*time.Millisecond, func(context.Context) error {
		if pids = ReadPIDFile(path); len(pids) < n {
			return fmt.Errorf("%s lists %d of %d pids", path, len(pids), n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting %s: %w", within, err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	for i, pid := range pids {
		if pids[i], err = HostPID(pid, dir); err != nil {
			return nil, err
		}
	}
	return pids, nil
}
