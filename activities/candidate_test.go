package activities_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

func candidateInput(k int) activities.RoundInput {
	in := roundInput("repo")
	in.Candidate = &activities.CandidateSpec{Number: k, Of: 2} // the worker's default agent and model
	return in
}

// A candidate of the worker's defaults that hands off names the resolved
// provider and model in its output.
func TestCandidateOutputNamesTheDefaultProviderAndModel(t *testing.T) {
	f := newFixture(t, writes("notes.txt"), context.Background(), func(c *activities.Config) { c.Git.Mode = gitws.ModeLocal })
	out, err := f.run(candidateInput(1))
	if err != nil {
		t.Fatal(err)
	}
	if w := out.Candidate; w == nil || w.Agent != "builtin" || w.Model != "fake-model" || w.Ref == "" {
		t.Fatalf("candidate work = %+v, want provider builtin and model fake-model", out.Candidate)
	}
}

// A candidate whose session fails after writing keeps what it wrote on its
// ref in the workspace repository, and its failure says who ran it and
// where its work is; the workspace itself is untouched.
func TestFailedCandidateKeepsItsWorkOnItsRef(t *testing.T) {
	script := fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "half/done.txt", "content": "half of it\n"})),
		fakeopenai.Status(http.StatusUnauthorized, "Incorrect API key provided"),
	}}
	f := newFixture(t, script, context.Background(), func(c *activities.Config) { c.Git.Mode = gitws.ModeLocal })
	_, err := f.run(candidateInput(2))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeChildFailed {
		t.Fatalf("error = %v, want a ChildFailed", err)
	}
	var d activities.FailureDetails
	if err := appErr.Details(&d); err != nil {
		t.Fatal(err)
	}
	c := d.Candidate
	if c == nil || c.Provider != "builtin" || c.Model != "fake-model" || !strings.HasPrefix(c.Ref, gitws.CandidateRefPrefix) || !strings.HasSuffix(c.Ref, "/round-2/2") {
		t.Fatalf("failure details' candidate = %+v, want builtin, fake-model and its ref", c)
	}
	dir := filepath.Join(f.cfg.WorkspaceRoot, "repo")
	if got := testkit.Git(t, dir, "show", c.Ref+":half/done.txt"); got != "half of it" {
		t.Fatalf("half/done.txt on %s = %q", c.Ref, got)
	}
	if got, head := testkit.Git(t, dir, "rev-parse", c.Ref+"^"), testkit.Git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("the kept commit's parent %s, want the round's base %s", got, head)
	}
	if msg := testkit.Git(t, dir, "log", "-1", "--format=%s", c.Ref); msg != "ralph: round 2 candidate 2 failed: what its tree held" {
		t.Fatalf("kept commit's subject = %q", msg)
	}
	if files := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, "half/done.txt") {
		t.Fatalf("the failed candidate's file reached the workspace's branch: %s", files)
	}
}

// A worker that can run candidates records the defaults a candidate runs
// with: RALPH_AGENT, and each provider's model (RALPH_AGENT_MODEL for a
// CLI, RALPH_MODEL for the builtin agent).
func TestResolveLimitsRecordsTheCandidateDefaults(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{}, context.Background(), func(c *activities.Config) {
		c.Git.Mode = gitws.ModeLocal
		c.Limits.CandidateAgents = []string{"builtin", "codex"}
		c.Agents.Model = "cli-model"
	})
	val, err := f.env.ExecuteLocalActivity(f.acts.ResolveLimits)
	if err != nil {
		t.Fatal(err)
	}
	var got activities.Limits
	if err := val.Get(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"builtin": "fake-model", "codex": "cli-model"}
	if got.CandidateDefaultAgent != "builtin" || len(got.CandidateDefaultModels) != 2 ||
		got.CandidateDefaultModels["builtin"] != want["builtin"] || got.CandidateDefaultModels["codex"] != want["codex"] {
		t.Fatalf("candidate defaults %q %v, want builtin %v", got.CandidateDefaultAgent, got.CandidateDefaultModels, want)
	}
}
