package gitws

import "sync"

// wroteTrees remembers the tree of each merge commit this worker wrote
// (MergeStack), so that the next merge onto it can tell from merge-tree's
// result alone that a task is not merged there yet: a commit already in
// tip's history merges onto tip as tip's own tree. Only ids git printed to
// the worker are kept, in memory; a tip it did not write (another worker's)
// is asked of git as before. A candidate's commit and a person's edits
// committed before candidates (CommitEdits) are kept too: the next round's
// base, whose tree treeOf then need not ask git.
type wroteTrees struct {
	mu    sync.Mutex
	trees map[string]string // commit → tree
}

// maxWroteTrees bounds the map; when full it starts again empty.
const maxWroteTrees = 1024

func (w *wroteTrees) add(commit, tree string) {
	if w == nil || !isObjectID(commit) || !isObjectID(tree) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.trees == nil || len(w.trees) >= maxWroteTrees {
		w.trees = map[string]string{}
	}
	w.trees[commit] = tree
}

func (w *wroteTrees) tree(commit string) (string, bool) {
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tree, ok := w.trees[commit]
	return tree, ok
}
