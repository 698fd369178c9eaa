package adversarial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/gitws"
)

// SPEC 38: a candidate looking, from its sandbox, for a sibling
// candidate's work, an abandoned attempt's leftovers and the workspace's
// host path in its own .git finds none of them.
func TestCandidateFindsNoSiblingOrHostPath(t *testing.T) {
	ctx := context.Background()
	j := New(t)
	cfg := gitws.DefaultConfig()
	cfg.Mode = gitws.ModeLocal
	g, err := gitws.New(cfg, filepath.Join(j.Base, "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	r := gitws.Round{WorkflowID: "wf", Workspace: "ws", Round: 1, MaxRounds: 3, Attempt: 1}
	p, err := g.Prepare(ctx, j.Dir, r)
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(j.Dir, "base.txt"), "the base\n")
	cp, _, err := g.Checkpoint(ctx, j.Dir, p, r, gitws.Handoff{SessionID: "s", Status: "continue", Summary: "base"})
	if err != nil {
		t.Fatal(err)
	}
	// A lost attempt of round 2 left the canary uncommitted: saved on an
	// abandoned ref of the workspace's repository.
	WriteFile(t, filepath.Join(j.Dir, "lost.txt"), Canary)
	r.Round, r.Attempt, r.Checkpoint = 2, 2, cp.Commit
	p, err = g.Prepare(ctx, j.Dir, r)
	if err != nil || p.AbandonedCommit == "" {
		t.Fatalf("the lost attempt's leftovers: %+v %v", p, err)
	}
	cands := filepath.Join(j.Root, ".ralph-candidates", "wf")
	sibling := filepath.Join(cands, "round-2-1")
	if err := g.StartCandidate(ctx, j.Dir, sibling, p.Base); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(sibling, "mine.txt"), Canary)
	scp, _, err := g.FinishCandidate(ctx, j.Dir, sibling, p.Base, gitws.CandidateRef("wf", 2, 1), r,
		gitws.Handoff{SessionID: "s1", Status: "continue", Summary: "sibling"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cands, "round-2-2")
	if err := g.StartCandidate(ctx, j.Dir, dir, p.Base); err != nil {
		t.Fatal(err)
	}

	git := "git -c safe.directory='*' "
	res := Run(t, j.Open(dir), fmt.Sprintf(`%[1]srev-parse HEAD
for id in %[2]s %[3]s; do %[1]scat-file -e $id 2>/dev/null && echo "HOLDS $id"; done
%[1]sfor-each-ref --format='%%(refname)'
grep -r -l -F %[4]q .git && echo "NAMES THE WORKSPACE"
grep -r -l -F %[5]q .git && echo "NAMES THE ROOT"
%[1]slog --all --format=%%s
cat ../round-2-1/mine.txt %[4]s/lost.txt %[4]s/.git/config 2>&1
%[1]scat-file --batch-all-objects --batch 2>&1 | grep -a -c %[6]q
true`, git, scp.Commit, p.AbandonedCommit, j.Dir, j.Root, Canary))
	out := res.Output
	if !strings.HasPrefix(out, p.Base+"\n") {
		t.Fatalf("git in the candidate's sandbox does not see the base %s:\n%s", p.Base, out)
	}
	for _, bad := range []string{"HOLDS", "NAMES THE", "candidates/", "abandoned", "sibling"} {
		if strings.Contains(out, bad) {
			t.Errorf("the candidate found %q:\n%s", bad, out)
		}
	}
	NoCanary(t, out)
	if !strings.HasSuffix(strings.TrimSpace(out), "\n0") {
		t.Errorf("the candidate's objects hold the canary (count last):\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, ".git", "info", "attributes")); err != nil {
		t.Errorf("the workspace reads no worker attributes: %v", err)
	}
}
