package report

import (
	"strings"
	"testing"
)

func TestDecodeAndValidateReview(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		`{"verdict":"approve","summary":"ok"}`:                                               `missing the required key "findings"`,
		`{"verdict":"approve","summary":"ok","findings":null}`:                               `"findings" is null`,
		`{"verdict":"approve","summary":"ok","findings":[],"sessionId":"x"}`:                 `unknown key "sessionId"`,
		`{"verdict":"approve","summary":"ok","findings":[1]}`:                                "wrong type",
		`{"verdict":"approve","summary":"ok","findings":[]} {}`:                              "not a JSON object",
		`{"verdict":"maybe","summary":"ok","findings":[]}`:                                   "verdict: must be approve or revise",
		`{"verdict":"revise","summary":"ok","findings":[]}`:                                  "at least one finding",
		`{"verdict":"revise","summary":" ok","findings":["x"]}`:                              "summary",
		`{"verdict":"revise","summary":"ok","findings":[""]}`:                                "findings[0]",
		`{"verdict":"revise","summary":"ok","findings":["` + strings.Repeat("é", 80) + `"]}`: "over the limit of 100",
	}
	for in, want := range bad {
		r, err := DecodeReview([]byte(in))
		if err == nil {
			err = ValidateReview(r, 100)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	r, err := DecodeReview([]byte(`{"verdict":"revise","summary":"Tests are skipped.","findings":["Unskip test_add"]}`))
	if err != nil || ValidateReview(r, 100) != nil {
		t.Fatalf("valid review refused: %v", err)
	}
	h := RevisionHandoff(Report{Status: StatusComplete, Summary: "done", Evidence: []string{"tests pass"}, NextSteps: []string{}}, r)
	want := Report{Status: StatusContinue, Summary: "A reviewer asked for revisions: Tests are skipped.", Evidence: []string{"tests pass"},
		NextSteps: []string{"Unskip test_add"}, Blocker: ""}
	if err := Validate(h, 1000); err != nil || h.Summary != want.Summary || h.Evidence[0] != "tests pass" || h.NextSteps[0] != "Unskip test_add" {
		t.Fatalf("handoff %+v: %v", h, err)
	}
}

func TestHeadlineNamesTheReviewer(t *testing.T) {
	t.Parallel()
	rv := &Review{Verdict: VerdictApprove, Summary: "Meets the objective.", Findings: []string{"minor: typo"}, Model: "judge-1", SessionID: "s1"}
	text, err := ResultText(Outcome{Status: OutcomeComplete, Rounds: 2, Review: rv,
		Report: &Report{Status: StatusComplete, Summary: "done", Evidence: []string{"e"}, NextSteps: []string{}}}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(text, "\n")
	if first != "An independent reviewer (judge-1) approved; a worker reported completion after 2 rounds." {
		t.Fatalf("first line %q", first)
	}
	if !strings.Contains(text, "Independent review (judge-1, session s1): approve: Meets the objective.\n- minor: typo") {
		t.Fatalf("text %q", text)
	}
	head, _ := Headline(Outcome{Status: OutcomeComplete, Rounds: 1, Review: rv, Verification: &Verification{Command: "make test"}})
	if head != "An independent reviewer (judge-1) approved; a worker reported completion after 1 round; the verify command passed (exit 0): make test" {
		t.Fatalf("headline %q", head)
	}
}
