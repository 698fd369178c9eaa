package gitws

import (
	"context"
	"errors"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookScript records that it ran by writing a file outside the workspace.
func hookScript(t *testing.T, dir, name, marker string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho ran >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestWorkspaceHooksNeverRun(t *testing.T) {
	bare := bareRemote(t)
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	marker := filepath.Join(t.TempDir(), "hook-ran")
	// The session plants hooks that the checkpoint's own commands would
	// trigger, in .git/hooks and in a core.hooksPath of its choosing.
	for _, hook := range []string{"reference-transaction", "post-index-change", "pre-push", "pre-commit", "post-checkout"} {
		hookScript(t, dir, ".git/hooks/"+hook, marker)
		hookScript(t, dir, ".githooks/"+hook, marker)
	}
	testkit.Git(t, dir, "config", "core.hooksPath", ".githooks")
	write(t, dir, "f.txt", "x\n")
	checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f"))
	prepare(t, g, dir, round(2, 1))
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a workspace hook ran during a checkpoint step")
	}
	// The hooks are real: a person's plain git runs them.
	testkit.Git(t, dir, "update-ref", "refs/heads/probe", "HEAD")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the planted hook does not run even for plain git; the test proves nothing")
	}
}

func TestWorkspaceConfigThatRunsProgramsIsRefused(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "program-ran")
	cases := []struct{ key, value string }{
		{"filter.evil.clean", "sh -c 'echo ran >> " + marker + "; cat'"},
		{"core.sshCommand", "sh -c 'echo ran >> " + marker + "'"},
		{"include.path", "/etc/gitconfig-evil"},
		{"credential.helper", "!echo ran >> " + marker},
		{"url.https://evil.example/.insteadOf", "https://example.com/"},
		{"core.worktree", "/"},
		{"remote.origin.uploadpack", "sh -c 'echo ran >> " + marker + "'"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			g := newGit(t, ModeLocal, "")
			dir := workspace(t, "ws")
			p := prepare(t, g, dir, round(1, 1))
			testkit.Git(t, dir, "config", c.key, c.value)
			write(t, dir, ".gitattributes", "* filter=evil\n")
			write(t, dir, "f.txt", "x\n")
			_, _, err := g.Checkpoint(context.Background(), dir, p, round(1, 1), handoff("continue", "f"))
			if !errors.Is(err, ErrUnsafeRepo) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.key)) {
				t.Fatalf("checkpoint = %v, want ErrUnsafeRepo naming %s", err, c.key)
			}
			if _, err := g.Prepare(context.Background(), dir, round(2, 1)); !errors.Is(err, ErrUnsafeRepo) {
				t.Fatalf("prepare = %v, want ErrUnsafeRepo", err)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a program named by the workspace's config ran")
	}
	// Ordinary settings pass.
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	testkit.Git(t, dir, "config", "user.name", "Someone")
	testkit.Git(t, dir, "config", "core.autocrlf", "false")
	testkit.Git(t, dir, "config", "remote.origin.url", "https://example.com/x.git")
	write(t, dir, "f.txt", "x\n")
	checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f"))
}

func TestRepositoryLayoutsThatPointElsewhereAreRefused(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	other := workspace(t, "other")
	testkit.Git(t, other, "init", "-q")
	// A gitdir file and a symlinked .git both let the workspace choose the
	// repository the worker's git writes.
	dir := workspace(t, "ws")
	write(t, dir, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
	if _, err := g.Prepare(context.Background(), dir, round(1, 1)); !errors.Is(err, ErrUnsafeRepo) {
		t.Fatalf("gitdir file: %v", err)
	}
	dir2 := workspace(t, "ws2")
	if err := os.Symlink(filepath.Join(other, ".git"), filepath.Join(dir2, ".git")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Prepare(context.Background(), dir2, round(1, 1)); !errors.Is(err, ErrUnsafeRepo) {
		t.Fatalf("symlinked .git: %v", err)
	}
}

func TestValidateNamesTheSetting(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: "on", Author: DefaultAuthor}, "RALPH_GIT must be"},
		{Config{Mode: ModeRemote, Author: DefaultAuthor}, "RALPH_GIT_REMOTE"},
		{Config{Mode: ModeLocal, Remote: "/srv/x.git", Author: DefaultAuthor}, "RALPH_GIT_REMOTE is set"},
		{Config{Mode: ModeLocal, Author: "ralph@localhost"}, "RALPH_GIT_AUTHOR"},
		{Config{Mode: ModeLocal, Author: "Ralph"}, "RALPH_GIT_AUTHOR"},
		{Config{Mode: ModeLocal, Author: ""}, "RALPH_GIT_AUTHOR"},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want it to name %q", c.cfg, err, c.want)
		}
	}
	for _, ok := range []Config{DefaultConfig(), {Mode: ModeLocal, Author: "A B <a@b.c>"}, {Mode: ModeRemote, Remote: "/srv/x.git", Author: DefaultAuthor}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if err := (Config{Mode: ModeLocal, Author: DefaultAuthor}).Validate(); err == nil || !strings.Contains(err.Error(), "git binary on PATH") {
		t.Errorf("without git on PATH: %v", err)
	}
}

func TestRefComponent(t *testing.T) {
	if refComponent("fix-tests") != "fix-tests" {
		t.Error("a safe id changed")
	}
	// One-to-one: ids that map to the same readable form keep apart, and
	// every result is a ref component git accepts.
	seen := map[string]string{}
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	prepare(t, g, dir, round(1, 1))
	ids := []string{"a/b c", "a-b-c", "a-b c", "..x", "-.x", "x.lock", "x.lock-", ".hidden", "hidden", "a@{1}", "a--1-", "", "-",
		"wf-" + refComponent("wf/1")[3:], "wf/1", strings.Repeat("x", 300), strings.Repeat("x", 300) + "y"}
	for _, id := range ids {
		c := refComponent(id)
		if other, dup := seen[c]; dup {
			t.Errorf("%q and %q share the ref component %q", id, other, c)
		}
		seen[c] = id
		if len(c) > maxRefComponentBytes {
			t.Errorf("refComponent(%q) is %d bytes", id, len(c))
		}
		testkit.Git(t, dir, "check-ref-format", AbandonedRef(id, 1, 1))
	}
}
