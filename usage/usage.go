// Package usage counts what a round (or a whole run) cost: model and tool
// calls and tokens. It is shared by the agent, the activity and the workflow.
package usage

// Usage is reported per round and summed across a run.
type Usage struct {
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
	}
}
