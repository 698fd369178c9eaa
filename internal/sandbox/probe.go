package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/internal/netproxy"
)

// BwrapProgram is the bubblewrap binary looked up on PATH.
const BwrapProgram = "bwrap"

// ProbeTimeout bounds the start-up check that bubblewrap works.
const ProbeTimeout = 10 * time.Second

// probe runs `bash -c true` under the same mounts and namespaces every
// command gets, in a scratch workspace and home, and reports why it failed
// (bwrap's own message names the missing permission).
func (s *Sandbox) probe(ctx context.Context) error {
	path, err := exec.LookPath(BwrapProgram)
	if err != nil {
		return fmt.Errorf("%s is not installed or not on PATH (Debian package bubblewrap): %w", BwrapProgram, err)
	}
	if s.bwrap, err = filepath.Abs(path); err != nil {
		return fmt.Errorf("locating %s: %w", BwrapProgram, err)
	}
	scratch, err := os.MkdirTemp("", "ralph-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("creating the probe directory: %w", err)
	}
	defer os.RemoveAll(scratch)
	ws, home := filepath.Join(scratch, "workspace"), filepath.Join(scratch, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, homeDirPerm); err != nil {
			return fmt.Errorf("creating the probe directory: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	// The probe goes the way every command goes: its cgroup, and in proxy
	// mode the helper that opens the proxy's port inside the namespace.
	script := "touch probe && test -w /tmp"
	if s.network == NetProxy {
		script += fmt.Sprintf(" && : </dev/tcp/127.0.0.1/%d", netproxy.Port)
	}
	run, err := s.Prepare()
	if err != nil {
		return fmt.Errorf("%s probe: %w", s.bwrap, err)
	}
	name, args := s.CommandFor(run, ws, home, -1, 3, ReadOnly{}, []string{"bash", "-c", script})
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = s.Env(os.Environ(), home)
	cmd.ExtraFiles = run.Files()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Start()
	if err == nil {
		run.Started()
		err = cmd.Wait()
	}
	run.Finish()
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = "timed out after " + ProbeTimeout.String()
		}
		return fmt.Errorf("%s probe: %v: %s", s.bwrap, err, msg)
	}
	if _, err := os.Stat(filepath.Join(ws, "probe")); err != nil {
		return fmt.Errorf("%s probe: the workspace is not writable inside the sandbox", s.bwrap)
	}
	return nil
}
