package agent

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/tools"
)

// toolbox is what a session offers the model: the workspace's tools and
// the role's finishing tool (last), their definitions and what they cost.
type toolbox struct {
	byName    map[string]tools.Tool
	names     []string // every offered tool, for "unknown tool" answers
	all       []openai.Tool
	finishing openai.Tool // the tool that ends the session
	// offer is all as JSON and the estimated size of each offer, built once
	// per worker (definitions.go); its JSON is shared, never changed.
	offer
}

func newToolbox(ws *tools.Workspace, finish string, choosing bool, maxHandoffChars int) (toolbox, error) {
	b := toolbox{byName: map[string]tools.Tool{}}
	for _, t := range ws.Tools() {
		b.byName[t.Name()] = t
		b.names = append(b.names, t.Name())
		b.all = append(b.all, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()},
		})
	}
	def, err := finishingTool(finish, maxHandoffChars, choosing)
	if err != nil {
		return toolbox{}, err
	}
	b.finishing = def
	b.all = append(b.all, def)
	b.names = append(b.names, finish)
	if b.offer, err = offerFor(b.all); err != nil {
		return toolbox{}, err
	}
	return b, nil
}

// offered is what the next request offers: every tool, or only the
// finishing one.
func (b *toolbox) offered(reportOnly bool) []openai.Tool {
	if reportOnly {
		return []openai.Tool{b.finishing}
	}
	return b.all
}

// offerTokens is the estimated size of an offer: a session offers every
// tool or only its finishing one (submit_report, or a reviewer's
// submit_review).
func (b *toolbox) offerTokens(offered []openai.Tool) int {
	if len(offered) == 1 && offered[0].Function.Name == b.finishing.Function.Name {
		return b.finishTokens
	}
	return b.allTokens
}
