package gitws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Git runs the worker's own git steps. One value serves every round; it holds
// only the policy and the path of an empty hooks directory.
type Git struct {
	cfg         Config
	hooksDir    string
	authorName  string
	authorEmail string
	// dirs spares the safety walks the directories they read unchanged before.
	dirs *dirCache
	// bound holds every git command to RALPH_GIT_MEMORY_MB and Pids.
	bound *bound
	// cacheRoot holds the object caches of campaign steps (cache.go), and
	// scratches what ScratchFrom set up in each step's scratch.
	cacheRoot string
	scratches *sync.Map // dir → *scratchState
	// inBounds spares a tree sum of what an earlier one found within the
	// workspace bounds (treesize.go).
	inBounds *boundedIDs
	// wrote holds the trees of the merges this Git wrote (wrote.go).
	wrote *wroteTrees
	// treeOwner, when set, is the uid and gid commands run as (not the
	// worker's): scratches are then linked from private tree copies
	// (treecopy.go) lent to that uid.
	treeOwner *[2]int
}

// New returns a Git for cfg (already validated). hooksDir is created empty:
// it stands in for every workspace's hooks, so no hook planted in a
// workspace runs with the worker's credentials.
func New(cfg Config, hooksDir string) (*Git, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	name, email, err := ParseAuthor(cfg.Author)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SettingAuthor, err)
	}
	if err := checkGitVersion(); err != nil {
		return nil, fmt.Errorf("%s: %w", SettingMode, err)
	}
	if err := os.MkdirAll(hooksDir, 0o700); err != nil {
		return nil, fmt.Errorf("create the empty git hooks directory: %w", err)
	}
	entries, err := os.ReadDir(hooksDir)
	if err != nil {
		return nil, fmt.Errorf("read the git hooks directory: %w", err)
	}
	if len(entries) != 0 {
		return nil, fmt.Errorf("the git hooks directory %s must be empty", hooksDir)
	}
	g := &Git{cfg: cfg, hooksDir: hooksDir, authorName: name, authorEmail: email, dirs: newDirCache(defaultDirCacheBytes),
		bound: newBound(cfg.memoryMB()), cacheRoot: filepath.Join(filepath.Dir(hooksDir), cacheDirName), scratches: &sync.Map{},
		inBounds: &boundedIDs{}, wrote: &wroteTrees{}}
	// What a killed worker left (tree copies half written) and what no
	// step used for long goes at start, as the sandbox's fresh homes do.
	g.sweepIdle(treeCopyIdle, cacheIdle)
	return g, nil
}

// Config is the policy this Git runs.
func (g *Git) Config() Config { return g.cfg }

// overrides are set on every command line. Command-line values win over the
// workspace's .git/config, which the model can write; the keys whose
// programs cannot be overridden this way are refused by checkRepoConfig.
func (g *Git) overrides() []string {
	return []string{
		"-c", "core.hooksPath=" + g.hooksDir,
		"-c", "core.fsmonitor=false",
		// Never into a nested repository or submodule: its config, hooks
		// and filters are the model's (see nestedRepos for untracked ones).
		"-c", "submodule.recurse=false",
		"-c", "diff.ignoreSubmodules=all",
		"-c", "fetch.recurseSubmodules=false",
		"-c", "push.recurseSubmodules=no",
		"-c", "commit.gpgSign=false",
		"-c", "core.quotePath=false",
		"-c", "gc.auto=0",
		"-c", "maintenance.auto=false",
		// No conversion from configuration either (the attributes that
		// could ask for one are neutralized: see NeutralAttributes), and
		// the default size above which a file is binary to diff: the
		// workspace's config could lower it to hide every line changed.
		"-c", "core.autocrlf=false",
		"-c", "core.eol=lf",
		"-c", "core.safecrlf=false",
		"-c", "core.bigFileThreshold=512m",
	}
}

// cmdOpts are the extras of one command.
type cmdOpts struct {
	stdin string
	env   []string
	// stdout, when set, takes the output as it comes (run then returns
	// none): a reader that stops early stops git.
	stdout io.Writer
}

// gitError is a failed git command; its text never holds credentials.
type gitError struct {
	args     string
	exitCode int
	output   string
}

func (e *gitError) Error() string {
	out := strings.TrimSpace(e.output)
	if len(out) > 2000 {
		out = "…" + out[len(out)-2000:]
	}
	return fmt.Sprintf("git %s: exit %d: %s", e.args, e.exitCode, out)
}

// run runs git in dir and returns its stdout. Discovery stops at dir (a
// workspace root inside some other repository never reaches that one), the
// whole process group is killed on timeout or cancel, and nothing prompts.
// The repository reads the worker's attributes, never the tree's
// (neutralizeAttributes), before git starts.
func (g *Git) run(parent context.Context, dir string, opts cmdOpts, args ...string) (out string, err error) {
	var cpu time.Duration // the command's and its children's, for Trace
	if tracer.Load() != nil {
		start := time.Now()
		defer func() { traced(dir, redactArgs(args, g.cfg.Remote), time.Since(start), cpu, err) }()
	}
	if err := neutralizeAttributes(dir); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(parent, CommandTimeout)
	defer cancel()
	// The work tree may belong to the sandbox's uid (commands run as it;
	// see internal/sandbox), which git would call dubious ownership. Only
	// this repository is trusted, and discovery stops at dir.
	full := append(append(g.overrides(), "-c", "safe.directory="+dir), args...)
	shown := redactText(strings.Join(args, " "), g.cfg.Remote)
	cmd, grp, err := g.bound.command(ctx, full)
	if err != nil {
		return "", fmt.Errorf("git %s: %w", shown, err)
	}
	cmd.Dir = dir
	cmd.Env = append(stepEnv(os.Environ(), g.cfg.Mode == ModeRemote),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"GIT_PAGER=cat",
		"GIT_EDITOR=false",
		"LC_ALL=C",
	)
	cmd.Env = append(cmd.Env, opts.env...)
	if opts.stdin != "" {
		cmd.Stdin = strings.NewReader(opts.stdin)
	}
	var stdout bytes.Buffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if opts.stdout != nil {
		cmd.Stdout = opts.stdout
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = g.bound.run(cmd, grp)
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if cmd.Process != nil {
		// Helpers (ssh, credential helpers) git left behind go with it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	oom := g.bound.end(grp, err != nil)
	if err != nil {
		if parent.Err() != nil {
			return "", fmt.Errorf("git %s: %w", shown, parent.Err())
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("git %s: killed after %s: %w", shown, CommandTimeout, ctx.Err())
		}
		if oom {
			return "", &MemoryBoundError{Args: shown, LimitMB: g.bound.mem >> 20}
		}
		code := -1
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else {
			return "", fmt.Errorf("git %s: %s", shown, redactText(err.Error(), g.cfg.Remote))
		}
		gerr := &gitError{args: shown, exitCode: code, output: redactText(stderr.String()+stdout.String(), g.cfg.Remote)}
		g.noteDamage(dir, gerr)
		return stdout.String(), gerr
	}
	return stdout.String(), nil
}

// stepEnv is the environment of a git step, built from an allowlist: the
// model API key, TEMPORAL_* secrets and every other worker variable stay
// out of a program git might run, and no inherited GIT_* variable points a
// step at another repository, index or configuration. The worker's git
// configuration comes from HOME; SSH_AUTH_SOCK carries its SSH identity to
// the remote (remote mode only). The GIT_* a step needs are appended by run.
func stepEnv(environ []string, remote bool) []string {
	out := make([]string, 0, 8)
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
		case name == "PATH", name == "HOME", name == "USER", name == "LANG", name == "TZ",
			strings.HasPrefix(name, "LC_"), remote && name == "SSH_AUTH_SOCK":
			out = append(out, kv)
		}
	}
	return out
}

// tailBuffer keeps the last outputCap bytes of a command's messages: git
// ends with the line that says what failed.
type tailBuffer struct{ buf []byte }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*outputCap {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-outputCap:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	if len(b.buf) > outputCap {
		return string(b.buf[len(b.buf)-outputCap:])
	}
	return string(b.buf)
}
