// Package usage counts what a round (or a whole run) cost: model and tool
// calls and tokens. It is shared by the agent, the activity and the workflow.
package usage

// Usage is reported per round and summed across a run. Its tokens are what
// providers reported; Estimated holds, apart, what was booked without a
// provider's figure. A token budget charges both (Tokens).
type Usage struct {
	ModelCalls       int `json:"modelCalls"`
	ToolCalls        int `json:"toolCalls"`
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	// Estimated: the answers booked at the worker's estimate because the
	// provider gave no usage for them (cut before it, or sent none), and
	// their estimated tokens. Those answers count in ModelCalls too; no tool
	// call is ever estimated. All zero against a provider that reports
	// usage on every answer.
	Estimated Counts `json:"estimated"`
}

// Counts are the figures of a Usage, without an estimate of their own.
type Counts struct {
	ModelCalls       int `json:"modelCalls"`
	ToolCalls        int `json:"toolCalls"`
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
}

// Add returns the sum of u and other.
func (u Usage) Add(other Usage) Usage {
	return Usage{
		ModelCalls:       u.ModelCalls + other.ModelCalls,
		ToolCalls:        u.ToolCalls + other.ToolCalls,
		PromptTokens:     u.PromptTokens + other.PromptTokens,
		CompletionTokens: u.CompletionTokens + other.CompletionTokens,
		Estimated:        u.Estimated.Add(other.Estimated),
	}
}

// Add returns the sum of c and other.
func (c Counts) Add(other Counts) Counts {
	return Counts{
		ModelCalls:       c.ModelCalls + other.ModelCalls,
		ToolCalls:        c.ToolCalls + other.ToolCalls,
		PromptTokens:     c.PromptTokens + other.PromptTokens,
		CompletionTokens: c.CompletionTokens + other.CompletionTokens,
	}
}

// Tokens is what a token budget charges: the tokens providers reported and
// the estimated ones.
func (u Usage) Tokens() int {
	return u.PromptTokens + u.CompletionTokens + u.Estimated.PromptTokens + u.Estimated.CompletionTokens
}
