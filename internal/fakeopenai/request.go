package fakeopenai

import (
	"regexp"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// roundPattern finds the "Round R of N" line every round prompt carries.
var roundPattern = regexp.MustCompile(`Round (\d+) of (\d+)`)

// Round is R of "Round R of N" in the request's system or user messages, or
// 0 when there is none. Scripts use it to play a different part per round.
func (r Request) Round() int {
	for _, m := range r.Chat.Messages {
		if m.Role != openai.ChatMessageRoleSystem && m.Role != openai.ChatMessageRoleUser {
			continue
		}
		if match := roundPattern.FindStringSubmatch(m.Content); match != nil {
			if n, err := strconv.Atoi(match[1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// Step is the number of assistant turns so far: 0 for a session's first request.
func (r Request) Step() int {
	step := 0
	for _, m := range r.Chat.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			step++
		}
	}
	return step
}

// Prompt is the text of the system and user messages, one per line.
func (r Request) Prompt() string {
	var b strings.Builder
	for _, m := range r.Chat.Messages {
		if m.Role == openai.ChatMessageRoleSystem || m.Role == openai.ChatMessageRoleUser {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// LastToolOutput is the content of the newest tool message, "" if none.
func (r Request) LastToolOutput() string {
	msgs := r.Chat.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleTool {
			return msgs[i].Content
		}
	}
	return ""
}

// IsReview reports whether the request comes from an independent reviewer
// session (it offers submit_review).
func (r Request) IsReview() bool {
	for _, t := range r.Chat.Tools {
		if t.Function != nil && t.Function.Name == "submit_review" {
			return true
		}
	}
	return false
}

// candidatePattern finds the line a round candidate's prompt carries.
var candidatePattern = regexp.MustCompile(`you are candidate (\d+)`)

// Candidate is the k of "you are candidate k" in the request's user text
// (a round that runs several fresh agents), or 0 when there is none.
func (r Request) Candidate() int {
	for _, m := range r.Chat.Messages {
		if match := candidatePattern.FindStringSubmatch(messageText(m)); match != nil {
			if n, err := strconv.Atoi(match[1]); err == nil {
				return n
			}
		}
	}
	return 0
}
