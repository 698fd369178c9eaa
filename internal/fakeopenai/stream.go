package fakeopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// A streamed chat completion as providers send it: a first chunk with the
// role, the reasoning and the content in pieces, each tool call's id and
// name in one chunk and its arguments split over several, a chunk with the
// finish reason, then (when the request asked with stream_options) one
// chunk with no choices and the usage, then [DONE].

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *openai.Usage `json:"usage"`
}

type chunkChoice struct {
	Index        int                  `json:"index"`
	Delta        delta                `json:"delta"`
	FinishReason *openai.FinishReason `json:"finish_reason"`
}

type delta struct {
	Role             string      `json:"role,omitempty"`
	Content          *string     `json:"content,omitempty"`
	ReasoningContent string      `json:"reasoning_content,omitempty"`
	ToolCalls        []deltaCall `json:"tool_calls,omitempty"`
}

type deltaCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionCall `json:"function"`
}

// streamChunks is the answer cut into the chunks above (usage chunk last).
func streamChunks(req Request, resp Response) []chunk {
	full := completionFor(req, resp)
	msg := full.Choices[0].Message
	base := chunk{ID: full.ID, Object: "chat.completion.chunk", Created: full.Created, Model: full.Model}
	with := func(d delta, finish *openai.FinishReason) chunk {
		c := base
		c.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
		return c
	}
	empty := ""
	out := []chunk{with(delta{Role: openai.ChatMessageRoleAssistant, Content: &empty}, nil)}
	for _, piece := range split(msg.ReasoningContent, 2) {
		out = append(out, with(delta{ReasoningContent: piece}, nil))
	}
	if msg.Content != nil {
		for _, piece := range split(*msg.Content, 2) {
			out = append(out, with(delta{Content: &piece}, nil))
		}
	}
	for i, c := range msg.ToolCalls {
		out = append(out, with(delta{ToolCalls: []deltaCall{{Index: i, ID: c.ID, Type: c.Type, Function: functionCall{Name: c.Function.Name}}}}, nil))
		for _, piece := range split(c.Function.Arguments, 3) {
			out = append(out, with(delta{ToolCalls: []deltaCall{{Index: i, Function: functionCall{Arguments: piece}}}}, nil))
		}
	}
	finish := full.Choices[0].FinishReason
	out = append(out, with(delta{}, &finish))
	if req.Chat.StreamOptions != nil && req.Chat.StreamOptions.IncludeUsage && full.Usage != nil {
		last := base
		last.Choices, last.Usage = []chunkChoice{}, full.Usage
		out = append(out, last)
	}
	return out
}

// split cuts s into n pieces of about equal size (fewer when s is short;
// none when s is empty), never inside a UTF-8 sequence.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := max((len(r)+n-1)/n, 1)
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// writeStream sends resp as a stream of server-sent events, playing the
// stream faults: a stall, a cut, an error event.
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, req Request, resp Response) {
	var lines [][]byte
	for _, c := range streamChunks(req, resp) {
		data, err := json.Marshal(c)
		if err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("fakeopenai: encode chunk: %v", err))
			return
		}
		lines = append(lines, s.applyDialect(resp.Dialect, data, "delta"))
	}
	s.writeEvents(w, r, req, resp, lines)
}

// writeEvents writes data lines (then [DONE]) with the stream faults of
// resp.Fault: a stall or a cut after Fault.After lines, an error event
// after them. Raw streams use it too.
func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, req Request, resp Response, lines [][]byte) {
	f := resp.Fault
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, line := range lines {
		if (f.Stall || f.Cut || f.StreamError != "") && i == f.After {
			s.streamFault(w, r, req, f)
			return
		}
		format := "data: %s\n\n"
		if req.Wire == WireMessages {
			format = "%s\n\n" // named events (serveMessages)
		}
		if _, err := fmt.Fprintf(w, format, line); err != nil || rc.Flush() != nil {
			return
		}
		if resp.ChunkDelay > 0 && !s.wait(r, resp.ChunkDelay) {
			s.noteLeft(req)
			return
		}
	}
	if req.Wire == WireChat || req.Wire == "" { // the other APIs end with their own last event
		if _, err := io.WriteString(w, "data: [DONE]\n\n"); err != nil || rc.Flush() != nil {
			return
		}
	}
	if s.script.Delivered != nil {
		s.script.Delivered(req, resp)
	}
}

func (s *Server) streamFault(w http.ResponseWriter, r *http.Request, req Request, f Fault) {
	switch {
	case f.Stall:
		if !s.wait(r, -1) {
			s.noteLeft(req)
		}
	case f.Cut:
		// Ends the exchange without the stream's last chunk: the client
		// sees the body end short.
		panic(http.ErrAbortHandler)
	default:
		ev := map[string]any{"error": map[string]any{"message": f.StreamError, "type": "server_error", "code": nil}}
		if req.Wire == WireResponses {
			ev = map[string]any{"type": "error", "code": "server_error", "message": f.StreamError, "param": nil}
		}
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", data)
		http.NewResponseController(w).Flush()
	}
}

// noteLeft records when the client of req went away during a stall.
func (s *Server) noteLeft(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == nil {
		s.left = map[int]time.Time{}
	}
	s.left[req.Index] = time.Now()
}

// Left is when the client of request index went away in the middle of a
// stalled or slowed stream, as the server saw it.
func (s *Server) Left(index int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.left[index]
	return t, ok
}

// Stall is a streamed answer that sends after chunks, then nothing.
func Stall(resp Response, after int) Response {
	resp.Fault = Fault{Stall: true, After: after}
	return resp
}

// Cut is a streamed answer whose connection breaks after chunks.
func Cut(resp Response, after int) Response {
	resp.Fault = Fault{Cut: true, After: after}
	return resp
}

// StreamErrorEvent is a streamed answer that, after chunks, sends an error
// object in a data line and ends.
func StreamErrorEvent(resp Response, after int, message string) Response {
	resp.Fault = Fault{StreamError: message, After: after}
	return resp
}
