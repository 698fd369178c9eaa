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

func TestChoiceRules(t *testing.T) {
	numbers := []int{1, 3}
	for _, tt := range []struct {
		args, want string
	}{
		{`{"choice":3,"summary":"Three tests it.","findings":[]}`, ""},
		{`{"choice":2,"summary":"Two.","findings":[]}`, "choice: must be the number of a candidate (one of [1 3]); got 2"},
		{`{"choice":1,"summary":"One.","findings":[],"verdict":"approve"}`, `choice has the unknown key "verdict" (allowed: choice, summary, findings)`},
		{`{"summary":"One.","findings":[]}`, `choice is missing the required key "choice"`},
		{`{"choice":"1","summary":"One.","findings":[]}`, "choice has a field of the wrong type"},
		{`{"choice":1,"summary":" One.","findings":[]}`, "summary"},
		{`{"choice":1,"summary":"One.","findings":null}`, `choice is missing the required key "findings"`},
		{`{"choice":1,"summary":"` + strings.Repeat("x", 200) + `","findings":[]}`, "over the limit of 120"},
		{`[1]`, "choice is not a JSON object"},
	} {
		r, err := DecodeChoice([]byte(tt.args))
		if err == nil {
			err = ValidateChoice(r, numbers, 120)
		}
		switch {
		case tt.want == "" && (err != nil || r.Verdict != VerdictChoose || r.Choice != 3):
			t.Errorf("%s: %+v, %v", tt.args, r, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
