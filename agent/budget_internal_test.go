package agent

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

func TestEstimateTokensCountsCodePointsRoundedUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"éééé", 1}, {"ééééé", 2}, {strings.Repeat("x", 20000), 5000},
	} {
		if got := EstimateTokens(tc.text); got != tc.want {
			t.Errorf("EstimateTokens(%d code points) = %d, want %d", utf8.RuneCountInString(tc.text), got, tc.want)
		}
	}
}

func TestNextRequestTokens(t *testing.T) {
	t.Parallel()
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "abcd"},   // 1 + 4
		{Role: openai.ChatMessageRoleUser, Content: "abcdefgh"}, // 2 + 4
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "c1", Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`}}}}, // 4 + 1 + 3 + 3
		{Role: openai.ChatMessageRoleTool, ToolCallID: "c1", Content: strings.Repeat("y", 401)},                                                                        // 4 + 101
	}
	t.Run("no usage reported: the whole conversation and the tools", func(t *testing.T) {
		for _, finish := range []string{SubmitReportTool, SubmitReviewTool} {
			def := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: finish}}
			s := &session{round: &round{tools: toolbox{finishing: def, offer: offer{allTokens: 70, finishTokens: 9}}}, conv: conversation{messages: msgs}}
			if got, want := s.nextRequestTokens(nil), 5+6+11+105+70; got != want {
				t.Errorf("%s: estimate = %d, want %d", finish, got, want)
			}
			if got, want := s.nextRequestTokens([]openai.Tool{def}), 5+6+11+105+9; got != want {
				t.Errorf("estimate with only %s offered = %d, want %d", finish, got, want)
			}
		}
		if got := toolsTokens(nil); got != 1 { // nil tools marshal as "null"
			t.Errorf("toolsTokens(nil) = %d, want 1", got)
		}
	})
	t.Run("usage reported: prompt tokens plus what was appended since", func(t *testing.T) {
		s := &session{round: &round{}, conv: conversation{messages: msgs, reportedPrompt: 1000, reportedLen: 2}}
		if got, want := s.nextRequestTokens(nil), 1000+11+105; got != want {
			t.Errorf("estimate = %d, want %d", got, want)
		}
	})
}

func TestHandoffPoint(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		span, want time.Duration
	}{
		{time.Hour, 54 * time.Minute},       // 90 %
		{10 * time.Minute, 9 * time.Minute}, // 90 %: 60 s left, more than the reserve
		{100 * time.Second, 85 * time.Second},
		{27 * time.Second, 13500 * time.Millisecond}, // half the span: the reserve is capped
		{0, 0},
	} {
		if got := handoffPoint(start, start.Add(tc.span)).Sub(start); got != tc.want {
			t.Errorf("span %s: hand-off after %s, want %s", tc.span, got, tc.want)
		}
	}
}

func TestCompactCallList(t *testing.T) {
	t.Parallel()
	t.Run("everything fits", func(t *testing.T) {
		got, omitted := compactCallList([]string{"a {}", "b {}"}, 100)
		if strings.Join(got, "|") != "a {}|b {}" || omitted != 0 {
			t.Errorf("got %q, %d omitted", got, omitted)
		}
	})
	t.Run("the newest are kept, oldest first, within the bound", func(t *testing.T) {
		var log []string
		for i := range 300 {
			log = append(log, "run_command "+strings.Repeat(string(rune('a'+i%26)), 40))
		}
		got, omitted := compactCallList(log, MaxCompactedCallChars)
		total := 0
		for _, e := range got {
			total += utf8.RuneCountInString(e)
		}
		if total > MaxCompactedCallChars {
			t.Errorf("%d code points listed, over %d", total, MaxCompactedCallChars)
		}
		if got[len(got)-1] != log[len(log)-1] {
			t.Errorf("the newest call is not last: %q", got[len(got)-1])
		}
		if omitted+len(got) != len(log) || omitted == 0 {
			t.Errorf("%d listed + %d omitted != %d", len(got), omitted, len(log))
		}
	})
	t.Run("a huge newest call is cut to fit", func(t *testing.T) {
		got, omitted := compactCallList([]string{"old {}", "write_file " + strings.Repeat("é", 9000)}, MaxCompactedCallChars)
		if len(got) != 1 || omitted != 1 || utf8.RuneCountInString(got[0]) != MaxCompactedCallChars || !strings.HasSuffix(got[0], compactedCutMarker) {
			t.Errorf("got %d entries (%d code points), %d omitted", len(got), utf8.RuneCountInString(strings.Join(got, "")), omitted)
		}
	})
}
