package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// dialect is the one layer that bends the wire to what OpenAI-compatible
// servers really send and require (docs/reference.md, "Providers and their
// quirks"). Incoming, it reads arguments sent as JSON objects, content sent
// as an array of parts, vLLM's "reasoning", a 2xx carrying an error object
// and Groq's tool_use_failed; outgoing, it merges the deployment's extra
// body, carries back what a provider wants echoed (Gemini's extra_content,
// the reasoning field under the provider's own name, also empty once seen)
// and names the tool of every tool message. Its rewrites depend only on
// the conversation, so a session's requests keep a stable prefix.
type dialect struct {
	extraBody map[string]any
	echo      bool   // echo reasoning at all (RALPH_ECHO_REASONING)
	limitName string // RALPH_MAX_TOKENS_FIELD ("": by model)

	mu sync.Mutex
	// extraContent is each tool call's extra_content by call id.
	extraContent map[string]json.RawMessage
	// reasoningKey is the field the provider sends reasoning in, once seen.
	reasoningKey string
	// errorStatus is the status of an error object found inside a 2xx
	// stream (its code, else 502); 0 when none.
	errorStatus int
	// streamIDs maps a streamed tool call's index to its id.
	streamIDs map[int]string
}

func newDialect(cfg Config) *dialect {
	return &dialect{extraBody: cfg.ExtraBody, echo: cfg.EchoReasoning, limitName: cfg.MaxTokensFieldName, extraContent: map[string]json.RawMessage{}}
}

// outgoing rewrites a request body before it is sent.
func (d *dialect) outgoing(req *http.Request) error {
	if req.Body == nil || req.Method != http.MethodPost {
		return nil
	}
	raw, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("read model request body: %w", err)
	}
	body, err := d.rewriteRequest(raw, strings.HasSuffix(req.URL.Path, "/chat/completions"))
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

type jsonObject = map[string]json.RawMessage

func (d *dialect) rewriteRequest(raw []byte, chat bool) ([]byte, error) {
	var body jsonObject
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("model request body is not a JSON object: %w", err)
	}
	for k, v := range d.extraBody {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("extra body field %s: %w", k, err)
		}
		body[k] = data
	}
	if limit, ok := body[MaxCompletionTokensField]; ok && chat && outputLimitField(d.limitName, jsonString(body["model"])) == MaxTokensField {
		body[MaxTokensField] = limit
		delete(body, MaxCompletionTokensField)
	}
	if chat {
		if msgs, ok := body["messages"]; ok {
			out, err := d.rewriteMessages(msgs)
			if err != nil {
				return nil, err
			}
			body["messages"] = out
		}
	}
	return appendObject(make([]byte, 0, len(raw)+64), body), nil
}

// appendObject appends o as a JSON object, its keys sorted as json.Marshal
// sorts them. Its values are JSON that json.Unmarshal accepted or
// json.Marshal produced, so they are written as they are: json.Marshal
// would scan and compact every one again, about 0.2 ms a request for the
// tool definitions alone.
func appendObject(dst []byte, o jsonObject) []byte {
	keys := slices.Sorted(maps.Keys(o))
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		name, _ := json.Marshal(k) // a string always encodes
		dst = append(dst, name...)
		dst = append(dst, ':')
		if v := o[k]; len(v) > 0 {
			dst = append(dst, v...)
		} else {
			dst = append(dst, "null"...)
		}
	}
	return append(dst, '}')
}

// rewriteMessages carries back per-call and reasoning fields and names the
// tool of each tool message (Mistral and others require it).
func (d *dialect) rewriteMessages(raw json.RawMessage) (json.RawMessage, error) {
	var msgs []jsonObject
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, fmt.Errorf("model request messages: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	names := map[string]json.RawMessage{}
	for _, m := range msgs {
		switch jsonString(m["role"]) {
		case "assistant":
			d.carryBack(m, names)
		case "tool":
			if name, ok := names[jsonString(m["tool_call_id"])]; ok && m["name"] == nil {
				m["name"] = name
			}
		}
	}
	out := append(make([]byte, 0, len(raw)+64), '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendObject(out, m)
	}
	return append(out, ']'), nil
}

// carryBack completes one echoed assistant message (d.mu held).
func (d *dialect) carryBack(m jsonObject, names map[string]json.RawMessage) {
	var calls []jsonObject
	if json.Unmarshal(m["tool_calls"], &calls) == nil && len(calls) > 0 {
		for _, c := range calls {
			id := jsonString(c["id"])
			var fn jsonObject
			if json.Unmarshal(c["function"], &fn) == nil {
				names[id] = fn["name"]
			}
			if extra, ok := d.extraContent[id]; ok {
				c["extra_content"] = extra
			}
		}
		m["tool_calls"], _ = json.Marshal(calls)
	}
	if !d.echo {
		return
	}
	switch d.reasoningKey {
	case "reasoning_content":
		// DeepSeek's thinking mode wants the field on every assistant turn
		// once it is in use, even empty (go-openai omits an empty one).
		if m["reasoning_content"] == nil {
			m["reasoning_content"] = json.RawMessage(`""`)
		}
	case "reasoning":
		if r, ok := m["reasoning_content"]; ok {
			m["reasoning"] = r
			delete(m, "reasoning_content")
		}
	}
}

func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// incoming normalises a response before go-openai reads it: a streamed
// body line by line, a JSON body whole.
func (d *dialect) incoming(resp *http.Response) error {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &sseBody{src: resp.Body, d: d}
		return nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	status, body := d.normaliseBody(resp.StatusCode, raw)
	if status != resp.StatusCode && status == http.StatusOK && resp.Request != nil && resp.Request.Header.Get("Accept") == "text/event-stream" {
		// A refusal turned into an answer, for a client reading a stream.
		body = asStream(body)
		resp.Header.Set("Content-Type", "text/event-stream")
	}
	resp.StatusCode = status
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return nil
}

// normaliseBody is a whole JSON answer as go-openai can read it. Bodies
// that are not JSON objects pass unchanged (classify reads them).
func (d *dialect) normaliseBody(status int, raw []byte) (int, []byte) {
	var body jsonObject
	if json.Unmarshal(raw, &body) != nil {
		return status, raw
	}
	if status == http.StatusBadRequest {
		if answer, ok := toolUseFailed(body); ok {
			return http.StatusOK, answer
		}
		return status, raw
	}
	if status/100 != 2 {
		return status, raw
	}
	if code, ok := errorInSuccess(body); ok {
		return code, raw
	}
	changed := false
	var choices []jsonObject
	if json.Unmarshal(body["choices"], &choices) == nil {
		for _, c := range choices {
			if msg, ok := c["message"]; ok {
				if out, did := d.normaliseMessage(msg, false); did {
					c["message"], changed = out, true
				}
			}
		}
	}
	if !changed {
		return status, raw
	}
	body["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(body)
	if err != nil {
		return status, raw
	}
	return status, out
}

// asStream is a completion as the one chunk of a stream.
func asStream(completion []byte) []byte {
	var c jsonObject
	var choices []jsonObject
	if json.Unmarshal(completion, &c) != nil || json.Unmarshal(c["choices"], &choices) != nil {
		return completion
	}
	for _, ch := range choices {
		ch["delta"] = ch["message"]
		delete(ch, "message")
	}
	c["choices"], _ = json.Marshal(choices)
	c["object"] = json.RawMessage(`"chat.completion.chunk"`)
	data, _ := json.Marshal(c)
	return append(append([]byte("data: "), data...), "\n\ndata: [DONE]\n\n"...)
}

// errorInSuccess: a 2xx whose body is an error object (gateways such as
// OpenRouter do this) is that error: its numeric code as the status, else
// 502.
func errorInSuccess(body jsonObject) (int, bool) {
	raw, ok := body["error"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || body["choices"] != nil || body["output"] != nil {
		return 0, false
	}
	var e struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return http.StatusBadGateway, true
	}
	var code int
	if json.Unmarshal(e.Code, &code) == nil && code >= 400 && code < 600 {
		return code, true
	}
	return http.StatusBadGateway, true
}

// maxFailedGenerationChars bounds the failed output quoted back to the model.
const maxFailedGenerationChars = 2000

// toolUseFailed turns Groq's 400 tool_use_failed (the model's own output did
// not parse as a tool call) into a text answer holding that output, clipped:
// the session then tells the model to answer with a tool call, and goes on.
func toolUseFailed(body jsonObject) ([]byte, bool) {
	var e struct {
		Code             string `json:"code"`
		FailedGeneration string `json:"failed_generation"`
	}
	if json.Unmarshal(body["error"], &e) != nil || e.Code != "tool_use_failed" {
		return nil, false
	}
	failed := e.FailedGeneration
	if utf8.RuneCountInString(failed) > maxFailedGenerationChars {
		failed = runes.Prefix(failed, maxFailedGenerationChars) + " […]"
	}
	text := "(this answer was not a valid tool call; the provider rejected it)\n" + failed
	out, err := json.Marshal(map[string]any{
		"id": "tool-use-failed", "object": "chat.completion", "model": "",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
	})
	return out, err == nil
}

// normaliseMessage reads one message (or a stream's delta): content parts
// as text, tool-call arguments sent as objects as their JSON text, vLLM's
// reasoning as reasoning_content; it remembers extra_content and the
// reasoning field's name for the way back. streamed: tool calls may carry
// only their index.
func (d *dialect) normaliseMessage(raw json.RawMessage, streamed bool) (json.RawMessage, bool) {
	var m jsonObject
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw, false
	}
	changed := false
	if text, ok := partsText(m["content"]); ok {
		m["content"], _ = json.Marshal(text)
		changed = true
	}
	d.mu.Lock()
	if _, ok := m["reasoning_content"]; ok && d.reasoningKey == "" {
		d.reasoningKey = "reasoning_content"
	}
	if r, ok := m["reasoning"]; ok && m["reasoning_content"] == nil {
		if d.reasoningKey == "" {
			d.reasoningKey = "reasoning"
		}
		m["reasoning_content"] = r
		delete(m, "reasoning")
		changed = true
	}
	d.mu.Unlock()
	var calls []jsonObject
	if json.Unmarshal(m["tool_calls"], &calls) == nil && len(calls) > 0 {
		if d.normaliseCalls(calls, streamed) {
			m["tool_calls"], _ = json.Marshal(calls)
			changed = true
		}
	}
	if !changed {
		return raw, false
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw, false
	}
	return out, true
}

func (d *dialect) normaliseCalls(calls []jsonObject, streamed bool) bool {
	changed := false
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range calls {
		id := jsonString(c["id"])
		if streamed {
			var index int
			if json.Unmarshal(c["index"], &index) == nil {
				if id != "" {
					d.streamIDs[index] = id
				} else {
					id = d.streamIDs[index]
				}
			}
		}
		if extra, ok := c["extra_content"]; ok && id != "" {
			d.extraContent[id] = extra
		}
		var fn jsonObject
		if json.Unmarshal(c["function"], &fn) != nil {
			continue
		}
		args := bytes.TrimSpace(fn["arguments"])
		if len(args) > 0 && (args[0] == '{' || args[0] == '[') {
			fn["arguments"], _ = json.Marshal(string(args))
			c["function"], _ = json.Marshal(fn)
			changed = true
		}
	}
	return changed
}

// partsText is the text of content sent as an array of parts.
func partsText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return "", false
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// startStream readies the layer for a new streamed answer.
func (d *dialect) startStream() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errorStatus = 0
	d.streamIDs = map[int]string{}
}

// streamError is the status of an error object a 2xx stream carried.
func (d *dialect) streamError() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.errorStatus
}

// normaliseChunk is one data line of a stream as go-openai can read it.
func (d *dialect) normaliseChunk(data []byte) []byte {
	if !mayNeedNormalising(data) {
		return data
	}
	var chunk jsonObject
	if json.Unmarshal(data, &chunk) != nil {
		return data
	}
	if code, ok := errorInSuccess(chunk); ok {
		d.mu.Lock()
		d.errorStatus = code
		d.mu.Unlock()
		return data
	}
	var choices []jsonObject
	if json.Unmarshal(chunk["choices"], &choices) != nil {
		return data
	}
	changed := false
	for _, c := range choices {
		if delta, ok := c["delta"]; ok {
			if out, did := d.normaliseMessage(delta, true); did {
				c["delta"], changed = out, true
			}
		}
	}
	if !changed {
		return data
	}
	chunk["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(chunk)
	if err != nil {
		return data
	}
	return out
}

// mayNeedNormalising is a cheap look at a chunk: most chunks are plain
// deltas and pass without being decoded twice.
func mayNeedNormalising(data []byte) bool {
	for _, marker := range [][]byte{[]byte(`"error"`), []byte(`"extra_content"`), []byte(`"reasoning`),
		[]byte(`"content":[`), []byte(`"content": [`), []byte(`"arguments":{`), []byte(`"arguments": {`)} {
		if bytes.Contains(data, marker) {
			return true
		}
	}
	return false
}

// sseBody normalises a server-sent-event stream line by line.
type sseBody struct {
	src  io.ReadCloser
	d    *dialect
	buf  []byte // read buffer, reused
	line []byte // a partial line read so far
	out  []byte // normalised bytes not yet returned
	err  error
}

func (b *sseBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 && b.err == nil {
		b.fill()
	}
	if len(b.out) > 0 {
		n := copy(p, b.out)
		b.out = b.out[n:]
		return n, nil
	}
	return 0, b.err
}

// fill reads what the source has and moves whole lines to out.
func (b *sseBody) fill() {
	if b.buf == nil {
		b.buf = make([]byte, 32<<10)
	}
	n, err := b.src.Read(b.buf)
	b.line = append(b.line, b.buf[:n]...)
	for {
		i := bytes.IndexByte(b.line, '\n')
		if i < 0 {
			break
		}
		b.out = append(b.out, b.normaliseLine(b.line[:i+1])...)
		b.line = b.line[i+1:]
	}
	if err != nil {
		b.out = append(b.out, b.line...)
		b.line, b.err = nil, err
	}
}

func (b *sseBody) normaliseLine(line []byte) []byte {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return line
	}
	trimmed := bytes.TrimSpace(data)
	out := b.d.normaliseChunk(trimmed)
	if bytes.Equal(out, trimmed) {
		return line
	}
	return append(append([]byte("data: "), out...), '\n')
}

func (b *sseBody) Close() error { return b.src.Close() }
