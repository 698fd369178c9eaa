package wire

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// errStreamIncomplete is a stream that ended (cleanly, as far as HTTP goes)
// before the answer said it was finished: a cut-off answer, retried.
var errStreamIncomplete = errors.New("the streamed answer ended before it was finished")

// progressEvery spaces the progress events of one streamed answer.
const progressEvery = time.Second

// streamProgress reports a streamed answer's progress through the client's
// events: once at the first token, then at most every progressEvery.
type streamProgress struct {
	emit    func(Event)
	step    int
	model   string
	started time.Time
	last    time.Time
	first   int64 // ms to the first token, 0 until it came
	chars   int
}

func (p *streamProgress) add(chars int) {
	if chars == 0 {
		return
	}
	p.chars += chars
	now := time.Now()
	if p.first == 0 {
		// At least 1: zero means the first token has not come.
		p.first = max(now.Sub(p.started).Milliseconds(), 1)
	} else if now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	p.emit(Event{Kind: EventProgress, Step: p.step, Model: p.model, StreamedChars: p.chars, FirstTokenMs: p.first})
}

// streamChat is one streamed chat-completions call, gathered into the
// completion the non-streamed call would have returned.
func (m *Client) streamChat(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	m.dialect.startStream()
	stream, err := m.client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	defer stream.Close()
	progress := &streamProgress{emit: m.emit, step: step, model: req.Model, started: time.Now()}
	var acc chatAccumulator
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		progress.add(acc.add(chunk))
	}
	if acc.finish == "" {
		return openai.ChatCompletionResponse{}, errStreamIncomplete
	}
	return acc.response(), nil
}

// chatAccumulator gathers the chunks of one streamed answer (first choice).
type chatAccumulator struct {
	id, model                   string
	content, reasoning, refusal strings.Builder
	calls                       []openai.ToolCall
	finish                      openai.FinishReason
	usage                       openai.Usage
}

// add takes one chunk and returns how many characters of answer it carried.
func (a *chatAccumulator) add(chunk openai.ChatCompletionStreamResponse) int {
	if a.id == "" {
		a.id, a.model = chunk.ID, chunk.Model
	}
	if chunk.Usage != nil {
		a.usage = *chunk.Usage
	}
	chars := 0
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		d := c.Delta
		a.content.WriteString(d.Content)
		a.reasoning.WriteString(d.ReasoningContent)
		a.refusal.WriteString(d.Refusal)
		chars += len(d.Content) + len(d.ReasoningContent) + len(d.Refusal)
		for i, tc := range d.ToolCalls {
			call := a.call(tc, i)
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
			chars += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	}
	return chars
}

// call finds the call a delta continues: by its index when sent, else by
// its id, else the last one (servers that send each call whole).
func (a *chatAccumulator) call(tc openai.ToolCall, position int) *openai.ToolCall {
	index := -1
	switch {
	case tc.Index != nil:
		index = *tc.Index
	case tc.ID != "":
		for i := range a.calls {
			if a.calls[i].ID == tc.ID {
				index = i
			}
		}
		if index < 0 {
			index = len(a.calls)
		}
	default:
		index = max(len(a.calls)-1, position)
	}
	for len(a.calls) <= index {
		a.calls = append(a.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
	}
	call := &a.calls[index]
	if tc.ID != "" {
		call.ID = tc.ID
	}
	return call
}

func (a *chatAccumulator) response() openai.ChatCompletionResponse {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a.content.String(),
		ReasoningContent: a.reasoning.String(), Refusal: a.refusal.String(), ToolCalls: a.calls}
	return openai.ChatCompletionResponse{ID: a.id, Object: "chat.completion", Model: a.model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: a.finish}}, Usage: a.usage}
}
