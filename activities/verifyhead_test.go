package activities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// MergeTask's verifyHead runs the verify command on the integration head of a real
// local-mode campaign (the branch created from its base on first use): a
// red head fails with its output, a passing one passes, and a command that
// rewrites a protected file fails naming it, the branch left where it was.
func TestVerifyHeadRunsOnTheIntegrationHead(t *testing.T) {
	f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeOff})
	seed := t.TempDir()
	testkit.Git(t, seed, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(seed, "check.sh"), "echo checking; test -f done.txt\n")
	writeFile(t, filepath.Join(seed, "fix.sh"), "echo 'exit 0' > check.sh\n")
	testkit.Git(t, seed, "add", "-A")
	testkit.Git(t, seed, "commit", "-q", "-m", "a check that needs done.txt")
	bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "c1", "integration.git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, seed, "clone", "-q", "--bare", seed, bare)
	line := activities.CampaignLine{Campaign: "c1", Branch: "ralph/campaigns/c1/integration", Base: "main"}
	verify := func(command string, protected ...string) activities.MergeTaskOutput {
		t.Helper()
		val, err := f.env.ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{Line: line, VerifyCommand: command, ProtectedPaths: protected, VerifyHead: true})
		if err != nil {
			t.Fatal(err)
		}
		var out activities.MergeTaskOutput
		if err := val.Get(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	main := testkit.Git(t, seed, "rev-parse", "HEAD")
	red := verify("sh check.sh")
	if red.Head != main || red.Outcome != activities.MergeRed || red.Verification.Passed() || red.Verification.ExitCode != 1 || !strings.Contains(red.Verification.Output, "checking") {
		t.Fatalf("red head: %+v", red)
	}
	if got := testkit.Git(t, bare, "rev-parse", "refs/heads/"+line.Branch); got != main {
		t.Fatalf("the integration branch was created at %s, want the base %s", got, main)
	}

	writeFile(t, filepath.Join(seed, "done.txt"), "done\n")
	testkit.Git(t, seed, "add", "-A")
	testkit.Git(t, seed, "commit", "-q", "-m", "done")
	next := testkit.Git(t, seed, "rev-parse", "HEAD")
	testkit.Git(t, seed, "push", "-q", bare, "HEAD:refs/heads/"+line.Branch)
	if green := verify("sh check.sh"); green.Head != next || green.Outcome != activities.MergeVerified || !green.Verification.Passed() {
		t.Fatalf("green head: %+v", green)
	}

	gamed := verify("sh fix.sh; sh check.sh", "check.sh")
	if gamed.Verification.Passed() || gamed.Verification.ProtectedChanged != "check.sh" {
		t.Fatalf("a verify that rewrote the protected check passed: %+v", gamed.Verification)
	}
	if got := testkit.Git(t, bare, "rev-parse", "refs/heads/"+line.Branch); got != next {
		t.Fatalf("the integration branch moved to %s", got)
	}
	if _, err := os.Stat(filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "c1", "merge")); !os.IsNotExist(err) {
		t.Fatalf("the scratch clone was left behind: %v", err)
	}
}
