package report

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func validContinue() Report {
	return Report{Status: StatusContinue, Summary: "wrote parser", Evidence: []string{}, NextSteps: []string{"add tests"}, Blocker: ""}
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		wantErr string
	}{
		{"valid", `{"status":"continue","summary":"s","evidence":[],"nextSteps":["n"],"blocker":""}`, ""},
		{"missing key", `{"status":"continue","summary":"s","evidence":[],"nextSteps":["n"]}`, `missing the required key "blocker"`},
		{"unknown key", `{"status":"continue","summary":"s","evidence":[],"nextSteps":["n"],"blocker":"","extra":1}`, `unknown key "extra"`},
		{"null list", `{"status":"continue","summary":"s","evidence":null,"nextSteps":["n"],"blocker":""}`, `"evidence" is null`},
		{"null string", `{"status":"continue","summary":null,"evidence":[],"nextSteps":["n"],"blocker":""}`, `"summary" is null`},
		{"wrong type", `{"status":"continue","summary":"s","evidence":"e","nextSteps":["n"],"blocker":""}`, "wrong type"},
		{"not an object", `["status"]`, "not a JSON object"},
		{"null", `null`, "is null"},
		{"trailing data", `{"status":"continue","summary":"s","evidence":[],"nextSteps":["n"],"blocker":""} {}`, "not a JSON object"},
		{"not json", `status: continue`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Decode([]byte(tt.input))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if r.Status != StatusContinue || r.NextSteps[0] != "n" || r.Evidence == nil {
					t.Fatalf("decoded %+v", r)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Decode error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mutate    func(*Report)
		wantField string
	}{
		{"valid continue", func(r *Report) {}, ""},
		{"valid complete", func(r *Report) {
			r.Status, r.Evidence, r.NextSteps = StatusComplete, []string{"go test ./... passes"}, []string{}
		}, ""},
		{"valid blocked", func(r *Report) { r.Status, r.Blocker = StatusBlocked, "needs an API key" }, ""},
		{"blocked may keep next steps", func(r *Report) { r.Status, r.Blocker = StatusBlocked, "no network" }, ""},
		{"unknown status", func(r *Report) { r.Status = "done" }, "status"},
		{"empty status", func(r *Report) { r.Status = "" }, "status"},
		{"empty summary", func(r *Report) { r.Summary = "" }, "summary"},
		{"untrimmed summary", func(r *Report) { r.Summary = " wrote parser" }, "summary"},
		{"summary trailing newline", func(r *Report) { r.Summary = "wrote parser\n" }, "summary"},
		{"null evidence", func(r *Report) { r.Evidence = nil }, "evidence"},
		{"null nextSteps", func(r *Report) { r.NextSteps = nil }, "nextSteps"},
		{"empty evidence item", func(r *Report) { r.Evidence = []string{"ok", ""} }, "evidence[1]"},
		{"untrimmed evidence item", func(r *Report) { r.Evidence = []string{"ok\t"} }, "evidence[0]"},
		{"empty next step", func(r *Report) { r.NextSteps = []string{""} }, "nextSteps[0]"},
		{"untrimmed next step", func(r *Report) { r.NextSteps = []string{"a", " b"} }, "nextSteps[1]"},
		{"untrimmed blocker", func(r *Report) { r.Status, r.Blocker = StatusBlocked, "x " }, "blocker"},
		{"whitespace-only blocker", func(r *Report) { r.Status, r.Blocker = StatusBlocked, " " }, "blocker"},
		{"continue without next steps", func(r *Report) { r.NextSteps = []string{} }, "nextSteps"},
		{"continue with blocker", func(r *Report) { r.Blocker = "stuck" }, "blocker"},
		{"complete without evidence", func(r *Report) {
			r.Status, r.NextSteps = StatusComplete, []string{}
		}, "evidence"},
		{"complete with next steps", func(r *Report) {
			r.Status, r.Evidence = StatusComplete, []string{"tests pass"}
		}, "nextSteps"},
		{"complete with blocker", func(r *Report) {
			r.Status, r.Evidence, r.NextSteps, r.Blocker = StatusComplete, []string{"e"}, []string{}, "b"
		}, "blocker"},
		{"blocked without blocker", func(r *Report) { r.Status = StatusBlocked }, "blocker"},
		{"invalid utf-8", func(r *Report) { r.Summary = "bad \xff byte" }, "summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validContinue()
			tt.mutate(&r)
			err := Validate(r, 16384)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate error = %v, want a *ValidationError", err)
			}
			if verr.Field != tt.wantField {
				t.Fatalf("Validate named field %q (%v), want %q", verr.Field, err, tt.wantField)
			}
		})
	}
}

// reportOfSize builds a valid report whose compact JSON is exactly n code
// points, padding the summary with a multi-byte rune.
func reportOfSize(t *testing.T, n int) Report {
	t.Helper()
	r := validContinue()
	r.Summary = "é"
	base, err := Size(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Summary = strings.Repeat("é", n-base+1)
	if got, _ := Size(r); got != n {
		t.Fatalf("built a report of %d code points, want %d", got, n)
	}
	return r
}

func TestValidateSizeBoundaryCountsCodePoints(t *testing.T) {
	t.Parallel()
	const limit = 200
	at := reportOfSize(t, limit)
	if err := Validate(at, limit); err != nil {
		t.Fatalf("report exactly at the cap rejected: %v", err)
	}
	data, _ := Compact(at)
	if len(data) <= limit {
		t.Fatalf("test needs multi-byte text: %d bytes", len(data))
	}
	over := reportOfSize(t, limit+1)
	err := Validate(over, limit)
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Field != "report" || !strings.Contains(err.Error(), "201 characters") {
		t.Fatalf("report one code point over the cap: err = %v", err)
	}
	if got := utf8.RuneCountInString(over.Summary); got != utf8.RuneCountInString(at.Summary)+1 {
		t.Fatalf("validation changed the report: summary has %d code points", got)
	}
}

func TestCompactDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	r := validContinue()
	r.Summary = "a<b && c>d"
	data, err := Compact(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"a<b && c>d"`) {
		t.Fatalf("compact JSON escaped HTML: %s", data)
	}
	n, _ := Size(r)
	if n != utf8.RuneCount(data) || strings.Contains(string(data), "\n") {
		t.Fatalf("Size = %d for %q", n, data)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ü", 40)
	tests := []struct {
		name string
		text string
		max  int
		want string
	}{
		{"max 5 takes the marker's start", long, 5, "\n… [t"},
		{"max 14 is the whole marker", long, 14, TruncationMarker},
		{"max 15 keeps one code point", long, 15, "ü" + TruncationMarker},
		{"long text", long, 30, strings.Repeat("ü", 16) + TruncationMarker},
		{"fits exactly", long, 40, long},
		{"shorter than max", "short", 10, "short"},
		{"max 0", long, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.text, tt.max)
			if got != tt.want {
				t.Fatalf("Truncate(%d) = %q, want %q", tt.max, got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > tt.max {
				t.Fatalf("Truncate(%d) returned %d code points", tt.max, n)
			}
		})
	}
	if utf8.RuneCountInString(TruncationMarker) != 14 {
		t.Fatalf("marker is %d code points, want 14", utf8.RuneCountInString(TruncationMarker))
	}
}

func TestResultText(t *testing.T) {
	t.Parallel()
	complete := Report{Status: StatusComplete, Summary: "done", Evidence: []string{"tests pass"}, NextSteps: []string{}}
	text, err := ResultText(Outcome{Status: OutcomeComplete, Rounds: 3, Report: &complete}, 16384)
	if err != nil {
		t.Fatal(err)
	}
	wantStart := "A worker reported completion after 3 rounds.\n{\n  \"status\": \"complete\","
	if !strings.HasPrefix(text, wantStart) {
		t.Fatalf("result text = %q", text)
	}
	if strings.Contains(strings.ToLower(text), "verified") {
		t.Fatalf("result text presents completion as verified: %q", text)
	}

	blocked := Report{Status: StatusBlocked, Summary: "s", Evidence: []string{}, NextSteps: []string{}, Blocker: "no key"}
	text, _ = ResultText(Outcome{Status: OutcomeBlocked, Rounds: 1, Report: &blocked}, 16384)
	if !strings.HasPrefix(text, "A worker reported a blocker after 1 round.\n") {
		t.Fatalf("blocked text = %q", text)
	}
	cont := validContinue()
	text, _ = ResultText(Outcome{Status: OutcomeBudgetLimited, Rounds: 8, Limit: LimitRounds, Report: &cont}, 16384)
	if !strings.HasPrefix(text, "The 8-round limit was reached with work remaining.\n") {
		t.Fatalf("budget text = %q", text)
	}
	text, _ = ResultText(Outcome{Status: OutcomeComplete, Rounds: 3, Report: &complete}, 30)
	if utf8.RuneCountInString(text) != 30 || !strings.HasSuffix(text, TruncationMarker) {
		t.Fatalf("bounded text = %q", text)
	}
	if _, err := ResultText(Outcome{Status: "failed", Rounds: 1, Report: &complete}, 100); err == nil {
		t.Fatal("unknown outcome accepted")
	}
}

func TestHeadlinesNameWhatEndedTheRun(t *testing.T) {
	t.Parallel()
	v := &Verification{Command: "go test ./...", ExitCode: 0}
	cases := []struct {
		o    Outcome
		want string
	}{
		{Outcome{Status: OutcomeComplete, Rounds: 2, Verification: v},
			"A worker reported completion after 2 rounds; the verify command passed (exit 0): go test ./..."},
		{Outcome{Status: OutcomeComplete, Rounds: 1, Verification: &Verification{Command: "x", ExitCode: 1}},
			"A worker reported completion after 1 round."},
		{Outcome{Status: OutcomeBudgetLimited, Rounds: 3, Limit: LimitTokens}, "The run's budget of tokens was spent after 3 rounds, with work remaining."},
		{Outcome{Status: OutcomeBudgetLimited, Rounds: 3, Limit: LimitTime}, "The run's time budget ran out after 3 rounds, with work remaining."},
		{Outcome{Status: OutcomeBudgetLimited, Rounds: 4, Limit: LimitIdle}, "The idle budget was reached after 4 rounds: the last rounds left the workspace unchanged, with work remaining."},
		{Outcome{Status: OutcomeStopped, Rounds: 0, Reason: "reviewing"}, "The run was stopped by an operator after 0 rounds: reviewing"},
	}
	for _, c := range cases {
		got, err := Headline(c.o)
		if err != nil || got != c.want {
			t.Errorf("Headline(%+v) = %q, %v; want %q", c.o, got, err, c.want)
		}
	}
	if _, err := Headline(Outcome{Status: OutcomeBudgetLimited, Limit: "money"}); err == nil || !strings.Contains(err.Error(), "money") {
		t.Errorf("unknown limit: %v", err)
	}
	text, err := ResultText(Outcome{Status: OutcomeStopped}, 1000)
	if err != nil || !strings.HasSuffix(text, "\n(no round finished, so there is no report)") {
		t.Errorf("stopped without report = %q, %v", text, err)
	}
}
