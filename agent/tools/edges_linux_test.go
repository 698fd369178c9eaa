//go:build linux

package tools

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Finding 4: the process that leads a command's group (the lifeline bash)
// carries the command's allowlisted environment, not the worker's; a
// command reading its group leader's /proc environ finds no secret.
func TestGroupLeaderHasTheAllowlistedEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-leader-canary-7f1")
	t.Setenv("TEMPORAL_API_KEY", "temporal-leader-canary-7f1")
	f := newSandboxFixture(t, sandbox.ModeOff, sandbox.Config{})
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{
		"command": "pg=$(ps -o pgid= $$ | tr -d ' '); echo leader=$pg; tr '\\0' '\\n' < /proc/$pg/environ"}))
	if !strings.Contains(out, "exit code: 0\n") || !strings.Contains(out, "PATH=") {
		t.Fatalf("the leader's environment was not read; the test proves nothing: %q", out)
	}
	if strings.Contains(out, "canary") {
		t.Fatalf("the group leader carries a worker secret:\n%s", out)
	}
}

// Finding 5: a FIFO or a socket is listed or refused, never opened, by
// every file tool, whichever way it is named.
func TestSpecialFilesAreNeverOpened(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(syscall.Mkfifo(filepath.Join(dir, "sub", ".gitignore"), 0o644))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(err)
	defer ln.Close()
	must(os.Symlink("fifo", filepath.Join(dir, "link-to-fifo")))
	writeTestFile(t, filepath.Join(dir, "sub", "a.txt"), "needle\n")
	for _, name := range []string{"fifo", "sock", "link-to-fifo"} {
		mustFail(t, call(t, w, "read_file", map[string]any{"path": name}), "not a regular file")
		mustFail(t, call(t, w, "edit_file", map[string]any{"path": name, "old_string": "a", "new_string": "b"}), "not a regular file")
		res := call(t, w, "search_files", map[string]any{"pattern": "x", "path": name})
		if !strings.Contains(res.Output, "No matches") && !strings.Contains(res.Output, "skipped") && !res.Failed {
			t.Errorf("search_files on %s: %+v", name, res)
		}
	}
	if out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle"})); !strings.Contains(out, "sub/a.txt:1:") {
		t.Fatalf("search past special files: %q", out)
	}
	if out := mustOK(t, call(t, w, "list_files", map[string]any{"path": "."})); !strings.Contains(out, "fifo") || !strings.Contains(out, "sock") {
		t.Fatalf("special files are not listed: %q", out)
	}
	if out := mustOK(t, call(t, w, "list_files", map[string]any{"path": "sub"})); !strings.Contains(out, "a.txt") {
		t.Fatalf("listing beside a FIFO .gitignore: %q", out)
	}
}

// In git modes the file tools write nothing under .git, at any depth, by
// any path: a plain one, a nested repository's, or through a symlink.
func TestGitPathsAreRefusedInGitModes(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeOff, sandbox.Config{ProtectGit: true})
	if err := exec.Command("git", "init", "-q", f.dir).Run(); err != nil {
		t.Fatal(err)
	}
	cfgBefore := readTestFile(t, filepath.Join(f.dir, ".git", "config"))
	if err := os.Symlink(".git", filepath.Join(f.dir, "gd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/config", filepath.Join(f.dir, "cfg")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git/config", ".git/hooks/pre-commit", "sub/.git/config", "a/b/.git", ".git", "gd/config", "gd/hooks/x", "cfg", "./sub/../.git/info/attributes"} {
		mustFail(t, call(t, f.w, "write_file", map[string]any{"path": p, "content": "[filter \"x\"]\n"}), "git modes")
	}
	for _, p := range []string{".git/config", "gd/config", "cfg"} {
		mustFail(t, call(t, f.w, "edit_file", map[string]any{"path": p, "old_string": "[core]", "new_string": "[filter]"}), "git modes")
	}
	if got := readTestFile(t, filepath.Join(f.dir, ".git", "config")); got != cfgBefore {
		t.Fatalf(".git/config changed:\n%s", got)
	}
	for _, p := range []string{".git/hooks/pre-commit", "sub", "a", ".git/info/attributes"} {
		if _, err := os.Lstat(filepath.Join(f.dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	mustOK(t, call(t, f.w, "write_file", map[string]any{"path": "src/.gitignore", "content": "x\n"}))
	// Outside git modes .git is the workspace's own business.
	off := newSandboxFixture(t, sandbox.ModeOff, sandbox.Config{})
	mustOK(t, call(t, off.w, "write_file", map[string]any{"path": ".git/info/exclude", "content": "x\n"}))
}

// Under bubblewrap in git modes .git is mounted read-only: history reads
// work, nothing under .git changes, the rest of the workspace is writable.
func TestSandboxMountsGitReadOnly(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetHost, ProtectGit: true})
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = f.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	before := readTestFile(t, filepath.Join(f.dir, ".git", "config"))
	for _, c := range []string{
		"git config core.fsmonitor 'touch /tmp/x'",
		"echo evil >> .git/config",
		"ln -s /etc .git/evil",
		"mkdir -p .git/hooks && echo x > .git/hooks/post-checkout",
		"rm -rf .git/objects",
		"mv .git .git-old",
		"git update-ref refs/heads/x HEAD",
	} {
		out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": c}))
		if strings.HasPrefix(out, "exit code: 0\n") {
			t.Errorf("%q succeeded inside the sandbox: %q", c, out)
		}
	}
	if got := readTestFile(t, filepath.Join(f.dir, ".git", "config")); got != before {
		t.Fatalf(".git/config changed:\n%s", got)
	}
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "git log --format=%s && echo ok > file.txt && git init -q nested && echo nested-ok"}))
	if !strings.Contains(out, "first\n") || !strings.Contains(out, "nested-ok") {
		t.Fatalf("history or the rest of the workspace is not usable: %q", out)
	}
}
