package agent

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/memo"
)

// A worker's sessions offer the same definitions again and again (the same
// limits, finishing tool and hand-off cap), so what is derived from them is
// built once per distinct set: the finishing tool's schema and description,
// the definitions' JSON for the transcript and their token estimates. The
// caches are bounded (a run may choose its own hand-off cap) and hold only
// values no session changes: a session gets its own copy of anything it or
// an observer could change.
var (
	finishers = memo.New[finisherKey, openai.Tool](16)
	offers    = memo.New[string, offer](16)
)

type finisherKey struct {
	name     string // SubmitReportTool, SubmitReviewTool or SubmitPlanTool
	maxChars int
	choosing bool // submit_review of a reviewer choosing between candidates
}

// finishingTool is the definition of the tool that ends a session, the
// session's own copy.
func finishingTool(name string, maxChars int, choosing bool) (openai.Tool, error) {
	def, err := finishers.Get(finisherKey{name, maxChars, choosing}, func() (openai.Tool, error) {
		return finisherFor(name, choosing).definition(systemData{MaxHandoffChars: maxChars})
	})
	if err != nil {
		return openai.Tool{}, err
	}
	f := *def.Function
	if p, ok := f.Parameters.(json.RawMessage); ok {
		f.Parameters = slices.Clone(p) // still a json.RawMessage
	}
	def.Function = &f
	return def, nil
}

// offer is what a session's definitions (every tool, the finishing one
// last) cost to send and record.
type offer struct {
	// encoded is the definitions as JSON, as the request sends them and the
	// transcript records them. Shared: copied before an event carries it.
	encoded json.RawMessage
	// allTokens estimates the whole list, finishTokens the finishing tool
	// alone (what the hand-off offers).
	allTokens, finishTokens int
}

func offerFor(defs []openai.Tool) (offer, error) {
	build := func() (offer, error) {
		enc, err := json.Marshal(defs)
		if err != nil {
			return offer{}, fmt.Errorf("encoding the tool definitions: %w", err)
		}
		return offer{encoded: enc, allTokens: EstimateTokens(string(enc)), finishTokens: toolsTokens(defs[len(defs)-1:])}, nil
	}
	key, ok := offerKey(defs)
	if !ok {
		return build()
	}
	return offers.Get(key, build)
}

// offerKey identifies definitions by everything their JSON is made of
// (each part length-prefixed, so no two lists share a key); false when a
// definition holds something it cannot name, which is then never cached.
func offerKey(defs []openai.Tool) (string, bool) {
	n := 0
	for _, d := range defs {
		if d.Function != nil {
			p, _ := d.Function.Parameters.(json.RawMessage)
			n += len(d.Type) + len(d.Function.Name) + len(d.Function.Description) + len(p) + 5*binary.MaxVarintLen64
		}
	}
	b := make([]byte, 0, n) // one allocation: the key is about as long as the definitions
	add := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, d := range defs {
		if d.Function == nil || d.Parameters != nil {
			return "", false
		}
		p, ok := d.Function.Parameters.(json.RawMessage)
		if !ok {
			return "", false
		}
		strict := byte('0')
		if d.Function.Strict {
			strict = '1'
		}
		add([]byte(d.Type))
		add([]byte(d.Function.Name))
		add([]byte(d.Function.Description))
		add([]byte{strict})
		add(p)
	}
	return string(b), true
}
