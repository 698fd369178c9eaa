package gitws

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// hostileAttributes asks for every conversion and driver the worker's git
// must never apply: encodings, filters, line endings, ident expansion,
// a binary (no diff) view, a merge driver, and a macro that sets them.
const hostileAttributes = "* working-tree-encoding=UTF-16LE\n* filter=x\n* -diff\n* binary\n* eol=crlf\n* ident\n" +
	"* merge=union\n* conflict-marker-size=3\n* export-ignore\n* export-subst\n* text crlf\n[attr]evil filter=y diff=z\n* evil\n"

// neutralized are the attributes NeutralAttributes leaves unspecified.
var neutralized = []string{"text", "crlf", "eol", "working-tree-encoding", "ident", "filter", "diff", "merge",
	"conflict-marker-size", "export-ignore", "export-subst"}

// assertNeutral runs a plain git check-attr in the repository at dir (a
// work tree holding hostileAttributes, or a bare repository) and fails
// unless every conversion and driver attribute is unspecified.
func assertNeutral(t *testing.T, what, dir string) {
	t.Helper()
	args := append([]string{"check-attr"}, neutralized...)
	out := testkit.Git(t, dir, append(args, "--", "a.txt", ".gitattributes", "sub/blob.bin")...)
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasSuffix(line, ": unspecified") {
			t.Errorf("%s: git check-attr says %q, want every conversion attribute unspecified", what, line)
		}
	}
	if all := testkit.Git(t, dir, "check-attr", "-a", "--", "a.txt"); strings.Contains(all, "filter") || strings.Contains(all, "encoding") {
		t.Errorf("%s: git check-attr -a: %s", what, all)
	}
}

// The worker's git writes its attributes into every kind of repository it
// drives, and a hostile .gitattributes changes nothing: a file with CRLF and
// an $Id$ is committed byte for byte, the .gitattributes itself as a plain
// file, and the work trees it checks out hold the same bytes.
func TestAttributesAreTheWorkers(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	g := newGit(t, ModeLocal, "")
	content := "line one\r\n$Id: deadbeef $\r\nno newline"

	// A task workspace of a local-mode campaign: its loop's rounds commit.
	bare := filepath.Join(root, "integration.git")
	if err := g.InitBare(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(bare, "info", "attributes")); string(got) != NeutralAttributes {
		t.Errorf("the campaign's bare repository holds info/attributes %q", got)
	}
	scratch := filepath.Join(root, "merge")
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	line := Line{URL: bare, Branch: "ralph/campaigns/c/integration"}
	head, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "tasks", "a")
	tb := TaskBranch{ID: "a", Repo: ws, Branch: "ralph/campaigns/c/tasks/a", Go: 1, InWorkspace: true}
	if err := g.Publish(ctx, scratch, tb, head, ""); err != nil {
		t.Fatal(err)
	}
	r := Round{WorkflowID: "wf", Workspace: "a", Round: 1, MaxRounds: 3, Attempt: 1}
	p := prepare(t, g, ws, r)
	write(t, ws, ".gitattributes", hostileAttributes)
	write(t, ws, "a.txt", content)
	write(t, ws, "sub/blob.bin", "bytes\r\n")
	cp := checkpoint(t, g, ws, p, r, handoff("continue", "attributes"))
	assertNeutral(t, "the task workspace", ws)
	for rel, want := range map[string]string{"a.txt": content, ".gitattributes": hostileAttributes, "sub/blob.bin": "bytes\r\n"} {
		if got := gitRaw(t, ws, "cat-file", "blob", cp.Commit+":"+rel); got != want {
			t.Errorf("committed %s = %q, want the bytes written %q", rel, got, want)
		}
	}
	if cp.Insertions != 17 {
		t.Errorf("the checkpoint counts %d inserted lines, want 17 (a .gitattributes hides none)", cp.Insertions)
	}

	// The merge scratch checks the task's commit out as it is.
	tb.Commit = cp.Commit
	tip, _, conflict, err := g.MergeStack(ctx, scratch, "c", head, []TaskBranch{tb})
	if err != nil || conflict != nil {
		t.Fatalf("merge: %v %+v", err, conflict)
	}
	assertNeutral(t, "the merge scratch", scratch)
	assertBytes(t, "the merge scratch", filepath.Join(scratch, "a.txt"), content)
	if stat, err := g.DiffStat(ctx, scratch, head, tip); err != nil || !regexp.MustCompile(`a\.txt +\| +3 \+\+\+\n`).MatchString(stat) {
		t.Errorf("the approval's diff stat (%v):\n%s\nwant a.txt's 3 lines", err, stat)
	}

	// A bring-up scratch, and a candidate's clone of the workspace.
	up := filepath.Join(root, "bringup")
	if err := g.Scratch(ctx, up); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Integration(ctx, up, line); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.BringUp(ctx, up, "c", line.Branch, head, tb); err != nil {
		t.Fatal(err)
	}
	assertNeutral(t, "the bring-up scratch", up)
	// A bring-up that conflicts nowhere writes its merge in the object
	// store alone: no file of the task's tree is written out to convert.
	assertUnwritten(t, "the bring-up scratch", filepath.Join(up, "a.txt"))
	cand := filepath.Join(root, "candidates", "1")
	if err := g.StartCandidate(ctx, ws, cand, cp.Commit); err != nil {
		t.Fatal(err)
	}
	assertNeutral(t, "a candidate's clone", cand)
	assertBytes(t, "a candidate's clone", filepath.Join(cand, "a.txt"), content)

	// The reviewer's change view sees the patch.
	change, err := g.Change(ctx, ws, p.Base, cp.Commit, 100000)
	if err != nil || !strings.Contains(change, "+$Id: deadbeef $\r") || strings.Contains(change, "Binary files") {
		t.Errorf("the reviewer's change (%v):\n%s", err, change)
	}

	// A model that appends to the worker's file, or replaces it, gets it
	// back before the next git command.
	if err := os.WriteFile(filepath.Join(ws, ".git", "info", "attributes"), []byte("* filter=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.head(ctx, ws); err != nil {
		t.Fatal(err)
	}
	assertNeutral(t, "a workspace whose info/attributes the model rewrote", ws)
}

// In remote mode the worker's clone of the branch reads the same attributes.
func TestAttributesRemoteClone(t *testing.T) {
	bare, person := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	r := round(1, 1)
	p := prepare(t, g, dir, r)
	write(t, dir, ".gitattributes", hostileAttributes)
	write(t, dir, "a.txt", "x\r\n")
	cp := checkpoint(t, g, dir, p, r, handoff("continue", "attributes"))
	assertNeutral(t, "the remote-mode workspace", dir)
	testkit.Git(t, person, "fetch", "-q", "origin")
	if got := gitRaw(t, person, "cat-file", "blob", cp.Commit+":a.txt"); got != "x\r\n" {
		t.Errorf("pushed a.txt = %q", got)
	}
	// A retry resets the clone: the checkout writes the bytes as they are.
	if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	prepare(t, g, dir, round(2, 2))
	assertBytes(t, "the remote-mode workspace after a reset", filepath.Join(dir, "a.txt"), "x\r\n")
}

// The worker writes its attributes only inside the git directory: a
// .git/info planted as a link is refused and the link's target is left
// alone; an info/attributes planted as a link is replaced, not followed.
func TestAttributesWrittenSafely(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	prepare(t, g, dir, round(1, 1))
	outside := t.TempDir()
	info := filepath.Join(dir, ".git", "info")
	if err := os.RemoveAll(info); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, info); err != nil {
		t.Fatal(err)
	}
	if _, err := g.head(ctx, dir); !errors.Is(err, ErrUnsafeRepo) {
		t.Fatalf("a command with .git/info linked outside: %v, want ErrUnsafeRepo", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("the worker wrote %d entries through the link", len(entries))
	}
	if err := os.Remove(info); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(info, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "host-file")
	if err := os.WriteFile(target, []byte("the host's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(info, "attributes")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.head(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "the host's\n" {
		t.Fatalf("the link's target now holds %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(info, "attributes")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("info/attributes after the write: %v %v, want a regular file", fi, err)
	}
	if entries, _ := os.ReadDir(info); len(entries) != 1 {
		t.Fatalf("info holds %d entries, want only attributes (no temporary file left)", len(entries))
	}
}

// sparseSize is the sparse blob's apparent size: large enough that a
// conversion shows in the blocks written, small enough for a unit test (a
// 2 GB file behaves the same, only slower to hash).
const sparseSize = 64 << 20

// A sparse blob committed by a checkpoint, then a .gitattributes asking for
// UTF-16LE over it: every checkout the worker's git makes of it (a
// workspace reset, a merge, a bring-up, a candidate's clone) writes its
// bytes unchanged, and a later checkpoint commits them unchanged.
func TestSparseBlobUnderEncodingNotConverted(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	g := newGit(t, ModeLocal, "")
	bare := filepath.Join(root, "integration.git")
	if err := g.InitBare(ctx, bare); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(root, "merge")
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	line := Line{URL: bare, Branch: "ralph/campaigns/c/integration"}
	head, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "tasks", "a")
	tb := TaskBranch{ID: "a", Repo: ws, Branch: "ralph/campaigns/c/tasks/a", Go: 1, InWorkspace: true}
	if err := g.Publish(ctx, scratch, tb, head, ""); err != nil {
		t.Fatal(err)
	}
	r1 := Round{WorkflowID: "wf", Workspace: "a", Round: 1, MaxRounds: 5, Attempt: 1}
	p := prepare(t, g, ws, r1)
	blob := filepath.Join(ws, "blob.bin")
	f, err := os.Create(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Truncate(sparseSize), f.Close()); err != nil {
		t.Fatal(err)
	}
	cp1 := checkpoint(t, g, ws, p, r1, handoff("continue", "a sparse blob"))
	blobID := testkit.Git(t, ws, "rev-parse", cp1.Commit+":blob.bin")
	r2 := Round{WorkflowID: "wf", Workspace: "a", Round: 2, MaxRounds: 5, Attempt: 1, Checkpoint: cp1.Commit}
	p = prepare(t, g, ws, r2)
	write(t, ws, ".gitattributes", "*.bin working-tree-encoding=UTF-16LE\n")
	cp2 := checkpoint(t, g, ws, p, r2, handoff("continue", "an encoding"))

	// Every checkout by the worker's git writes the bytes as they are.
	tb.Commit = cp2.Commit
	if _, _, conflict, err := g.MergeStack(ctx, scratch, "c", head, []TaskBranch{tb}); err != nil || conflict != nil {
		t.Fatalf("merge: %v %+v", err, conflict)
	}
	up := filepath.Join(root, "bringup")
	if err := g.Scratch(ctx, up); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Integration(ctx, up, line); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.BringUp(ctx, up, "c", line.Branch, head, tb); err != nil {
		t.Fatal(err)
	}
	cand := filepath.Join(root, "candidates", "1")
	if err := g.StartCandidate(ctx, ws, cand, cp2.Commit); err != nil {
		t.Fatal(err)
	}
	assertUnwritten(t, "the bring-up scratch", filepath.Join(up, "blob.bin"))
	if used := diskBytes(t, up); used > 16<<20 {
		t.Errorf("the bring-up scratch holds %d MB on disk, want a little", used>>20)
	}
	for what, dir := range map[string]string{"the merge scratch": scratch, "a candidate's clone": cand} {
		assertZeros(t, what, filepath.Join(dir, "blob.bin"))
		// The blob once, its objects compressed: a conversion would write
		// it twice over (UTF-16LE doubles every byte).
		if used := diskBytes(t, dir); used > sparseSize+16<<20 {
			t.Errorf("%s holds %d MB on disk, want at most the blob's %d MB and a little", what, used>>20, sparseSize>>20)
		}
	}

	// A later round touches the file: the checkpoint reads it again and
	// commits the same blob.
	r3 := Round{WorkflowID: "wf", Workspace: "a", Round: 3, MaxRounds: 5, Attempt: 1, Checkpoint: cp2.Commit}
	p = prepare(t, g, ws, r3)
	if err := os.Chtimes(blob, p3Time, p3Time); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "note.txt", "touched\n")
	cp3 := checkpoint(t, g, ws, p, r3, handoff("continue", "touched"))
	if got := testkit.Git(t, ws, "rev-parse", cp3.Commit+":blob.bin"); got != blobID {
		t.Fatalf("the touched blob was committed as %s, want %s unchanged", got, blobID)
	}
	// A retry of round 4 resets the workspace: blob.bin is checked out again.
	r4 := Round{WorkflowID: "wf", Workspace: "a", Round: 4, MaxRounds: 5, Attempt: 2, Checkpoint: cp3.Commit}
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	prepare(t, g, ws, r4)
	assertZeros(t, "the workspace after a reset", blob)
	if used := diskBytes(t, ws); used > sparseSize+16<<20 {
		t.Errorf("the workspace holds %d MB on disk, want at most the blob's %d MB and a little", used>>20, sparseSize>>20)
	}
}

// p3Time is a modification time that differs from the checkout's.
var p3Time = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// gitRaw is a plain git's stdout, untrimmed (the bytes of a blob).
func gitRaw(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// assertZeros fails unless path holds sparseSize zero bytes taking at most
// that much disk.
func assertZeros(t *testing.T, what, path string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) != sparseSize || bytes.IndexFunc(got, func(r rune) bool { return r != 0 }) >= 0 {
		t.Errorf("%s: blob.bin holds %d bytes, want %d zero bytes unchanged", what, len(got), sparseSize)
	}
	if used := blocksOf(t, path); used > sparseSize+1<<20 {
		t.Errorf("%s: blob.bin takes %d bytes on disk, want at most %d", what, used, sparseSize)
	}
}

func assertUnwritten(t *testing.T, what, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s: %s was written out (%v)", what, filepath.Base(path), err)
	}
}

func assertBytes(t *testing.T, what, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Errorf("%s: %s holds %q (%v), want %q", what, filepath.Base(path), got, err, want)
	}
}

// blocksOf is the disk a file takes (its blocks, not its apparent size).
func blocksOf(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// diskBytes is the disk every file under dir takes, as du counts it.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		total += blocksOf(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}
