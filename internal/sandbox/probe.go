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
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/deathsig"
	"github.com/ralph-temporal/ralph/internal/netproxy"
)

// BwrapProgram is the bubblewrap binary looked up on PATH.
const BwrapProgram = "bwrap"

// ProbeTimeout bounds the start-up check that bubblewrap works.
const ProbeTimeout = 10 * time.Second

// prepareJail builds what every command's jail needs and then probes it.
func (s *Sandbox) prepareJail(ctx context.Context) error {
	var err error
	if s.seccomp, err = seccompProgram(); err != nil {
		return fmt.Errorf("the seccomp filter: %w", err)
	}
	if err := s.reachable(s.share...); err != nil {
		return err
	}
	return s.probe(ctx)
}

// probe runs a real command under the same mounts, namespaces, uid, filter,
// cgroup and network every command gets, in a scratch workspace and home:
// first a shell that writes the workspace and (in proxy mode) reaches the
// proxy's port, then the worker's own binary as jailCheck, which tries
// what a command must not be able to do. The error names the check that
// failed (bwrap's own message names a missing permission).
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
		if err := s.ownHome(d); err != nil {
			return err
		}
	}
	if err := s.reachable(scratch); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	script := "touch probe && test -w /tmp"
	if s.network == NetProxy {
		script += fmt.Sprintf(" && : </dev/tcp/127.0.0.1/%d", netproxy.Port)
	}
	if out, err := s.probeRun(ctx, ws, home, nil, []string{"bash", "-c", script}); err != nil {
		return fmt.Errorf("%s probe: %v: %s", s.bwrap, err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "probe")); err != nil {
		return fmt.Errorf("%s probe: the workspace is not writable inside the sandbox", s.bwrap)
	}
	return s.probeJail(ctx, ws, home)
}

// probeJail runs jailCheck inside the sandbox through a descriptor on the
// worker's binary (its path may be hidden there).
func (s *Sandbox) probeJail(ctx context.Context, ws, home string) error {
	exePath, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the worker binary for the jail check: %w", err)
	}
	exe, err := os.Open(exePath)
	if err != nil {
		return fmt.Errorf("opening the worker binary for the jail check: %w", err)
	}
	defer exe.Close()
	keyring := strings.TrimSpace(fmt.Sprint(sessionKeyring()))
	out, err := s.probeRun(ctx, ws, home, exe, []string{"/proc/self/fd/3", jailCheckArg, keyring})
	if err != nil {
		if msg, ok := strings.CutPrefix(out, jailFailPrefix); ok {
			return fmt.Errorf("jail check failed: %s", msg)
		}
		return fmt.Errorf("%s jail check: %v: %s", s.bwrap, err, out)
	}
	return nil
}

// probeRun runs argv as a command runs (fd 3 is exe when given) and returns
// its output.
func (s *Sandbox) probeRun(ctx context.Context, ws, home string, exe *os.File, argv []string) (string, error) {
	run, err := s.Prepare()
	if err != nil {
		return "", err
	}
	var files []*os.File
	if exe != nil {
		files = append(files, exe)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		run.Finish()
		return "", err
	}
	defer infoR.Close()
	infoFD := 3 + len(files)
	files = append(files, infoW)
	name, args := s.CommandFor(run, ws, home, infoFD, 3+len(files), ReadOnly{}, argv)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = s.Env(os.Environ(), home)
	cmd.ExtraFiles = append(files, run.Files()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	run.SysProcAttr(cmd.SysProcAttr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = deathsig.Run(func() error {
		err := cmd.Start()
		infoW.Close()
		if err != nil {
			return err
		}
		run.Started()
		run.Entered(probeNSInit(infoR, cmd.Process.Pid))
		return cmd.Wait()
	})
	run.Finish()
	msg := strings.TrimSpace(out.String())
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg = "timed out after " + ProbeTimeout.String()
	}
	return msg, err
}
