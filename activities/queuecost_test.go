package activities_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// The campaign steps' scratch repositories come from the worker's object
// cache (internal/gitws/cache.go): these tests hold them, with real git on
// a remote-mode worker, to what a fresh clone gave.

// remoteCampaign is a remote-mode worker on a bare repository whose main
// holds base.txt, and the test's own clone of it.
type remoteCampaign struct {
	f    *fixture
	bare string
	work string
	base string
}

func newRemoteCampaign(t *testing.T) *remoteCampaign {
	t.Helper()
	dir := t.TempDir()
	r := &remoteCampaign{bare: filepath.Join(dir, "remote.git"), work: filepath.Join(dir, "work")}
	gitSetup(t, dir, "init", "-q", "--bare", "-b", "main", r.bare)
	gitSetup(t, dir, "init", "-q", "-b", "main", r.work)
	writeFile(t, filepath.Join(r.work, "base.txt"), "one\ntwo\nthree\n")
	writeFile(t, filepath.Join(r.work, "gone.txt"), "to be deleted by one task, changed by another\n")
	gitSetup(t, r.work, "add", "-A")
	gitSetup(t, r.work, "commit", "-q", "-m", "base")
	gitSetup(t, r.work, "push", "-q", r.bare, "main")
	r.base = gitSetup(t, r.work, "rev-parse", "HEAD")
	r.f = newFixture(t, readsOnly(), context.Background(), func(c *activities.Config) {
		c.Git.Mode, c.Git.Remote, c.Sandbox.Mode = gitws.ModeRemote, r.bare, sandbox.ModeOff
	})
	return r
}

// task pushes task id of campaign's branch: edits (path → content, ""
// deletes) on the base commit.
func (r *remoteCampaign) task(t *testing.T, campaign, id string, edits map[string]string) activities.CampaignTask {
	t.Helper()
	gitSetup(t, r.work, "checkout", "-q", "--detach", r.base)
	for path, content := range edits {
		if content == "" {
			gitSetup(t, r.work, "rm", "-q", path)
			continue
		}
		writeFile(t, filepath.Join(r.work, path), content)
	}
	gitSetup(t, r.work, "add", "-A")
	gitSetup(t, r.work, "commit", "-q", "-m", "task "+id)
	ws := activities.TaskWorkspace(campaign, id)
	gitSetup(t, r.work, "push", "-q", "-f", r.bare, "HEAD:refs/heads/"+gitws.Branch(ws))
	return activities.CampaignTask{ID: id, Workspace: ws, Commit: gitSetup(t, r.work, "rev-parse", "HEAD"), Go: 1}
}

func (r *remoteCampaign) merge(t *testing.T, campaign, verify string, tasks ...activities.CampaignTask) (activities.MergeTaskOutput, error) {
	t.Helper()
	val, err := r.f.env.ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{
		Line: activities.CampaignLine{Campaign: campaign, Branch: "integration-" + campaign}, Tasks: tasks, VerifyCommand: verify})
	var out activities.MergeTaskOutput
	if err == nil {
		err = val.Get(&out)
	}
	return out, err
}

// caches are the worker's object caches.
func (r *remoteCampaign) caches(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(r.f.cfg.SessionDir, "git-cache", "*.git"))
	if len(dirs) != 1 {
		t.Fatalf("the worker holds %d object caches (%v), want the remote's one", len(dirs), dirs)
	}
	return dirs
}

// A stack of two tasks lands as `git merge --no-ff` of each, in order,
// would have made it: each merge commit's tree, parents and message are
// git merge's; a conflicting third task names the paths git merge leaves
// unmerged (a content conflict and a modify/delete).
func TestMergeTaskMergesAsGitMergeDoes(t *testing.T) {
	r := newRemoteCampaign(t)
	a := r.task(t, "c", "a", map[string]string{"a.txt": "a\n", "base.txt": "one changed by a\ntwo\nthree\n"})
	b := r.task(t, "c", "b", map[string]string{"b.txt": "b\n", "base.txt": "one\ntwo\nthree changed by b\n", "gone.txt": ""})
	out, err := r.merge(t, "c", "test -f a.txt && test -f b.txt", a, b)
	if err != nil || out.Outcome != activities.MergeLanded || len(out.Merged) != 2 {
		t.Fatalf("MergeTask = %+v, %v; want both landed", out, err)
	}
	// The same merges by git merge, in the test's clone, each onto the
	// merge before it.
	gitSetup(t, r.work, "fetch", "-q", r.bare, "integration-c")
	prev := r.base
	for i, task := range []activities.CampaignTask{a, b} {
		gitSetup(t, r.work, "checkout", "-q", "--detach", prev)
		msg := gitws.MergeMessage("c", gitws.TaskBranch{ID: task.ID, Go: task.Go})
		gitSetup(t, r.work, "merge", "-q", "--no-ff", "--no-edit", "-m", msg, task.Commit)
		got := out.Merged[i].Commit
		if tree, want := gitSetup(t, r.work, "rev-parse", got+"^{tree}"), gitSetup(t, r.work, "rev-parse", "HEAD^{tree}"); tree != want {
			t.Errorf("task %s's merge commit has tree %s, git merge made %s", task.ID, tree, want)
		}
		if parents, want := gitSetup(t, r.work, "rev-list", "--parents", "-n1", got), got+" "+prev+" "+task.Commit; parents != want {
			t.Errorf("task %s's merge commit and its parents: %q, want %q", task.ID, parents, want)
		}
		if body, want := gitSetup(t, r.work, "log", "-1", "--format=%B", got), gitSetup(t, r.work, "log", "-1", "--format=%B", "HEAD"); body != want {
			t.Errorf("task %s's merge message %q, git merge wrote %q", task.ID, body, want)
		}
		prev = got
	}
	if head := gitSetup(t, r.work, "rev-parse", "FETCH_HEAD"); head != out.Head || head != prev {
		t.Errorf("integration-c = %s, MergeTask says %s, the last merge is %s", head, out.Head, prev)
	}

	c := r.task(t, "c", "c", map[string]string{"base.txt": "one changed by c\ntwo\nthree\n", "gone.txt": "changed by c\n"})
	out, err = r.merge(t, "c", "true", c)
	if err != nil || out.Outcome != activities.MergeConflict {
		t.Fatalf("MergeTask of c = %+v, %v; want a conflict", out, err)
	}
	gitSetup(t, r.work, "checkout", "-q", "--detach", "FETCH_HEAD")
	cmd := []string{"-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-ff", "--no-edit", c.Commit}
	_ = runGit(r.work, cmd...) // it conflicts: exit 1
	want := strings.Fields(gitSetup(t, r.work, "diff", "--name-only", "--diff-filter=U"))
	if !slices.Equal(out.ConflictPaths, want) || len(want) != 2 {
		t.Errorf("conflict paths %q, git merge leaves %q unmerged", out.ConflictPaths, want)
	}
	gitSetup(t, r.work, "merge", "--abort")
}

// A merge's scratch holds none of another campaign's unpushed objects: a
// red merge's commit of campaign x (written, never pushed) is not in the
// worker's object cache nor in campaign y's merge, where git cat-file of it
// fails inside the verify's tree while that of y's own head succeeds.
func TestMergeScratchHoldsNoOtherRunsObjects(t *testing.T) {
	r := newRemoteCampaign(t)
	red, err := r.merge(t, "x", "false", r.task(t, "x", "a", map[string]string{"x.txt": "x's work\n"}))
	if err != nil || red.Outcome != activities.MergeRed || red.Tip == "" {
		t.Fatalf("campaign x's merge = %+v, %v; want red", red, err)
	}
	if err := runGit(r.caches(t)[0], "cat-file", "-e", red.Tip); err == nil {
		t.Fatalf("the object cache holds campaign x's red merge %s", red.Tip)
	}
	y := r.task(t, "y", "a", map[string]string{"y.txt": "y's work\n"})
	out, err := r.merge(t, "y", "git cat-file -e "+red.Tip, y)
	if err != nil || out.Outcome != activities.MergeRed {
		t.Fatalf("campaign y's verify found x's red merge %s in its tree: %+v, %v", red.Tip, out, err)
	}
	out, err = r.merge(t, "y", "git cat-file -e "+y.Commit+" && git cat-file -e "+r.base+" && test -f y.txt", y)
	if err != nil || out.Outcome != activities.MergeLanded {
		t.Fatalf("campaign y's verify of its own objects: %+v, %v", out, err)
	}
}

// A cache found damaged is rebuilt, never trusted: objects removed under
// its refs (its fetch fails on them), a damage mark a step left (git found
// an object missing in its scratch: see TestScratchMarksItsCacheDamaged in
// internal/gitws) and a lock a killed git left behind each make the step
// start from a new cache, and the merge lands as it would have.
func TestObjectCacheDamagedIsRebuilt(t *testing.T) {
	r := newRemoteCampaign(t)
	for _, id := range []string{"a", "b"} {
		if out, err := r.merge(t, "c", "true", r.task(t, "c", id, map[string]string{id + ".txt": id + "\n"})); err != nil || out.Outcome != activities.MergeLanded {
			t.Fatalf("merge of %s: %+v, %v", id, out, err)
		}
	}
	cache := r.caches(t)[0]

	// The oldest pack gone (the base's files): the cache's refs still claim
	// the integration head, whose commit is in a later pack.
	packs, _ := filepath.Glob(filepath.Join(cache, "objects", "pack", "*.pack"))
	slices.SortFunc(packs, func(x, y string) int { return modTime(t, x).Compare(modTime(t, y)) })
	if len(packs) < 2 {
		t.Fatalf("the cache holds %d packs, want one per fetch", len(packs))
	}
	oldest := strings.TrimSuffix(packs[0], ".pack")
	for _, ext := range []string{".pack", ".idx", ".rev"} {
		if err := os.Remove(oldest + ext); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	planted := filepath.Join(cache, "objects", "info", "planted-by-the-test")
	writeFile(t, planted, "x")
	c := r.task(t, "c", "c", map[string]string{"c.txt": "c\n"})
	out, err := r.merge(t, "c", "test -f a.txt && test -f b.txt && test -f c.txt", c)
	if err != nil || out.Outcome != activities.MergeLanded {
		t.Fatalf("merge on a cache missing objects: %+v, %v", out, err)
	}
	if _, err := os.Lstat(planted); !os.IsNotExist(err) {
		t.Errorf("the cache missing objects was trusted, not rebuilt (%v)", err)
	}
	if err := runGit(cache, "cat-file", "-e", r.base+":base.txt"); err != nil {
		t.Errorf("the rebuilt cache lacks the base's files: %v", err)
	}

	// A step that finds an object missing marks the cache; the next one
	// rebuilds it.
	writeFile(t, planted, "x")
	writeFile(t, filepath.Join(cache, "ralph-damaged"), "")
	if out, err := r.merge(t, "c", "test -f c.txt", r.task(t, "c", "e", map[string]string{"e.txt": "e\n"})); err != nil || out.Outcome != activities.MergeLanded {
		t.Fatalf("merge on a cache marked damaged: %+v, %v", out, err)
	}
	for _, p := range []string{planted, filepath.Join(cache, "ralph-damaged")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: the cache marked damaged was trusted (%v)", filepath.Base(p), err)
		}
	}

	// A lock a killed git left behind: the next step rebuilds the cache.
	writeFile(t, planted, "x")
	writeFile(t, filepath.Join(cache, "packed-refs.lock"), "")
	if out, err := r.merge(t, "c", "test -f c.txt", r.task(t, "c", "d", map[string]string{"d.txt": "d\n"})); err != nil || out.Outcome != activities.MergeLanded {
		t.Fatalf("merge after a lock was left behind: %+v, %v", out, err)
	}
	for _, p := range []string{planted, filepath.Join(cache, "packed-refs.lock")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: the cache was trusted, not rebuilt (%v)", filepath.Base(p), err)
		}
	}
}

// Two campaigns' merges on one worker at once share the remote's cache
// (its lock serialises their fetches) and both land.
func TestTwoMergesAtOnceOnOneWorker(t *testing.T) {
	r := newRemoteCampaign(t)
	tasks := map[string]activities.CampaignTask{}
	for _, c := range []string{"p", "q"} {
		tasks[c] = r.task(t, c, "a", map[string]string{c + ".txt": c + "\n"})
	}
	// One Activities (one worker's git and caches) behind two environments.
	var suite testsuite.WorkflowTestSuite
	other := suite.NewTestActivityEnvironment()
	r.f.acts.Register(other)
	envs := map[string]*testsuite.TestActivityEnvironment{"p": r.f.env, "q": other}
	var wg sync.WaitGroup
	outs, errs := map[string]activities.MergeTaskOutput{}, map[string]error{}
	var mu sync.Mutex
	for _, c := range []string{"p", "q"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			val, err := envs[c].ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{
				Line: activities.CampaignLine{Campaign: c, Branch: "integration-" + c}, Tasks: []activities.CampaignTask{tasks[c]},
				VerifyCommand: "sleep 0.2; test -f " + c + ".txt"})
			var out activities.MergeTaskOutput
			if err == nil {
				err = val.Get(&out)
			}
			mu.Lock()
			outs[c], errs[c] = out, err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range []string{"p", "q"} {
		if errs[c] != nil || outs[c].Outcome != activities.MergeLanded {
			t.Errorf("campaign %s: %+v, %v", c, outs[c], errs[c])
			continue
		}
		if got := gitSetup(t, r.work, "ls-remote", r.bare, "refs/heads/integration-"+c); !strings.HasPrefix(got, outs[c].Head) {
			t.Errorf("integration-%s is %q, want %s", c, got, outs[c].Head)
		}
	}
	r.caches(t)
}

// runGit runs the test's git in dir and returns its failure.
func runGit(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd.Run()
}

func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
