package agent

import (
	"bytes"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Every session gets its own finishing tool: changing one session's copy
// changes neither the cached definition nor the next session's.
func TestFinishingToolIsEachSessionsOwn(t *testing.T) {
	for _, name := range []string{SubmitReportTool, SubmitReviewTool, SubmitPlanTool} {
		fresh, err := finisherFor(name, false).definition(systemData{MaxHandoffChars: 4242})
		if err != nil {
			t.Fatal(err)
		}
		first, err := finishingTool(name, 4242, false)
		if err != nil {
			t.Fatal(err)
		}
		first.Function.Description = "changed"
		first.Function.Name = "changed"
		p := first.Function.Parameters.(json.RawMessage)
		for i := range p {
			p[i] = 'X'
		}
		next, err := finishingTool(name, 4242, false)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(fresh)
		got, _ := json.Marshal(next)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: after a session changed its copy, the next session gets\n%s\nwant\n%s", name, got, want)
		}
	}
}

// The encoded definitions and their estimates are what encoding them afresh
// gives, and a distinct list gets its own entry.
func TestOfferIsTheDefinitionsEncoded(t *testing.T) {
	report, err := finishingTool(SubmitReportTool, 5151, false)
	if err != nil {
		t.Fatal(err)
	}
	other := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "x", Description: "y", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, defs := range [][]openai.Tool{{report}, {other, report}, {report}} {
		o, err := offerFor(defs)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(defs)
		if !bytes.Equal(o.encoded, want) || o.allTokens != toolsTokens(defs) || o.finishTokens != toolsTokens([]openai.Tool{report}) {
			t.Errorf("offer of %d definitions = %s (%d, %d tokens), want %s (%d, %d)", len(defs), o.encoded, o.allTokens, o.finishTokens,
				want, toolsTokens(defs), toolsTokens([]openai.Tool{report}))
		}
	}
	// A definition whose parts cannot be named is never cached, still encoded.
	odd := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "odd", Parameters: map[string]any{"type": "object"}}}
	if _, ok := offerKey([]openai.Tool{odd}); ok {
		t.Error("a definition with map parameters got a cache key")
	}
	if o, err := offerFor([]openai.Tool{odd}); err != nil || o.allTokens != toolsTokens([]openai.Tool{odd}) {
		t.Errorf("uncached offer = %+v, %v", o, err)
	}
}

// A run may choose any hand-off cap: however many a worker meets, its
// caches stay bounded.
func TestDefinitionCachesAreBounded(t *testing.T) {
	for cap := 1000; cap < 1100; cap++ {
		def, err := finishingTool(SubmitReportTool, cap, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := offerFor([]openai.Tool{def}); err != nil {
			t.Fatal(err)
		}
		if finishers.Len() > 16 || offers.Len() > 16 {
			t.Fatalf("after %d caps: %d finishing tools and %d offers cached, bound 16", cap-999, finishers.Len(), offers.Len())
		}
	}
}
