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

// plantNestedRepo makes dir/sub a repository of its own whose config runs a
// smudge filter and whose hooks run on checkout, each appending the
// environment it got to canary; the outer .gitmodules and .git/config ask
// for recursion into it. It returns the nested repository's commit.
func plantNestedRepo(t *testing.T, dir, canary string) string {
	t.Helper()
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, sub, "init", "-q")
	write(t, sub, "a.txt", "nested\n")
	write(t, sub, ".gitattributes", "* filter=evil\n")
	testkit.Git(t, sub, "add", "-A")
	testkit.Git(t, sub, "commit", "-q", "-m", "nested")
	prog := "sh -c 'env >> " + canary + "; cat'"
	testkit.Git(t, sub, "config", "filter.evil.smudge", prog)
	testkit.Git(t, sub, "config", "filter.evil.clean", prog)
	testkit.Git(t, sub, "config", "core.fsmonitor", "sh -c 'env >> "+canary+"'")
	for _, hook := range []string{"post-checkout", "reference-transaction", "post-index-change"} {
		hookScript(t, sub, ".git/hooks/"+hook, canary)
	}
	write(t, dir, ".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n")
	testkit.Git(t, dir, "config", "submodule.recurse", "true")
	testkit.Git(t, dir, "config", "submodule.sub.url", sub)
	testkit.Git(t, dir, "config", "submodule.sub.active", "true")
	return testkit.Git(t, sub, "rev-parse", "HEAD")
}

func noCanary(t *testing.T, canary string) {
	t.Helper()
	if data, err := os.ReadFile(canary); err == nil {
		t.Fatalf("a program planted in a nested repository ran during a worker's git step, with:\n%s", data)
	}
}

// Finding 1 (local mode, across a retried attempt): the worker's git never
// enters a nested repository, whatever the outer config and .gitmodules ask.
func TestNestedRepositoryIsNeverEnteredLocal(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-canary-secret")
	canary := filepath.Join(t.TempDir(), "canary")
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	plantNestedRepo(t, dir, canary)
	write(t, dir, "top.txt", "top\n")
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "nested"))
	if got := testkit.Git(t, dir, "ls-tree", "--name-only", cp.Commit); strings.Contains(got, "sub") {
		t.Fatalf("the checkpoint recorded the nested repository: %q", got)
	}
	// Round 2's lost attempt changes the nested work tree; the retry saves
	// leftovers and resets, which with recursion would check sub out again.
	prepare(t, g, dir, round(2, 1))
	write(t, dir, "sub/a.txt", "changed by the lost attempt\n")
	write(t, dir, "left.txt", "leftover\n")
	p2 := prepare(t, g, dir, round(2, 2))
	if p2.AbandonedCommit == "" || exists(dir, "left.txt") {
		t.Fatalf("the retry did not save and reset: %+v", p2)
	}
	if _, err := g.WorkTree(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	checkpoint(t, g, dir, p2, round(2, 2), handoff("continue", "again"))
	noCanary(t, canary)
	// The nested repository is left as the session made it.
	if data, _ := os.ReadFile(filepath.Join(dir, "sub/a.txt")); string(data) != "changed by the lost attempt\n" {
		t.Fatalf("the worker's step changed the nested work tree: %q", data)
	}
	// The plant is real: the same tree with the nested repository recorded
	// (as the old steps did) makes plain git recursing run its filter.
	testkit.Git(t, dir, "add", "sub")
	testkit.Git(t, dir, "commit", "-q", "-m", "person records the gitlink")
	write(t, dir, "sub/a.txt", "changed again\n")
	testkit.Git(t, dir, "reset", "-q", "--hard", "HEAD")
	if _, err := os.Stat(canary); err != nil {
		t.Fatal("the planted filter does not run even for plain recursing git; the test proves nothing")
	}
}

// Finding 1 (remote mode, every round): the same plant in the worker's
// clone is never entered by prepare, checkpoint or push.
func TestNestedRepositoryIsNeverEnteredRemote(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-canary-secret")
	canary := filepath.Join(t.TempDir(), "canary")
	bare := bareRemote(t)
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	plantNestedRepo(t, dir, canary)
	// plantNestedRepo's submodule config is refused in remote mode only
	// for remote.* keys; submodule.* stays allowed and forced off.
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "nested"))
	if got := testkit.Git(t, bare, "ls-tree", "--name-only", cp.Commit); strings.Contains(got, "sub") {
		t.Fatalf("the pushed checkpoint recorded the nested repository: %q", got)
	}
	for r := 2; r <= 3; r++ {
		write(t, dir, "sub/a.txt", "changed in round "+string(rune('0'+r))+"\n")
		p = prepare(t, g, dir, round(r, 1))
		checkpoint(t, g, dir, p, round(r, 1), handoff("continue", "again"))
	}
	prepare(t, g, dir, round(4, 2)) // a retried attempt
	noCanary(t, canary)
}

// The environment of every git step is allowlisted: a program the worker's
// own git configuration runs (here its SSH command) sees no worker secret.
func TestGitStepsGetAnAllowlistedEnvironment(t *testing.T) {
	home := t.TempDir()
	envFile := filepath.Join(t.TempDir(), "env")
	t.Setenv("HOME", home)
	t.Setenv("OPENAI_API_KEY", "sk-canary-secret")
	t.Setenv("TEMPORAL_API_KEY", "temporal-canary-secret")
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
	t.Setenv("GIT_DIR", "/elsewhere")
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"),
		[]byte("[core]\n\tsshCommand = \"sh -c 'env > "+envFile+"; exit 1' --\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGit(t, ModeRemote, "ssh://git.invalid/repo.git")
	if _, err := g.Prepare(context.Background(), workspace(t, "ws"), round(1, 1)); err == nil {
		t.Fatal("prepare against the failing SSH command succeeded")
	}
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("the worker's SSH command did not run: %v", err)
	}
	env := string(data)
	for _, secret := range []string{"sk-canary-secret", "temporal-canary-secret", "OPENAI_API_KEY", "/elsewhere"} {
		if strings.Contains(env, secret) {
			t.Fatalf("a git step's program got %q:\n%s", secret, env)
		}
	}
	for _, want := range []string{"HOME=" + home, "SSH_AUTH_SOCK=/tmp/agent.sock", "GIT_TERMINAL_PROMPT=0"} {
		if !strings.Contains(env, want) {
			t.Fatalf("a git step's program lacks %s:\n%s", want, env)
		}
	}
	if stepEnvHas(stepEnv([]string{"SSH_AUTH_SOCK=/s", "PATH=/bin"}, false), "SSH_AUTH_SOCK") {
		t.Fatal("SSH_AUTH_SOCK passed in local mode")
	}
}

func stepEnvHas(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// Finding 2: links inside .git (to another workspace's objects and refs, to
// a host file from logs/HEAD) and an alternates file are refused before any
// step reads or writes through them.
func TestLinksInsideGitAreRefused(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	other := workspace(t, "other")
	po := prepare(t, g, other, round(1, 1))
	write(t, other, "secret.txt", "other workspace\n")
	checkpoint(t, g, other, po, round(1, 1), handoff("continue", "other"))
	otherHead := testkit.Git(t, other, "rev-parse", "HEAD")
	hostFile := filepath.Join(t.TempDir(), "host-file")
	write(t, filepath.Dir(hostFile), "host-file", "host\n")

	plants := map[string]func(dir string){
		"objects and refs": func(dir string) {
			for _, name := range []string{"objects", "refs"} {
				must(t, os.RemoveAll(filepath.Join(dir, ".git", name)))
				must(t, os.Symlink(filepath.Join(other, ".git", name), filepath.Join(dir, ".git", name)))
			}
		},
		"logs/HEAD": func(dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, ".git", "logs"), 0o755))
			must(t, os.Remove(filepath.Join(dir, ".git", "logs", "HEAD")))
			must(t, os.Symlink(hostFile, filepath.Join(dir, ".git", "logs", "HEAD")))
		},
		"a loose ref": func(dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, ".git", "refs", "heads"), 0o755))
			must(t, os.Symlink(filepath.Join(other, ".git", "refs", "heads", "master"), filepath.Join(dir, ".git", "refs", "heads", "x")))
		},
		"alternates": func(dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, ".git", "objects", "info"), 0o755))
			write(t, dir, ".git/objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
		},
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			dir := workspace(t, "ws")
			p := prepare(t, g, dir, round(1, 1))
			write(t, dir, "f.txt", "x\n")
			checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f"))
			p = prepare(t, g, dir, round(2, 1))
			plant(dir)
			write(t, dir, "g.txt", "y\n")
			if _, _, err := g.Checkpoint(context.Background(), dir, p, round(2, 1), handoff("continue", "g")); !errors.Is(err, ErrUnsafeRepo) {
				t.Fatalf("checkpoint = %v, want ErrUnsafeRepo", err)
			}
			if _, err := g.Prepare(context.Background(), dir, round(2, 2)); !errors.Is(err, ErrUnsafeRepo) {
				t.Fatalf("retried prepare = %v, want ErrUnsafeRepo", err)
			}
			if got := testkit.Git(t, other, "rev-parse", "HEAD"); got != otherHead {
				t.Fatalf("the other workspace's branch moved: %s -> %s", otherHead, got)
			}
			if data, _ := os.ReadFile(hostFile); string(data) != "host\n" {
				t.Fatalf("the host file behind the link was written: %q", data)
			}
		})
	}
}

// Files the worker writes under .git itself never follow a link.
func TestWorkerFilesUnderGitFollowNoLink(t *testing.T) {
	dir := workspace(t, "ws")
	must(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, filepath.Dir(outside), "outside", "keep\n")
	must(t, os.Symlink(outside, filepath.Join(dir, ".git", attemptMarker)))
	if err := writeMarker(dir, round(1, 1)); err == nil {
		t.Fatal("the marker was written through a link")
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep\n" {
		t.Fatalf("the link's target was written: %q", data)
	}
	must(t, os.Symlink(outside, filepath.Join(dir, ".git", "index")))
	if err := copyIndex(dir, filepath.Join(t.TempDir(), "copy")); err == nil {
		t.Fatal("the index was read through a link")
	}
}

// Finding 2 (remote redirect): a remote entry named like RALPH_GIT_REMOTE
// (or any remote) in the clone's config is refused; the worker's URL is
// the one on the command line.
func TestWorkspaceRemoteNeverRedirects(t *testing.T) {
	bare, decoy := bareRemote(t), bareRemote(t)
	decoyMain := testkit.Git(t, decoy, "rev-parse", "main")
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	testkit.Git(t, dir, "config", "remote."+bare+".url", decoy)
	write(t, dir, "f.txt", "x\n")
	if _, _, err := g.Checkpoint(context.Background(), dir, p, round(1, 1), handoff("continue", "f")); !errors.Is(err, ErrUnsafeRepo) || !strings.Contains(err.Error(), "RALPH_GIT_REMOTE") {
		t.Fatalf("checkpoint = %v, want ErrUnsafeRepo naming RALPH_GIT_REMOTE", err)
	}
	if _, err := g.Prepare(context.Background(), dir, round(1, 2)); !errors.Is(err, ErrUnsafeRepo) {
		t.Fatalf("prepare = %v", err)
	}
	testkit.Git(t, dir, "config", "--remove-section", "remote."+bare)
	must(t, os.MkdirAll(filepath.Join(dir, ".git", "remotes"), 0o755))
	if _, err := g.Prepare(context.Background(), dir, round(1, 2)); !errors.Is(err, ErrUnsafeRepo) {
		t.Fatalf("prepare with .git/remotes = %v", err)
	}
	if out := testkit.Git(t, decoy, "for-each-ref", "--format=%(refname)"); strings.Contains(out, "ralph/") || testkit.Git(t, decoy, "rev-parse", "main") != decoyMain {
		t.Fatalf("the decoy remote was written: %s", out)
	}
	// Local mode never talks to a remote: a person's origin stays allowed.
	gl := newGit(t, ModeLocal, "")
	ld := workspace(t, "local")
	lp := prepare(t, gl, ld, round(1, 1))
	testkit.Git(t, ld, "config", "remote.origin.url", decoy)
	checkpoint(t, gl, ld, lp, round(1, 1), handoff("continue", "f"))
}

// A gitdir file below the root (pointing at another workspace) is opaque:
// nothing of the other repository enters the checkpoint.
func TestNestedGitdirFileIsOpaque(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	other := workspace(t, "other")
	po := prepare(t, g, other, round(1, 1))
	write(t, other, "secret.txt", "other\n")
	checkpoint(t, g, other, po, round(1, 1), handoff("continue", "o"))
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, "d/.git", "gitdir: "+filepath.Join(other, ".git")+"\n")
	write(t, dir, "d/f.txt", "x\n")
	write(t, dir, "top.txt", "x\n")
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f"))
	if got := testkit.Git(t, dir, "ls-tree", "-r", cp.Commit); strings.Contains(got, "d") && strings.Contains(got, "commit") {
		t.Fatalf("the nested gitdir file became a gitlink: %s", got)
	}
	nested, err := nestedRepos(g.dirs, dir)
	if err != nil || len(nested) != 1 || nested[0] != "d" {
		t.Fatalf("nestedRepos = %v, %v", nested, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
