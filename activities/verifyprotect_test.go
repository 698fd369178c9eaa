package activities_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/report"
)

// The attack of section 38's "verify is verify everywhere": the protected
// test fails; an unprotected build.sh the task added rewrites it to exit 0
// and the verify command runs both.
const (
	realTest        = "echo the real test fails; exit 1\n"
	gamedTest       = "exit 0\n"
	rewritingBuild  = "echo 'exit 0' > test.sh\n"
	buildThenTest   = "sh build.sh; sh test.sh"
	integrationRef  = "refs/heads/ralph/campaigns/c1/integration"
	changedProtects = "verify failed: the verify command changed protected paths (restored after it): test.sh"
)

// protection is how one case protects test.sh: through the input's patterns
// or the worker's RALPH_PROTECTED_PATHS, under bubblewrap (the read-only
// mount refuses the write) or without a sandbox (the check after the
// command finds the change).
type protection struct {
	name    string
	mode    string
	input   []string
	worker  []string
	refused func(t *testing.T, v *report.Verification)
}

var protections = []protection{
	{name: "input patterns, bubblewrap", mode: sandbox.ModeBwrap, input: []string{"test.sh"},
		refused: func(t *testing.T, v *report.Verification) {
			if !strings.Contains(v.Output, "test.sh: Read-only file system") || v.ProtectedChanged != "" || v.ExitCode == 0 {
				t.Errorf("want build.sh refused by the read-only mount and the real test failing: %+v", v)
			}
		}},
	{name: "worker patterns, no sandbox", mode: sandbox.ModeOff, worker: []string{"*.sh", "!build.sh"},
		refused: func(t *testing.T, v *report.Verification) {
			if v.ExitCode != 0 || v.ProtectedChanged != "test.sh" || !strings.HasSuffix(v.Output, changedProtects+"]") {
				t.Errorf("want the command's exit 0 failed by the check after it, naming test.sh: %+v", v)
			}
		}},
}

func protectedFixture(t *testing.T, script fakeopenai.Script, p protection) *fixture {
	return newFixture(t, script, context.Background(), func(c *activities.Config) {
		c.Git.Mode = gitws.ModeLocal
		c.Sandbox.Mode = p.mode
		c.Limits.ProtectedPaths = p.worker
	})
}

// gamedMerge makes campaign c1 (local mode): an integration branch whose
// test.sh fails, and task t1, whose branch adds build.sh. It returns the
// merge's input and the integration head before it.
func gamedMerge(t *testing.T, f *fixture, protect []string) (activities.MergeTaskInput, string) {
	seed := t.TempDir()
	testkit.Git(t, seed, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(seed, "test.sh"), realTest)
	testkit.Git(t, seed, "add", "-A")
	testkit.Git(t, seed, "commit", "-q", "-m", "the real test")
	bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "c1", "integration.git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, seed, "clone", "-q", "--bare", seed, bare)

	line := activities.CampaignLine{Campaign: "c1", Branch: "ralph/campaigns/c1/integration", Base: "main"}
	task := activities.CampaignTask{ID: "t1", Workspace: activities.TaskWorkspace("c1", "t1"), Go: 1}
	val, err := f.env.ExecuteActivity(activities.PrepareTaskName, activities.PrepareTaskInput{Line: line, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	var prep activities.PrepareTaskOutput
	if err := val.Get(&prep); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.cfg.WorkspaceRoot, task.Workspace)
	writeFile(t, filepath.Join(dir, "build.sh"), rewritingBuild)
	testkit.Git(t, dir, "add", "build.sh")
	testkit.Git(t, dir, "commit", "-q", "-m", "a build step")
	task.Commit = testkit.Git(t, dir, "rev-parse", "HEAD")
	return activities.MergeTaskInput{Line: line, Tasks: []activities.CampaignTask{task}, VerifyCommand: buildThenTest,
		ProtectedPaths: protect}, prep.IntegrationHead
}

func (f *fixture) merge(in activities.MergeTaskInput) activities.MergeTaskOutput {
	f.t.Helper()
	val, err := f.env.ExecuteActivity(activities.MergeTaskName, in)
	if err != nil {
		f.t.Fatalf("MergeTask: %v", err)
	}
	var out activities.MergeTaskOutput
	if err := val.Get(&out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// The merge verify of a campaign protects the task's paths and the worker's
// like a round's verify: build.sh cannot make the protected test pass, the
// integration branch stays where it was, and no test.sh on the host reads
// exit 0. Unprotected, the same merge lands (the attack is real).
func TestMergeVerifyProtectsPaths(t *testing.T) {
	t.Run("unprotected lands", func(t *testing.T) {
		f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
		in, head := gamedMerge(t, f, nil)
		out := f.merge(in)
		bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "c1", "integration.git")
		if out.Outcome != activities.MergeLanded || testkit.Git(t, bare, "rev-parse", integrationRef) == head {
			t.Fatalf("the unprotected gamed merge did not land: %+v", out)
		}
	})
	for _, p := range protections {
		t.Run(p.name, func(t *testing.T) {
			f := protectedFixture(t, fakeopenai.Script{}, p)
			in, head := gamedMerge(t, f, p.input)
			out := f.merge(in)
			if out.Outcome != activities.MergeRed || out.Verification.Passed() {
				t.Fatalf("the gamed merge was not refused: %+v", out)
			}
			p.refused(t, out.Verification)
			bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "c1", "integration.git")
			if got := testkit.Git(t, bare, "rev-parse", integrationRef); got != head {
				t.Fatalf("the integration branch moved from %s to %s", head, got)
			}
			if got := testkit.Git(t, bare, "show", integrationRef+":test.sh"); got+"\n" != realTest {
				t.Fatalf("the integration branch's test.sh is %q", got)
			}
			noGamedTest(t, f.cfg.WorkspaceRoot)
		})
	}
	// A task's patterns added to its campaign's may pass 64: the merge still
	// protects every one (the last here) instead of refusing the input.
	t.Run("more than 64 patterns", func(t *testing.T) {
		patterns := make([]string, 0, 70)
		for i := range 69 {
			patterns = append(patterns, fmt.Sprintf("docs/%d.md", i))
		}
		f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
		in, head := gamedMerge(t, f, append(patterns, "test.sh"))
		out := f.merge(in)
		protections[0].refused(t, out.Verification)
		bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "c1", "integration.git")
		if out.Outcome != activities.MergeRed || testkit.Git(t, bare, "rev-parse", integrationRef) != head {
			t.Fatalf("the gamed merge under 70 patterns was not refused: %+v", out)
		}
	})
}

// Candidate scoring (RALPH_CANDIDATE_SCORE=verify) protects the run's paths
// and the worker's: a candidate whose build.sh rewrites the protected test
// scores as a failed verify, so it cannot win on that rule; unprotected it
// would have scored as passing.
func TestCandidateScoreProtectsPaths(t *testing.T) {
	script := fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "build.sh", "content": rewritingBuild}))
		}
		return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{Status: "continue", Summary: "Added a build step.",
			Evidence: []string{"build.sh is there"}, NextSteps: []string{"Make the test pass."}}))
	}}
	score := func(t *testing.T, p protection) (activities.RoundOutput, *fixture) {
		f := protectedFixture(t, script, p)
		dir := filepath.Join(f.cfg.WorkspaceRoot, "cand")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "test.sh"), realTest)
		in := roundInput("cand")
		in.VerifyCommand = buildThenTest
		if p.input != nil {
			in.ProtectedPaths = [][]string{p.input}
		}
		in.Candidate = &activities.CandidateSpec{Number: 1, Of: 2, ScoreVerify: true}
		out, err := f.run(in)
		if err != nil {
			t.Fatal(err)
		}
		if out.Report.Status != "continue" || out.Candidate == nil || out.Candidate.Verification == nil {
			t.Fatalf("round output %+v", out)
		}
		return out, f
	}
	t.Run("unprotected passes", func(t *testing.T) {
		out, _ := score(t, protection{mode: sandbox.ModeBwrap})
		if !out.Candidate.Verification.Passed() {
			t.Fatalf("the unprotected gamed score failed: %+v", out.Candidate.Verification)
		}
	})
	for _, p := range protections {
		t.Run(p.name, func(t *testing.T) {
			out, f := score(t, p)
			v := out.Candidate.Verification
			if v.Passed() {
				t.Fatalf("the gamed candidate scored as passing: %+v", v)
			}
			p.refused(t, v)
			dir := filepath.Join(f.cfg.WorkspaceRoot, "cand")
			if got := testkit.Git(t, dir, "show", out.Candidate.Ref+":test.sh"); got+"\n" != realTest {
				t.Fatalf("the candidate's kept commit holds test.sh = %q", got)
			}
			noGamedTest(t, f.cfg.WorkspaceRoot)
		})
	}
}

// noGamedTest fails when any test.sh under root reads exit 0.
func noGamedTest(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "test.sh" || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(data) == gamedTest {
			t.Errorf("%s reads %q on the host", path, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
