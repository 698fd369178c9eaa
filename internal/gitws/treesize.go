package gitws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Before the worker's git materialises a tree (checkout, clone, merge,
// publish) it sums the tree's blob sizes and entries from the object store
// alone: a sparse file counts at its apparent size, which is what a
// checkout writes.

// Setting names of the workspace bounds a tree is held to.
const (
	SettingWorkspaceMaxMB    = "RALPH_WORKSPACE_MAX_MB"
	SettingWorkspaceMaxFiles = "RALPH_WORKSPACE_MAX_FILES"
)

// TreeSize is what a tree holds: its blobs' bytes and its entries
// (files, links, directories and submodule entries).
type TreeSize struct {
	Bytes   int64
	Entries int64
}

// TreeTooBigError is a tree refused before it was materialised: Bound
// names the setting it passed. The sum stops counting once past a bound,
// so Size is at least that much, not the whole tree.
type TreeTooBigError struct {
	What  string // what the tree is ("task t1's commit 1a2b3c")
	Rev   string
	Bound string // SettingWorkspaceMaxMB or SettingWorkspaceMaxFiles
	Size  TreeSize
	Limit int64 // in the bound's unit: bytes or entries
}

func (e *TreeTooBigError) Error() string {
	if e.Bound == SettingWorkspaceMaxFiles {
		return fmt.Sprintf("%s holds more than %d entries (counted %d), over %s (%d): refused before it was written out",
			e.What, e.Limit, e.Size.Entries, e.Bound, e.Limit)
	}
	return fmt.Sprintf("%s holds more than %d MB of files (counted %d bytes at apparent size), over %s (%d MB): refused before it was written out",
		e.What, e.Limit>>20, e.Size.Bytes, e.Bound, e.Limit>>20)
}

// errSumStop stops the listing once a bound is passed.
var errSumStop = errors.New("tree sum: past the bound")

// sumWriter adds up `git ls-tree -z --format=%(objectsize)` records as they
// arrive ("-" for a tree or submodule entry).
type sumWriter struct {
	size     TreeSize
	partial  []byte
	maxBytes int64
	maxFiles int64
	bad      string
}

func (w *sumWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			w.partial = append(w.partial, p...)
			break
		}
		rec := p[:i]
		if len(w.partial) > 0 {
			rec = append(w.partial, rec...)
			w.partial = w.partial[:0]
		}
		p = p[i+1:]
		w.size.Entries++
		if string(rec) != "-" {
			v, err := strconv.ParseInt(string(rec), 10, 64)
			if err != nil {
				w.bad = string(rec)
				return n, errSumStop
			}
			w.size.Bytes += v
		}
		if w.over() {
			return n, errSumStop
		}
	}
	return n, nil
}

func (w *sumWriter) over() bool {
	return (w.maxBytes > 0 && w.size.Bytes > w.maxBytes) || (w.maxFiles > 0 && w.size.Entries > w.maxFiles)
}

// sumTree sums rev's tree in the repository dir, stopping once past
// maxBytes or maxFiles (0: no bound). Only object headers are read, so a
// blob of any size costs nothing to count.
func (g *Git) sumTree(ctx context.Context, dir, rev string, maxBytes, maxFiles int64) (TreeSize, error) {
	w := &sumWriter{maxBytes: maxBytes, maxFiles: maxFiles}
	_, err := g.run(ctx, dir, cmdOpts{stdout: w}, "ls-tree", "-r", "-t", "-z", "--format=%(objectsize)", rev+"^{tree}", "--")
	switch {
	case w.bad != "":
		return w.size, fmt.Errorf("sum the tree of %s: git listed %q as a size", shortID(rev), w.bad)
	case w.over():
		return w.size, nil // git stopped when the sum stopped reading
	case err != nil:
		return w.size, fmt.Errorf("sum the tree of %s: %w", shortID(rev), err)
	}
	return w.size, nil
}

// TreeSize sums rev's whole tree in the repository dir.
func (g *Git) TreeSize(ctx context.Context, dir, rev string) (TreeSize, error) {
	return g.sumTree(ctx, dir, rev, 0, 0)
}

// checkTree refuses rev's tree when it passes the workspace bounds
// (*TreeTooBigError naming what it is); nil within them or unbounded.
func (g *Git) checkTree(ctx context.Context, dir, rev, what string) error {
	maxB, maxF := g.cfg.MaxTreeBytes, g.cfg.MaxTreeFiles
	if maxB <= 0 && maxF <= 0 || g.inBounds.holds(rev) {
		return nil
	}
	size, err := g.sumTree(ctx, dir, rev, maxB, maxF)
	if err != nil {
		return err
	}
	e := &TreeTooBigError{What: what, Rev: rev, Size: size}
	switch {
	case maxB > 0 && size.Bytes > maxB:
		e.Bound, e.Limit = SettingWorkspaceMaxMB, maxB
	case maxF > 0 && size.Entries > maxF:
		e.Bound, e.Limit = SettingWorkspaceMaxFiles, maxF
	default:
		g.inBounds.add(rev)
		return nil
	}
	return e
}

// boundedIDs are the commits and trees a sum found within the workspace
// bounds. An object id names the same tree forever, so the queue's next
// step (whose integration head is the tip the last one summed) need not
// read it again.
type boundedIDs struct {
	mu  sync.Mutex
	ids map[string]bool
}

// maxBoundedIDs bounds the set; when full it starts again empty.
const maxBoundedIDs = 4096

func (b *boundedIDs) holds(rev string) bool {
	if b == nil || !isObjectID(rev) {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[rev]
}

func (b *boundedIDs) add(rev string) {
	if b == nil || !isObjectID(rev) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil || len(b.ids) >= maxBoundedIDs {
		b.ids = map[string]bool{}
	}
	b.ids[rev] = true
}

// alias records that commit's tree is tree, already found within the
// bounds.
func (b *boundedIDs) alias(tree, commit string) {
	if b.holds(tree) {
		b.add(commit)
	}
}

// TreeFault reports whether err says the tree itself is at fault: too big
// to materialise, or git killed for passing its memory bound on it.
func TreeFault(err error) bool {
	var big *TreeTooBigError
	var mem *MemoryBoundError
	return errors.As(err, &big) || errors.As(err, &mem)
}

func runesPrefix(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkGitVersion refuses a git older than 2.38, which has no
// `merge-tree --write-tree`: a merge's tree could not be summed before it
// is written.
func checkGitVersion() error {
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		return fmt.Errorf("run git version: %w", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimSpace(string(out)), "git version "), "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("git version printed %q", strings.TrimSpace(string(out)))
	}
	if major < 2 || major == 2 && minor < 38 {
		return fmt.Errorf("the worker's git is %d.%d; it needs git 2.38 or later (merge-tree --write-tree sums a merge's tree before it is written)", major, minor)
	}
	return nil
}
