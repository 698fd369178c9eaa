package starterapp

import (
	"reflect"
	"testing"

	"github.com/ralph-temporal/ralph/workflows"
)

// --if-running attach joins only the run that was asked for: another
// objective, workspace, round cap, verify command or budget is named
// (issue 42: an edited objective followed the old run, exit 0).
func TestAttachNamesWhatTheOpenRunDoesOtherwise(t *testing.T) {
	ten, five, sixty := 10, 5, 60
	open := workflows.Status{Objective: "fix the tests", Workspace: "myrepo", MaxRounds: 10, VerifyCommand: "go test ./...",
		Budget: workflows.BudgetStatus{MaxTokens: &ten}}
	same := workflows.Input{Objective: " fix the tests\n", Workspace: "myrepo", MaxRounds: &ten, VerifyCommand: "go test ./...", MaxTokens: &ten}
	if d := attachDiffers(same, "ralph-myrepo", open); len(d) != 0 {
		t.Fatalf("the same input differs in %v", d)
	}
	// What the asked input leaves to the deployment is not compared.
	if d := attachDiffers(workflows.Input{Objective: "fix the tests", Workspace: "myrepo"}, "ralph-myrepo", open); len(d) != 0 {
		t.Fatalf("defaults differ in %v", d)
	}
	other := workflows.Input{Objective: "fix the build", MaxRounds: &five, VerifyCommand: "make", MaxTokens: &five, MaxMinutes: &sixty}
	want := []string{"objective", "maxRounds", "workspace", "verifyCommand", "maxTokens", "maxMinutes"}
	if d := attachDiffers(other, "ralph-myrepo", open); !reflect.DeepEqual(d, want) {
		t.Fatalf("differs in %v, want %v", d, want)
	}
	// No workspace asked: the workflow id's default workspace is compared.
	if d := attachDiffers(workflows.Input{Objective: "fix the tests"}, "ralph-myrepo", open); !reflect.DeepEqual(d, []string{"workspace"}) {
		t.Fatalf("differs in %v", d)
	}
}
