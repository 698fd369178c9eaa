package wire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func offeredNames(names ...string) []openai.Tool {
	var tools []openai.Tool
	for _, n := range names {
		tools = append(tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: n}})
	}
	return tools
}

func TestTextToolCalls(t *testing.T) {
	offered := offeredNames("read_file", "write_file")
	call := func(name, args string) openai.ToolCall {
		return openai.ToolCall{Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
	}
	for _, tc := range []struct {
		name, content string
		want          []openai.ToolCall
	}{
		{"bare", `{"name": "read_file", "arguments": {"path": "a"}}`, []openai.ToolCall{call("read_file", `{"path": "a"}`)}},
		{"list", `[{"name": "read_file", "arguments": {"path": "a"}}, {"name": "write_file", "arguments": "{\"path\":\"b\"}"}]`,
			[]openai.ToolCall{call("read_file", `{"path": "a"}`), call("write_file", `{"path":"b"}`)}},
		{"llama parameters", `{"name": "read_file", "parameters": {"path": "a"}}`, []openai.ToolCall{call("read_file", `{"path": "a"}`)}},
		{"fence with text around", "I'll read it.\n```json\n{\"name\": \"read_file\", \"arguments\": {}}\n```\nDone.", []openai.ToolCall{call("read_file", `{}`)}},
		{"two tags", "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"write_file\"}</tool_call>",
			[]openai.ToolCall{call("read_file", `{}`), call("write_file", `{}`)}},
		{"a tool not offered", `{"name": "delete_everything", "arguments": {}}`, nil},
		{"one of two not offered", `[{"name": "read_file", "arguments": {}}, {"name": "rm", "arguments": {}}]`, nil},
		{"prose", `I will now read the file {carefully}.`, nil},
		{"json that is no call", `{"status": "done"}`, nil},
		{"bare call inside prose", `Calling {"name": "read_file", "arguments": {}} now`, nil},
	} {
		if got := textToolCalls(tc.content, offered); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: calls = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestSettleAnswerGivesEveryCallAnID(t *testing.T) {
	resp := openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{
		ToolCalls: []openai.ToolCall{{ID: "x"}, {ID: "x"}, {}}}}}}
	settleAnswer(&resp, nil)
	calls := resp.Choices[0].Message.ToolCalls
	if calls[0].ID != "x" || calls[1].ID == "x" || calls[2].ID == "" || calls[1].ID == calls[2].ID {
		t.Fatalf("ids = %q, %q, %q", calls[0].ID, calls[1].ID, calls[2].ID)
	}
	for _, c := range calls[1:] {
		if len(c.ID) != 9 || c.Type != openai.ToolTypeFunction {
			t.Errorf("generated call %+v: want nine characters and type function", c)
		}
	}
}

func TestNormaliseBody(t *testing.T) {
	d := newDialect(Config{EchoReasoning: true})
	for _, tc := range []struct {
		name, in   string
		status     int
		wantStatus int
		wantBody   string
	}{
		{"error object with a numeric code", `{"error":{"message":"rate limited","code":429}}`, 200, 429, ""},
		{"error object with a text code", `{"error":{"message":"no provider","code":"no_endpoints"}}`, 200, 502, ""},
		{"error text", `{"error":"upstream failed"}`, 200, 502, ""},
		{"a Responses body with error null", `{"id":"r","output":[],"error":null}`, 200, 200, `{"id":"r","output":[],"error":null}`},
		{"a completion", `{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`, 200, 200, `{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`},
		{"content parts", `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}`, 200, 200,
			`{"choices":[{"message":{"content":"ab"}}]}`},
		{"arguments object", `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}}]}`, 200, 200,
			`{"choices":[{"message":{"tool_calls":[{"function":{"arguments":"{\"a\":1}","name":"f"},"id":"c"}]}}]}`},
		{"not JSON", `<html>502</html>`, 502, 502, `<html>502</html>`},
		{"a 400 that is not tool_use_failed", `{"error":{"message":"bad","code":"x"}}`, 400, 400, `{"error":{"message":"bad","code":"x"}}`},
	} {
		status, body := d.normaliseBody(tc.status, []byte(tc.in))
		if status != tc.wantStatus || (tc.wantBody != "" && string(body) != tc.wantBody) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.wantStatus, tc.wantBody)
		}
	}
}

func TestStatusOnlyOn429ReadsResetHeaders(t *testing.T) {
	h := http.Header{"X-Ratelimit-Reset-Requests": []string{"8m38s"}}
	if d, ok := ProviderDelay(http.StatusTooManyRequests, h, time.Now()); !ok || d.String() != "8m38s" {
		t.Errorf("429: %s, %v", d, ok)
	}
	for _, status := range []int{500, 503} {
		if d, ok := ProviderDelay(status, h, time.Now()); ok {
			t.Errorf("%d: the reset header gave a delay of %s", status, d)
		}
	}
}

// TestRewriteRequestWritesWhatMarshalWould: the request encoder writes raw
// values as they are, so a body it rewrites without a change must come out
// byte for byte as json.Marshal writes it (sorted keys, HTML escaped,
// compact), and a carried-back field lands in it.
func TestRewriteRequestWritesWhatMarshalWould(t *testing.T) {
	req := map[string]any{
		"model": "m<1>",
		"messages": []map[string]any{
			{"role": "system", "content": "use <tags> & \"quotes\" é 𝄞"},
			{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function",
				"function": map[string]any{"name": "read_file", "arguments": `{"path":"a"}`}}}},
			{"role": "tool", "tool_call_id": "c1", "content": "ok"},
		},
		"tools":      []map[string]any{{"type": "function", "function": map[string]any{"name": "x", "parameters": map[string]any{"type": "object"}}}},
		"max_tokens": 10,
	}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	d := newDialect(Config{})
	got, err := d.rewriteRequest(raw, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, raw) {
		t.Errorf("unchanged body rewritten:\n got %s\nwant %s", got, raw)
	}
	got, err = d.rewriteRequest(raw, true) // names the tool message's tool
	if err != nil {
		t.Fatal(err)
	}
	req["messages"].([]map[string]any)[2]["name"] = "read_file"
	want, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("chat body:\n got %s\nwant %s", got, want)
	}
}
