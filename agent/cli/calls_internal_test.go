package cli

import (
	"testing"
	"time"
)

// The finishing tool's arguments are read from every wire the gateway
// relays, streamed or whole, so a vouched submission matches whatever
// spelling the CLI sends back.
func TestToolCallsOfEachWire(t *testing.T) {
	want := canonicalArgs(`{"verdict":"approve","findings":[],"summary":"ok"}`)
	cases := []struct {
		api    API
		events []string
	}{
		{APIChat, []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"ralph_submit_review","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"verdict\": \"approve\","}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"summary\":\"ok\",\"findings\":[]}"}}]}}]}`,
			`[DONE]`}},
		{APIChat, []string{`{"object":"chat.completion","choices":[{"index":0,"message":{"tool_calls":[{"function":{"name":"ralph_submit_review","arguments":"{\"summary\":\"ok\",\"findings\":[],\"verdict\":\"approve\"}"}}]}}]}`}},
		{APIResponses, []string{
			`{"type":"response.output_item.done","item":{"type":"function_call","name":"submit_review","arguments":"{\"summary\":\"ok\",\"verdict\":\"approve\",\"findings\":[]}"}}`,
			`{"type":"response.completed","response":{"output":[]}}`}},
		{APIResponses, []string{`{"object":"response","output":[{"type":"function_call","name":"mcp__ralph__submit_review","arguments":"{\"findings\":[],\"summary\":\"ok\",\"verdict\":\"approve\"}"}]}`}},
		{APIMessages, []string{
			`{"type":"message_start","message":{"usage":{"input_tokens":5}}}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","name":"mcp__ralph__submit_review","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"summary\":\"ok\","}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"verdict\":\"approve\",\"findings\":[]}"}}`,
			`{"type":"message_stop"}`}},
		{APIMessages, []string{`{"type":"message","content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"mcp__ralph__submit_review","input":{"verdict":"approve","summary":"ok","findings":[]}}]}`}},
	}
	for i, c := range cases {
		rd := apis[c.api].newReader()
		final := false
		for _, e := range c.events {
			final = rd.event([]byte(e)) || final
		}
		calls := rd.calls()
		if !final || len(calls) != 1 || canonicalArgs(calls[0].args) != want {
			t.Errorf("case %d (%s): final %v, calls %+v; want one call with %s", i, c.api, final, calls, want)
		}
	}
}

// A body is split into its members without copying, and goes upstream as
// the same JSON.
func TestSplitObjectKeepsTheBody(t *testing.T) {
	raw := []byte(` { "model" : "m", "n":1 ,"messages":[{"content":"a \"}\" b"}], "stream":true, "x": null}`)
	body, err := splitObject(raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(body["messages"]) != `[{"content":"a \"}\" b"}]` || string(body["n"]) != "1" || string(body["x"]) != "null" || len(body) != 5 {
		t.Fatalf("members %q", body)
	}
	for _, bad := range []string{`[1]`, `{"a":}`, `"s"`} {
		if _, err := splitObject([]byte(bad)); err == nil {
			t.Errorf("%s split without error", bad)
		}
	}
}

// A CLI may run the finishing tool as soon as its block streamed, before
// the answer's last event, where the gateway notes the call: a submission
// waits for the answer being relayed, and is refused at once when none is.
func TestVouchWaitsForTheAnswerBeingRelayed(t *testing.T) {
	args := `{"status":"continue","summary":"ok"}`
	g := &gateway{reportTool: "submit_report", relayed: map[string]int{}}
	if g.vouch(args) {
		t.Fatal("a submission no answer called was vouched for")
	}
	g.relaying = 1
	go func() {
		time.Sleep(50 * time.Millisecond)
		g.note([]toolCall{{name: "mcp__ralph__submit_report", args: args}})
		g.mu.Lock()
		g.relaying--
		g.mu.Unlock()
	}()
	if !g.vouch(args) {
		t.Fatal("a submission made while its answer was relayed was refused")
	}
	if g.vouch(args) {
		t.Fatal("one call vouched for two submissions")
	}
}
