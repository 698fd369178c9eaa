package adversarial

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// A workspace the worker cloned as root is workable by the commands' uid,
// and the worker's (and an operator's) git keeps working on what the uid wrote.
func TestARootCloneIsWorkableAndGitStillTrustsIt(t *testing.T) {
	j := New(t, func(c *sandbox.Config) { c.ProtectGit = true })
	testkit.WriteFiles(t, j.Dir, map[string]string{"main.go": "package main\n", "pkg/lib.go": "package pkg\n"})
	testkit.Git(t, j.Dir, "init", "-q")
	testkit.Git(t, j.Dir, "add", "-A")
	testkit.Git(t, j.Dir, "commit", "-qm", "clone")
	res := j.Run("echo '// edited' >> main.go && echo new > pkg/new.go && git status --short && git log --oneline | wc -l; touch .git/planted 2>&1")
	if res.ExitCode != 0 && !strings.Contains(res.Output, "Read-only") {
		t.Fatalf("the uid could not work the clone:\n%s", res.Output)
	}
	for _, want := range []string{"M main.go", "?? pkg/new.go"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("git inside the sandbox does not show %q:\n%s", want, res.Output)
		}
	}
	if got := ReadHost(t, filepath.Join(j.Dir, "main.go")); got != "package main\n// edited\n" {
		t.Errorf("main.go = %q", got)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, ".git", "planted")); err == nil {
		t.Errorf("the command wrote .git")
	}
	// The host's git, as root, still trusts the repository.
	if got := testkit.Git(t, j.Dir, "status", "--short"); !strings.Contains(got, "M main.go") {
		t.Errorf("git status on the host: %q", got)
	}
}
