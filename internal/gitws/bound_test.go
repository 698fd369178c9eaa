package gitws

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/cgroup"
)

// boundedGit is a local-mode Git whose commands are held to memoryMB and
// whose trees to maxBytes and maxFiles (0: unbounded). It fails the test
// where the memory bound cannot hold: the bound is what is tested.
func boundedGit(t *testing.T, memoryMB int, maxBytes, maxFiles int64) *Git {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Mode, cfg.MemoryMB, cfg.MaxTreeBytes, cfg.MaxTreeFiles = ModeLocal, memoryMB, maxBytes, maxFiles
	g, err := New(cfg, filepath.Join(t.TempDir(), "empty-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.bound.cg.Enforced(), cgroup.Memory) {
		t.Fatalf("no memory bound holds on git commands here (%s): run the test as root with a writable cgroup hierarchy", g.bound.why)
	}
	return g
}

// sparse makes a sparse file of size bytes at dir/rel: no block on disk.
func sparse(t *testing.T, dir, rel string, size int64) {
	t.Helper()
	if err := os.Truncate(filepath.Join(dir, rel), size); err != nil {
		f, err := os.Create(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Truncate(filepath.Join(dir, rel), size); err != nil {
			t.Fatal(err)
		}
	}
}

// childMaxRSS is the largest resident set of any child this test process
// waited for (the kernel's figure, apart from any cgroup).
func childMaxRSS(t *testing.T) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Maxrss << 10
}

// alone reports whether this is the re-executed copy of the test; if not,
// it runs the test again in a fresh process and fails with its output. The
// kernel's children count is a maximum over every child the process ever
// waited for, so only a process that ran nothing but this test can read it
// as this test's own git children.
const aloneEnv = "RALPH_GITWS_TEST_ALONE"

func alone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(aloneEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), aloneEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a fresh process: %v\n%s", t.Name(), err, out)
	}
	t.Logf("in a fresh process:\n%s", out)
	return false
}

// A checkpoint's `git add` of a sparse file under a conversion attribute
// balloons (a 256 MB file took git 9 GB here): the git child is killed at
// RALPH_GIT_MEMORY_MB, its peak stays under it, and nothing is committed.
func TestGitMemoryBoundHoldsABalloon(t *testing.T) {
	if !alone(t) {
		return
	}
	const limitMB = 64
	g := boundedGit(t, limitMB, 0, 0)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, ".gitattributes", "*.bin working-tree-encoding=UTF-16LE\n")
	sparse(t, dir, "big.bin", 32<<20)

	began := time.Now()
	_, _, err := g.Checkpoint(context.Background(), dir, p, round(1, 1), handoff("continue", "balloon"))
	// Where the worker's neutral attributes defuse the conversion, git has
	// nothing to balloon and the checkpoint lands; otherwise the bound kills
	// git. Either way no git child passes the bound.
	var mem *MemoryBoundError
	if err != nil {
		if !errors.As(err, &mem) || mem.LimitMB != limitMB || !TreeFault(err) || !strings.Contains(err.Error(), "RALPH_GIT_MEMORY_MB (64 MB)") {
			t.Fatalf("checkpoint err = %v, want the git child killed at %s (%d MB)", err, SettingMemory, limitMB)
		}
		if head, err := g.head(context.Background(), dir); err != nil || head != p.Base {
			t.Fatalf("HEAD = %s (%v), want the base %s: nothing committed", head, err, p.Base)
		}
	}
	assertPeakWithin(t, g, limitMB)
	// The kernel's own count of this process's children (every git here
	// ran bounded): the git binary's pages shared with the page cache may
	// be charged elsewhere, hence the slack.
	if rss := childMaxRSS(t); rss > (limitMB+16)<<20 {
		t.Fatalf("a git child reached %d MB resident, over the %d MB bound", rss>>20, limitMB)
	}
	t.Logf("checkpoint ended after %s (%v) at a cgroup peak of %d MB", time.Since(began).Round(time.Millisecond), err, g.PeakMemoryBytes()>>20)
}

// assertPeakWithin checks the peak of g's git children as their cgroups
// report it (memory.max_usage_in_bytes, memory.peak).
func assertPeakWithin(t *testing.T, g *Git, limitMB int64) {
	t.Helper()
	peak := g.PeakMemoryBytes()
	if peak <= 0 || peak > limitMB<<20 {
		t.Fatalf("the git children's cgroup peak = %d bytes, want within (0, %d MB]", peak, limitMB)
	}
}

// The bound itself, whatever attributes say: a diff of two large text
// blobs makes git hold both and a record per line (GBs for these), and the
// git child is killed at RALPH_GIT_MEMORY_MB instead.
func TestGitMemoryBoundKillsAGreedyDiff(t *testing.T) {
	const limitMB = 64
	g := boundedGit(t, limitMB, 0, 0)
	dir := workspace(t, "ws")
	prepare(t, g, dir, round(1, 1))
	line := strings.Repeat("x", 15) + "\n"
	write(t, dir, "a.txt", strings.Repeat(line, 3<<20)) // 48 MB, 3 M lines
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "a")
	one := gitIn(t, dir, "rev-parse", "HEAD")
	write(t, dir, "a.txt", strings.Repeat(strings.Replace(line, "x", "y", 1), 3<<20))
	gitIn(t, dir, "commit", "-q", "-a", "-m", "b")
	two := gitIn(t, dir, "rev-parse", "HEAD")
	_, err := g.DiffStat(context.Background(), dir, one, two)
	var mem *MemoryBoundError
	if !errors.As(err, &mem) || mem.LimitMB != limitMB {
		t.Fatalf("diff err = %v, want the git child killed at %s (%d MB)", err, SettingMemory, limitMB)
	}
	assertPeakWithin(t, g, limitMB)
}

// gitIn runs plain git in dir for the test's own setup.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// bigRepo is a repository at dir whose HEAD holds a sparse file of size
// bytes and n small files.
func bigRepo(t *testing.T, dir string, size int64, n int) string {
	t.Helper()
	gitIn(t, dir, "init", "-q", "--template=", ".")
	sparse(t, dir, "big.bin", size)
	for i := range n {
		write(t, dir, filepath.Join("many", strings.Repeat("f", i+1)), "x")
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "big")
	return gitIn(t, dir, "rev-parse", "HEAD")
}

// apparentOutsideGit sums the apparent sizes of the files under dir but
// its .git: what a checkout wrote.
func apparentOutsideGit(t *testing.T, dir string) int64 {
	t.Helper()
	var sum int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			sum += fi.Size()
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return sum
}

// A tree whose blobs sum past RALPH_WORKSPACE_MAX_MB (a sparse file at its
// apparent size) or whose entries pass RALPH_WORKSPACE_MAX_FILES is refused
// before a candidate's checkout writes a byte of it.
func TestTreeOverTheWorkspaceBoundsIsRefusedBeforeCheckout(t *testing.T) {
	ctx := context.Background()
	main := workspace(t, "main")
	base := bigRepo(t, main, 64<<20, 8)

	size, err := newGit(t, ModeLocal, "").TreeSize(ctx, main, base)
	if err != nil || size.Bytes != 64<<20+8 || size.Entries != 1+1+8 {
		t.Fatalf("tree size = %+v (%v), want 64 MB + 8 bytes in 10 entries (a file, a directory, 8 files)", size, err)
	}
	for _, c := range []struct {
		maxBytes, maxFiles int64
		bound              string
	}{
		{16 << 20, 0, SettingWorkspaceMaxMB},
		{0, 5, SettingWorkspaceMaxFiles},
	} {
		g := boundedGit(t, DefaultMemoryMB, c.maxBytes, c.maxFiles)
		dir := filepath.Join(t.TempDir(), "candidate")
		err := g.StartCandidate(ctx, main, dir, base)
		var big *TreeTooBigError
		if !errors.As(err, &big) || big.Bound != c.bound || big.Rev != base {
			t.Fatalf("candidate err = %v, want a tree refused at %s", err, c.bound)
		}
		if !strings.Contains(err.Error(), c.bound) {
			t.Fatalf("the error does not name %s: %v", c.bound, err)
		}
		if n := apparentOutsideGit(t, dir); n != 0 {
			t.Fatalf("%d bytes of the refused tree landed on disk", n)
		}
	}
	// Within the bounds the same tree checks out.
	g := boundedGit(t, DefaultMemoryMB, 128<<20, 100)
	dir := filepath.Join(t.TempDir(), "candidate")
	if err := g.StartCandidate(ctx, main, dir, base); err != nil {
		t.Fatal(err)
	}
	if n := apparentOutsideGit(t, dir); n != 64<<20+8 {
		t.Fatalf("the candidate holds %d bytes, want the whole tree", n)
	}
}

// A round's work tree past the bound is never committed: the checkpoint
// fails naming the bound and HEAD stays.
func TestCheckpointOfATreeOverTheBoundIsRefused(t *testing.T) {
	g := boundedGit(t, DefaultMemoryMB, 16<<20, 0)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	sparse(t, dir, "big.bin", 64<<20)
	_, _, err := g.Checkpoint(context.Background(), dir, p, round(1, 1), handoff("continue", "big"))
	var big *TreeTooBigError
	if !errors.As(err, &big) || big.Bound != SettingWorkspaceMaxMB || big.Size.Bytes <= 16<<20 {
		t.Fatalf("checkpoint err = %v, want the work tree refused at %s", err, SettingWorkspaceMaxMB)
	}
	if head, _ := g.head(context.Background(), dir); head != p.Base {
		t.Fatalf("HEAD moved to %s", head)
	}
}

// A task whose merge would pass the bound does not merge, though its own
// tree is within it (10 MB onto a tip already holding 10 MB, bound 16 MB):
// MergeStack stops on it with the refusal (the task's fault, not an
// error), having merged the tasks before it, and the scratch clone never
// holds its bytes.
func TestMergeStackRefusesAMergeOverTheBound(t *testing.T) {
	ctx := context.Background()
	g := boundedGit(t, DefaultMemoryMB, 16<<20, 0)
	root := t.TempDir()
	bare := filepath.Join(root, "integration.git")
	if err := g.InitBare(ctx, bare); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(root, "scratch")
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	head, err := g.Integration(ctx, scratch, Line{URL: bare, Branch: "integration"})
	if err != nil {
		t.Fatal(err)
	}
	// Each task branches from the integration head.
	var tasks []TaskBranch
	for _, name := range []string{"small", "a", "b"} {
		d := filepath.Join(root, name)
		gitIn(t, root, "clone", "-q", "--template=", "-b", "integration", bare, d)
		gitIn(t, d, "checkout", "-q", "-b", "task")
		if name == "small" {
			write(t, d, "ok.txt", "ok\n")
		} else {
			sparse(t, d, name+".bin", 10<<20)
		}
		gitIn(t, d, "add", "-A")
		gitIn(t, d, "commit", "-q", "-m", name)
		tasks = append(tasks, TaskBranch{ID: name, Repo: d, Branch: "task", Commit: gitIn(t, d, "rev-parse", "HEAD"), Go: 1})
	}
	tip, merges, conflict, err := g.MergeStack(ctx, scratch, "camp", head, tasks)
	if err != nil {
		t.Fatalf("MergeStack: %v (a task's tree is the task's fault, not an error)", err)
	}
	if conflict == nil || conflict.Index != 2 || conflict.Refused == nil || len(conflict.Paths) != 0 {
		t.Fatalf("conflict = %+v, want task b refused", conflict)
	}
	var tb *TreeTooBigError
	if !errors.As(conflict.Refused, &tb) || tb.Bound != SettingWorkspaceMaxMB || tb.Size.Bytes < 20<<20 ||
		conflict.Refused.Reason() != "tree too big (RALPH_WORKSPACE_MAX_MB)" || !strings.Contains(tb.Error(), "the merge of task b") {
		t.Fatalf("refused = %v (%q), want the merge too big at %s", conflict.Refused, conflict.Refused.Reason(), SettingWorkspaceMaxMB)
	}
	if len(merges) != 2 || merges[1].Task != "a" || tip != merges[1].Commit {
		t.Fatalf("merges = %+v, tip %s: want tasks small and a merged before", merges, tip)
	}
	if n := apparentOutsideGit(t, scratch); n != 0 {
		t.Fatalf("the scratch clone holds %d bytes, want none: a stack that goes back is merged in the object store alone", n)
	}

	// Bringing task b up to that tip is refused the same way, as b's fault.
	_, _, err = g.BringUp(ctx, scratch, "camp", "integration", tip, tasks[2])
	var tt *TaskTreeError
	if !errors.As(err, &tt) || tt.Task != "b" || !errors.As(err, &tb) || tb.Bound != SettingWorkspaceMaxMB {
		t.Fatalf("BringUp err = %v, want task b's tree refused at %s", err, SettingWorkspaceMaxMB)
	}
}

// BenchmarkGitCommandBound is the cost of the bound on one git command:
// the same `git rev-parse HEAD` with and without its own cgroup.
func BenchmarkGitCommandBound(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Mode = ModeLocal
	dir := b.TempDir()
	g, err := New(cfg, filepath.Join(b.TempDir(), "hooks"))
	if err != nil {
		b.Fatal(err)
	}
	if err := g.ensureRepo(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
	if _, err := g.firstCommit(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
	if g.bound.cg == nil {
		b.Fatalf("no cgroup bound here: %s", g.bound.why)
	}
	for _, c := range []struct {
		name  string
		bound *bound
	}{{"cgroup", g.bound}, {"none", &bound{}}} {
		b.Run(c.name, func(b *testing.B) {
			h := *g
			h.bound = c.bound
			for b.Loop() {
				if _, err := h.run(context.Background(), dir, cmdOpts{}, "rev-parse", "HEAD"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A retried round's reset to a checkpoint whose tree passes the bound is
// refused before it writes the tree back: the attempt ends naming the
// bound, and the file is not restored on disk.
func TestPrepareRefusesToResetToATreeOverTheBound(t *testing.T) {
	dir := workspace(t, "ws")
	unbounded := newGit(t, ModeLocal, "")
	p := prepare(t, unbounded, dir, round(1, 1))
	sparse(t, dir, "big.bin", 64<<20)
	checkpoint(t, unbounded, dir, p, round(1, 1), handoff("continue", "big"))
	if err := os.Remove(filepath.Join(dir, "big.bin")); err != nil { // the lost attempt 1 of round 2 removed it
		t.Fatal(err)
	}
	g := boundedGit(t, DefaultMemoryMB, 16<<20, 0)
	_, err := g.Prepare(context.Background(), dir, round(2, 2))
	var big *TreeTooBigError
	if !errors.As(err, &big) || big.Bound != SettingWorkspaceMaxMB || !TreeFault(err) {
		t.Fatalf("prepare err = %v, want the reset refused at %s", err, SettingWorkspaceMaxMB)
	}
	if exists(dir, "big.bin") {
		t.Fatal("the refused tree was written back")
	}
}

// On cgroup v1 a git command is forked by a station's thread living in
// the command's groups (no sh moving itself in): git is born in its memory
// and pids groups, the twenty commands run one after another take one
// station, and no thread of the worker but a station's is in a command's
// group.
func TestGitIsBornInItsGroupsAndOnlyStationsLiveThere(t *testing.T) {
	g := boundedGit(t, DefaultMemoryMB, 0, 0)
	if g.bound.cg.Version() == 1 && !g.bound.stations.Load() {
		t.Fatal("cgroup v1 here, yet no station starts the commands")
	}
	dir := workspace(t, "ws")
	prepare(t, g, dir, round(1, 1))
	groups := map[string]map[string]bool{} // controller → groups
	for range 20 {
		out, err := g.run(context.Background(), dir, cmdOpts{}, "-c", "alias.groups=!cat /proc/self/cgroup", "groups")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"memory", "pids"} {
			if g.bound.cg.Version() == 2 {
				c = ""
			}
			group, ok := ralphGroup(out, c)
			if !ok {
				t.Fatalf("git's child is not in a command group for %q:\n%s", c, out)
			}
			if groups[c] == nil {
				groups[c] = map[string]bool{}
			}
			groups[c][group] = true
		}
	}
	g.PeakMemoryBytes() // the commands' groups are all back
	stations := map[string]bool{}
	if g.bound.cg.Version() == 1 {
		for c, in := range groups {
			if len(in) != 1 {
				t.Fatalf("twenty commands one after another ran in %d %s groups, want one station's: %v", len(in), c, in)
			}
		}
		// Every bound's stations (earlier tests made some for theirs).
		groupPools.Range(func(_, v any) bool {
			p := v.(*groupPool)
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, st := range p.idle {
				stations[strconv.Itoa(int(st.tid.Load()))] = true
			}
			return true
		})
	}
	tasks, err := filepath.Glob("/proc/self/task/*/cgroup")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads listed: %v", err)
	}
	in := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		if !strings.Contains(string(b), cgroup.Prefix(os.Getpid())) {
			continue
		}
		in++
		if tid := filepath.Base(filepath.Dir(f)); !stations[tid] {
			t.Errorf("worker thread %s, no station's, is in a command's group:\n%s", tid, b)
		}
	}
	if in != len(stations) {
		t.Errorf("%d worker threads in command groups, want the %d stations'", in, len(stations))
	}
}

// ralphGroup is the group a /proc/<pid>/cgroup text puts controller c
// ("" for v2) in, when the worker made it for a command.
func ralphGroup(text, c string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (c == "" && parts[1] == "" || c != "" && slices.Contains(strings.Split(parts[1], ","), c)) &&
			strings.HasPrefix(filepath.Base(parts[2]), cgroup.Prefix(os.Getpid())) {
			return parts[2], true
		}
	}
	return "", false
}

// Groups are made ahead of the commands, and on cgroup v1 a station's is
// reused, but each is one command's alone while it runs and comes to it
// with no charge (fresh, or reset): a command after a hungry one reports
// its own small peak, and the peaks recorded after the commands returned
// (their groups are read then) are all in by the time PeakMemoryBytes
// answers.
func TestEachGitCommandHasAGroupAndAPeakOfItsOwn(t *testing.T) {
	g := boundedGit(t, 512, 0, 0)
	dir := workspace(t, "ws")
	prepare(t, g, dir, round(1, 1))
	runOne := func(args ...string) int64 {
		t.Helper()
		cmd, grp, err := g.bound.command(context.Background(), append(append(g.overrides(), "-c", "safe.directory="+dir), args...))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Dir = dir
		if p := grp.PeakBytes(); p > 1<<20 {
			t.Fatalf("a group came to its command with a peak of %d bytes", p)
		}
		err = g.bound.run(cmd, grp)
		peak := grp.PeakBytes()
		g.bound.end(grp, err != nil)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return peak
	}
	const hog = 64 << 20
	hungry := runOne("-c", "alias.hog=!x=$(head -c 67108864 /dev/zero | tr '\\0' a); echo ${#x}", "hog")
	small := runOne("rev-parse", "HEAD")
	if hungry < hog || small > 16<<20 {
		t.Fatalf("peaks: %d bytes for a command holding %d, %d for rev-parse after it (want its own, under 16 MB)", hungry, hog, small)
	}
	for range 3 * readyGroups { // more than were made ahead
		if p := runOne("rev-parse", "HEAD"); p > 16<<20 {
			t.Fatalf("rev-parse peaked at %d bytes", p)
		}
	}
	if got := g.PeakMemoryBytes(); got < hungry {
		t.Fatalf("PeakMemoryBytes = %d, want at least the hungry command's %d", got, hungry)
	}
}

// A command that leaves a process behind in its station's groups (out of
// its process group, where run's kill does not reach) ends the station:
// the process is killed, and the next command gets another station's
// groups, never sharing its limits with it.
func TestAStationLeftAProcessIsEndedWithIt(t *testing.T) {
	g := boundedGit(t, DefaultMemoryMB, 0, 0)
	dir := workspace(t, "ws")
	prepare(t, g, dir, round(1, 1))
	controller := "memory"
	if g.bound.cg.Version() == 2 {
		controller = ""
	}
	groupOf := func() string {
		out, err := g.run(context.Background(), dir, cmdOpts{}, "-c", "alias.groups=!cat /proc/self/cgroup", "groups")
		if err != nil {
			t.Fatal(err)
		}
		group, ok := ralphGroup(out, controller)
		if !ok {
			t.Fatalf("not in a command group:\n%s", out)
		}
		return group
	}
	before, again := groupOf(), groupOf()
	if v2 := g.bound.cg.Version() == 2; v2 != (again != before) {
		t.Fatalf("cgroup v%d: two commands one after another ran in %s and %s, want one station's on v1, "+
			"a new group each on v2", g.bound.cg.Version(), before, again)
	} else if v2 {
		return // no station on v2 to leave a process in
	}
	out, err := g.run(context.Background(), dir, cmdOpts{},
		// It returns only once the sleep has left git's session (run kills
		// that process group after the command): the sleep stays behind.
		"-c", `alias.leave=!setsid sleep 300 </dev/null >/dev/null 2>&1 & p=$!; `+
			`until [ "$(cut -d' ' -f6 /proc/$p/stat)" != "$(cut -d' ' -f6 /proc/$$/stat)" ]; do :; done; `+
			`echo $p; cat /proc/self/cgroup`, "leave")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(out, "\n", 2)[0])
	if err != nil {
		t.Fatalf("no pid in %q", out)
	}
	left, _ := ralphGroup(out, controller)
	if left != before {
		t.Fatalf("the leaving command ran in %s, want the station's %s", left, before)
	}
	after := groupOf()
	if after == before {
		t.Fatalf("the command after one that left a process ran in the same group %s", after)
	}
	g.PeakMemoryBytes() // waits for the ended station's removal
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("the process left in the station's group outlived it: %s", st)
	}
}
