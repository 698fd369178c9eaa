package usage

import (
	"encoding/json"
	"testing"
)

func TestEstimatedIsSummedAndChargedApart(t *testing.T) {
	reported := Usage{ModelCalls: 1, ToolCalls: 2, PromptTokens: 3906, CompletionTokens: 123}
	cut := Usage{ModelCalls: 1, Estimated: Counts{ModelCalls: 1, PromptTokens: 1232, CompletionTokens: 371}}
	sum := reported.Add(cut)
	want := Usage{ModelCalls: 2, ToolCalls: 2, PromptTokens: 3906, CompletionTokens: 123,
		Estimated: Counts{ModelCalls: 1, PromptTokens: 1232, CompletionTokens: 371}}
	if sum != want {
		t.Fatalf("sum = %+v, want %+v", sum, want)
	}
	if got := sum.Tokens(); got != 3906+123+1232+371 {
		t.Errorf("Tokens() = %d, want reported plus estimated", got)
	}
	raw, _ := json.Marshal(reported)
	if string(raw) != `{"modelCalls":1,"toolCalls":2,"promptTokens":3906,"completionTokens":123,`+
		`"estimated":{"modelCalls":0,"toolCalls":0,"promptTokens":0,"completionTokens":0}}` {
		t.Errorf("JSON = %s, want estimated present and all zero", raw)
	}
	var old Usage // a payload from before estimated existed
	if err := json.Unmarshal([]byte(`{"modelCalls":1,"promptTokens":5}`), &old); err != nil || old != (Usage{ModelCalls: 1, PromptTokens: 5}) {
		t.Errorf("old payload decodes to %+v, %v", old, err)
	}
}
