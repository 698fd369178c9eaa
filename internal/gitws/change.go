package gitws

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// PrepareReview makes dir hold the completing commit for a read-only
// reviewer: in local mode the work tree already does (only its safety is
// checked); in remote mode this worker's clone fetches and checks out the
// branch head, as a round would, and no attempt is left recorded (a
// reviewer writes nothing, so it leaves nothing to save).
func (g *Git) PrepareReview(ctx context.Context, dir string, r Round) error {
	if g.cfg.Mode != ModeRemote {
		return g.checkRepo(ctx, dir)
	}
	if _, err := g.Prepare(ctx, dir, r); err != nil {
		return err
	}
	return clearMarker(dir)
}

// Change is the diff stat and patch from base to commit, at most maxChars
// code points: a longer change is cut with a marker that says how much was
// left out. External diff drivers and text conversion never run (the
// workspace's .gitattributes could name programs), and the tree's attributes
// count for nothing (NeutralAttributes): a "-diff" hides no patch.
func (g *Git) Change(ctx context.Context, dir, base, commit string, maxChars int) (string, error) {
	if base == "" || commit == "" {
		return "", fmt.Errorf("the change needs a base and a commit (got %q..%q)", base, commit)
	}
	stat, err := g.run(ctx, dir, cmdOpts{}, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--stat=120", base, commit, "--")
	if err != nil {
		return "", fmt.Errorf("diff stat %s..%s: %w", base, commit, err)
	}
	patch, err := g.patch(ctx, dir, base, commit)
	if err != nil {
		return "", err
	}
	text := strings.TrimRight(stat, "\n") + "\n\n" + patch
	if strings.TrimSpace(stat) == "" {
		text = "(no change between the two commits)\n"
	}
	return CutChange(text, maxChars), nil
}

// patch is the patch from base to commit, every file as text (--text: a file
// made binary by a NUL byte shows its lines too). A patch git cannot make as
// text (a file over its 1 GiB diff limit, or a diff over the git bound's
// memory) is made again with binary files shown as binary.
func (g *Git) patch(ctx context.Context, dir, base, commit string) (string, error) {
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", base, commit, "--"}
	patch, err := g.run(ctx, dir, cmdOpts{}, append([]string{args[0], "--text"}, args[1:]...)...)
	if err != nil && ctx.Err() == nil {
		patch, err = g.run(ctx, dir, cmdOpts{}, args...)
	}
	if err != nil {
		return "", fmt.Errorf("diff %s..%s: %w", base, commit, err)
	}
	return patch, nil
}

// CutChange keeps the first maxChars code points of text, the marker
// included, when text is longer.
func CutChange(text string, maxChars int) string {
	total := utf8.RuneCountInString(text)
	if total <= maxChars {
		return text
	}
	const format = "\n… [diff cut: %d of %d characters shown]\n"
	// The widest marker (the kept count never has more digits than total).
	keep := maxChars - utf8.RuneCountInString(fmt.Sprintf(format, total, total))
	if keep <= 0 {
		return runes.Prefix(fmt.Sprintf(format, 0, total), maxChars)
	}
	return runes.Prefix(text, keep) + fmt.Sprintf(format, keep, total)
}
