package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// Markers that exist in exactly one round's conversation.
const (
	r1ToolMarker = "R1-TOOL-OUTPUT-5d1c"
	r1FileMarker = "R1-FILE-CONTENT-88ab"
	handoff1     = "HANDOFF-ONE-a91f"
	handoff2     = "HANDOFF-TWO-c3e0"
)

// threeRounds: round 1 writes a file and runs a command, round 2 reads the
// file back through tools, round 3 completes.
func threeRounds(tn turn) fakeopenai.Response {
	switch {
	case tn.Round() == 1 && tn.Step() == 0:
		return tool("write_file", map[string]string{"path": "notes/plan.txt", "content": r1FileMarker + "\n"})
	case tn.Round() == 1 && tn.Step() == 1:
		return tool("run_command", map[string]any{"command": "echo " + r1ToolMarker})
	case tn.Round() == 1:
		return submit(continueArgs("wrote the plan "+handoff1, "read notes/plan.txt"))
	case tn.Round() == 2 && tn.Step() == 0:
		return tool("read_file", map[string]string{"path": "notes/plan.txt"})
	case tn.Round() == 2:
		if !strings.Contains(tn.LastToolOutput(), r1FileMarker) {
			return fakeopenai.Text("round 1's file is missing")
		}
		return submit(continueArgs("read the plan "+handoff2, "finish"))
	default:
		return submit(completeArgs("done", "notes/plan.txt holds the plan"))
	}
}

func TestRealStackFreshSessionsShareOnlyWorkspaceAndReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(threeRounds))
	e.startWorker()
	id := "fresh-sessions"
	res, err := e.result(e.start(id, `{"objective":"keep a plan","workspace":"fresh"}`))
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v", res)
	}

	st := e.status(id)
	seen := map[string]bool{}
	for _, r := range st.Rounds {
		if r.SessionID == "" || seen[r.SessionID] {
			t.Fatalf("round %d session id %q is empty or reused: %+v", r.Round, r.SessionID, st.Rounds)
		}
		seen[r.SessionID] = true
	}
	if len(seen) != 3 {
		t.Fatalf("want 3 distinct sessions, status = %+v", st)
	}
	if files := e.transcripts(); len(files) != 3 {
		t.Fatalf("transcripts = %v, want one per round", files)
	}

	// Group requests by round and check what each round could see.
	byRound := map[int][]string{}
	for _, req := range e.model.Requests() {
		byRound[req.Round()] = append(byRound[req.Round()], string(req.Raw))
	}
	if len(byRound[1]) != 3 || len(byRound[2]) != 2 || len(byRound[3]) != 1 {
		t.Fatalf("requests per round: 1:%d 2:%d 3:%d", len(byRound[1]), len(byRound[2]), len(byRound[3]))
	}
	for round := 2; round <= 3; round++ {
		for _, body := range byRound[round] {
			if strings.Contains(body, r1ToolMarker) {
				t.Errorf("round %d saw round 1's tool output", round)
			}
		}
	}
	if !strings.Contains(byRound[2][0], handoff1) {
		t.Error("round 2's first request lacks round 1's report")
	}
	if strings.Contains(byRound[2][0], r1FileMarker) {
		t.Error("round 2's prompt carries round 1's file content; it must come only through tools")
	}
	if !strings.Contains(byRound[2][1], r1FileMarker) {
		t.Error("round 2 did not read round 1's file through read_file")
	}
	if strings.Contains(byRound[3][0], handoff1) || !strings.Contains(byRound[3][0], handoff2) {
		t.Error("round 3 must see round 2's report and not round 1's")
	}
	// A valid report ends the session: round 1's report is never sent back
	// to round 1's model, so it reaches a model only as round 2's handoff.
	for _, body := range byRound[1] {
		if strings.Contains(body, handoff1) {
			t.Error("a request of round 1 carries round 1's own report")
		}
	}
	data, err := os.ReadFile(filepath.Join(e.root, "fresh", "notes", "plan.txt"))
	if err != nil || !strings.Contains(string(data), r1FileMarker) {
		t.Fatalf("workspace file: %q, %v", data, err)
	}
	e.noKeyAnywhere(id)
}

func TestRealStackOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		p := tn.Prompt()
		switch {
		case strings.Contains(p, "objective-blocked"):
			return submit(fakeopenai.ReportArgs{Status: "blocked", Summary: "cannot go on", Evidence: []string{}, NextSteps: []string{}, Blocker: "needs a database password"})
		case strings.Contains(p, "objective-budget"):
			return submit(continueArgs(fmt.Sprintf("round %d", tn.Round()), "more"))
		case strings.Contains(p, "objective-fail-round-2") && tn.Round() == 2:
			return fakeopenai.Status(401, "invalid api key")
		case strings.Contains(p, "objective-fail-round-2"):
			return submit(continueArgs("round one kept", "go on"))
		case strings.Contains(p, "objective-invalid-report"):
			return submit(fakeopenai.ReportArgs{Status: "complete", Summary: "done", Evidence: []string{}, NextSteps: []string{}})
		case strings.Contains(p, "objective-oversized-report"):
			return submit(continueArgs(strings.Repeat("x", 400), "more"))
		default:
			return submit(completeArgs("done", "it works"))
		}
	}), "RALPH_MAX_HANDOFF_CHARS=300")
	e.startWorker()

	tests := []struct {
		id, input  string
		wantStatus string
		wantRounds int
		wantErr    string
		wantRound  int
	}{
		{"outcome-complete", `{"objective":"objective-complete"}`, report.OutcomeComplete, 1, "", 0},
		{"outcome-blocked", `{"objective":"objective-blocked"}`, report.OutcomeBlocked, 1, "", 0},
		{"outcome-budget", `{"objective":"objective-budget","maxRounds":2}`, report.OutcomeBudgetLimited, 2, "", 0},
		{"outcome-round-failed", `{"objective":"objective-fail-round-2"}`, "", 0, workflows.ErrTypeRoundFailed, 2},
		{"outcome-invalid-report", `{"objective":"objective-invalid-report"}`, "", 0, workflows.ErrTypeRoundFailed, 1},
		{"outcome-oversized-report", `{"objective":"objective-oversized-report"}`, "", 0, workflows.ErrTypeRoundFailed, 1},
		{"input-unknown-field", `{"objective":"x","model":"other"}`, "", 0, workflows.ErrTypeInvalidInput, 0},
		{"input-objective", `{"objective":"  "}`, "", 0, workflows.ErrTypeInvalidInput, 0},
		{"input-maxrounds-float", `{"objective":"x","maxRounds":2.5}`, "", 0, workflows.ErrTypeInvalidInput, 0},
		{"input-maxrounds-over", `{"objective":"x","maxRounds":11}`, "", 0, workflows.ErrTypeInvalidInput, 0},
		{"input-workspace-abs", `{"objective":"x","workspace":"/tmp/x"}`, "", 0, workflows.ErrTypeInvalidInput, 0},
		{"input-workspace-dotdot", `{"objective":"x","workspace":"../x"}`, "", 0, workflows.ErrTypeInvalidInput, 0},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			res, err := e.result(e.start(tt.id, tt.input))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("run failed: %v", err)
				}
				if res.Status != tt.wantStatus || res.RoundsStarted != tt.wantRounds {
					t.Fatalf("result = %+v", res)
				}
				return
			}
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != tt.wantErr {
				t.Fatalf("error = %v, want %s", err, tt.wantErr)
			}
			if tt.wantErr == workflows.ErrTypeInvalidInput {
				field := map[string]string{"input-unknown-field": "model", "input-objective": "objective",
					"input-maxrounds-float": "maxRounds", "input-maxrounds-over": "maxRounds",
					"input-workspace-abs": "workspace", "input-workspace-dotdot": "workspace"}[tt.id]
				if !strings.Contains(appErr.Error(), field+":") {
					t.Fatalf("InvalidInput %q does not name %s", appErr.Error(), field)
				}
				return
			}
			var details workflows.RoundFailedDetails
			if err := appErr.Details(&details); err != nil {
				t.Fatal(err)
			}
			if details.FailedRound != tt.wantRound {
				t.Fatalf("failedRound = %d, want %d", details.FailedRound, tt.wantRound)
			}
			if tt.wantRound == 2 && (details.LastHandoff == nil || details.LastHandoff.Summary != "round one kept") {
				t.Fatalf("lastHandoff = %+v", details.LastHandoff)
			}
			if tt.wantRound == 1 && details.LastHandoff != nil {
				t.Fatalf("round 1 failure has a handoff %+v", details.LastHandoff)
			}
			switch tt.id {
			case "outcome-invalid-report":
				if !strings.Contains(err.Error(), "evidence") {
					t.Errorf("error %q does not name the broken rule", err)
				}
			case "outcome-oversized-report":
				if !strings.Contains(err.Error(), "over the cap") {
					t.Errorf("error %q does not name the size cap", err)
				}
			}
		})
	}
	e.noKeyAnywhere("outcome-round-failed")
}
