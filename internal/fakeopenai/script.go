package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Request is one chat-completions request as the server received it.
type Request struct {
	// Index is the 0-based arrival order over the server's lifetime.
	Index int
	// Chat is the decoded body.
	Chat openai.ChatCompletionRequest
	// Raw is the body exactly as sent.
	Raw []byte
	// Header is a copy of the request headers (tests check the key was sent;
	// the server itself never logs it).
	Header http.Header
	// Time is when the request arrived (tests check that nothing arrived
	// during a wait the server announced).
	Time time.Time
	// Wire is WireChat or WireResponses (then Chat is the request read into
	// the chat shape, and Store its store field).
	Wire  string
	Store *bool
}

// Script decides the answer to every request. Queue is served first, one
// response per request in arrival order (a retried request consumes the next
// entry, so transient faults are simply queue entries); then Rule answers
// every further request. With neither left the server answers 400 "script
// exhausted", which a client treats as an ordinary failure, so a test that
// asks more than it scripted fails fast with a clear message.
//
// ContextLimit, when positive, makes the server behave like a provider with
// that context window: a request whose PromptTokens exceed it is answered
// with a 400 context-length refusal in ContextStyle (OpenAI's by default)
// instead of the script's answer. Such a request still takes its Index, so
// pair it with a Rule rather than a Queue.
type Script struct {
	Queue        []Response
	Rule         func(req Request) Response
	ContextLimit int
	ContextStyle ContextStyle
	// Delivered, when set, is called for every completion written and
	// flushed to a client that was still connected: a client that left
	// during Delay, or whose connection broke, got nothing (a benchmark
	// counts what a killed worker really received).
	Delivered func(req Request, resp Response)
	// Strict refuses requests the way strict providers do (dialects.go).
	Strict Strictness
}

// Response is one scripted answer: a completion, or a Fault instead of one.
type Response struct {
	Content   string
	Reasoning string // sent as message.reasoning_content
	ToolCalls []Call
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason openai.FinishReason
	// Usage defaults to an estimate of about four bytes per token.
	Usage *openai.Usage
	// NoUsage leaves usage out of the completion, as some servers do.
	NoUsage bool
	Fault   Fault
	// Delay postpones the answer (fault or not); a client that gives up first
	// ends the wait.
	Delay time.Duration
	// ChunkDelay spaces the chunks of a streamed answer.
	ChunkDelay time.Duration
	// Dialect writes the answer the way one provider does (dialects.go).
	Dialect Dialect
}

// Call is one tool call in a scripted answer. Arguments is raw text so that
// tests can send malformed JSON.
type Call struct {
	ID        string // defaults to call_<request>_<position>
	Name      string
	Arguments string
}

// Fault replaces the completion with a failure.
type Fault struct {
	// Status, when non-zero, answers with this HTTP status and Body.
	Status int
	// Body defaults to an OpenAI error object for Status.
	Body        string
	ContentType string // defaults to application/json
	RetryAfter  string // sent as the Retry-After header when set
	// Header holds further response headers (x-ratelimit-reset-*, ...).
	Header map[string]string
	// Drop closes the connection without any answer.
	Drop bool
	// Hang waits until the client goes away (or the server closes).
	Hang bool
	// Stream faults, for a streamed answer (see Stall, Cut,
	// StreamErrorEvent): after After chunks the stream stalls, is cut, or
	// carries an error object with message StreamError.
	Stall       bool
	Cut         bool
	StreamError string
	After       int
}

// Text is an answer with text and no tool call.
func Text(content string) Response {
	return Response{Content: content}
}

// Tools is an answer that calls the given tools.
func Tools(calls ...Call) Response {
	return Response{ToolCalls: calls}
}

// CallJSON is a tool call whose arguments are args marshalled to JSON.
func CallJSON(name string, args any) Call {
	data, err := json.Marshal(args)
	if err != nil {
		// Scripts are written by tests and the demo; a value that cannot be
		// marshalled is a programming error there.
		panic(fmt.Sprintf("fakeopenai: marshal arguments of %s: %v", name, err))
	}
	return Call{Name: name, Arguments: string(data)}
}

// ReportArgs are submit_report's arguments. Nil lists are sent as [] so a
// script states an invalid null list only on purpose (via CallJSON).
type ReportArgs struct {
	Status    string   `json:"status"`
	Summary   string   `json:"summary"`
	Evidence  []string `json:"evidence"`
	NextSteps []string `json:"nextSteps"`
	Blocker   string   `json:"blocker"`
}

// SubmitReport is a submit_report call.
func SubmitReport(r ReportArgs) Call {
	if r.Evidence == nil {
		r.Evidence = []string{}
	}
	if r.NextSteps == nil {
		r.NextSteps = []string{}
	}
	return CallJSON("submit_report", r)
}

// Status is an HTTP error with an OpenAI error object naming message.
func Status(code int, message string) Response {
	return Response{Fault: Fault{Status: code, Body: errorBody(code, message)}}
}

// RateLimited is a 429 with the given Retry-After header value.
func RateLimited(retryAfter string) Response {
	r := Status(http.StatusTooManyRequests, "rate limit reached, retry later")
	r.Fault.RetryAfter = retryAfter
	return r
}

// RateLimitedReset is a 429 without Retry-After whose x-ratelimit-reset-requests
// and x-ratelimit-reset-tokens headers say when the windows reset (an empty
// value leaves that header out), in OpenAI's format ("6m0s", "1s", "20ms").
func RateLimitedReset(requests, tokens string) Response {
	r := Status(http.StatusTooManyRequests, "rate limit reached for requests")
	r.Fault.Header = map[string]string{}
	if requests != "" {
		r.Fault.Header["x-ratelimit-reset-requests"] = requests
	}
	if tokens != "" {
		r.Fault.Header["x-ratelimit-reset-tokens"] = tokens
	}
	return r
}

// QuotaExhausted is OpenAI's 429 for a key out of quota: error code and type
// insufficient_quota.
func QuotaExhausted() Response {
	data, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "You exceeded your current quota, please check your plan and billing details.",
		"type":    "insufficient_quota", "param": nil, "code": "insufficient_quota",
	}})
	return Response{Fault: Fault{Status: http.StatusTooManyRequests, Body: string(data)}}
}

// Unavailable is a 503 with the given Retry-After header value ("" for none).
func Unavailable(retryAfter string) Response {
	r := Status(http.StatusServiceUnavailable, "the engine is currently overloaded")
	r.Fault.RetryAfter = retryAfter
	return r
}

// HTMLPage is an error page as proxies and load balancers send it.
func HTMLPage(code int) Response {
	text := http.StatusText(code)
	return Response{Fault: Fault{
		Status:      code,
		ContentType: "text/html; charset=utf-8",
		Body:        fmt.Sprintf("<html><head><title>%d %s</title></head><body><center><h1>%d %s</h1></center><hr><center>nginx</center></body></html>\n", code, text, code, text),
	}}
}

// Drop closes the connection without answering.
func Drop() Response {
	return Response{Fault: Fault{Drop: true}}
}

// Hang never answers; the client's deadline or cancel ends the request.
func Hang() Response {
	return Response{Fault: Fault{Hang: true}}
}

func errorBody(code int, message string) string {
	typ := "invalid_request_error"
	switch {
	case code == http.StatusUnauthorized:
		typ = "authentication_error"
	case code == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case code >= 500:
		typ = "server_error"
	}
	data, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": nil,
	}})
	return string(data)
}

// ReviewArgs are submit_review's arguments (nil findings are sent as []).
type ReviewArgs struct {
	Verdict  string   `json:"verdict"`
	Summary  string   `json:"summary"`
	Findings []string `json:"findings"`
}

// SubmitReview is a submit_review call.
func SubmitReview(r ReviewArgs) Call {
	if r.Findings == nil {
		r.Findings = []string{}
	}
	return CallJSON("submit_review", r)
}
