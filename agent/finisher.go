package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
)

// finisher is a tool that ends a session (submit_report, submit_review,
// submit_plan): its name, its description's template, and the tagged
// struct its parameter schema is generated from. Each one's arguments are
// read by a strict decoder of its own package (report.Decode,
// report.DecodeReview, report.DecodeChoice, plan.Decode) that accepts
// exactly the struct's keys; TestFinishersSchemaIsWhatTheirDecoderReads
// holds the two together.
type finisher struct {
	name   string
	text   string // the description's template
	params any    // the tagged struct the schema is generated from
}

var (
	reportFinisher = finisher{SubmitReportTool, textSubmitReport, reportParams{}}
	reviewFinisher = finisher{SubmitReviewTool, textSubmitReview, reviewParams{}}
	choiceFinisher = finisher{SubmitReviewTool, textSubmitChoice, choiceParams{}}
	planFinisher   = finisher{SubmitPlanTool, textSubmitPlan, planParams{}}
)

// finisherFor is the finisher named name (submit_report for any other),
// submit_review's for a reviewer choosing between candidates if choosing.
func finisherFor(name string, choosing bool) finisher {
	switch {
	case name == SubmitReviewTool && choosing:
		return choiceFinisher
	case name == SubmitReviewTool:
		return reviewFinisher
	case name == SubmitPlanTool:
		return planFinisher
	}
	return reportFinisher
}

// definition is the tool as offered to the model, its description rendered
// with data.
func (f finisher) definition(data any) (openai.Tool, error) {
	schema, err := jsonschema.GenerateSchemaForType(f.params)
	if err != nil {
		return openai.Tool{}, fmt.Errorf("generate the %s schema: %w", f.name, err)
	}
	inlineItems(schema)
	encoded, err := json.Marshal(schema)
	if err != nil {
		return openai.Tool{}, fmt.Errorf("encode the %s schema: %w", f.name, err)
	}
	description, err := render(f.text, data)
	if err != nil {
		return openai.Tool{}, err
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: f.name, Description: description, Parameters: json.RawMessage(encoded),
	}}, nil
}

// inlineItems puts an array's item schema inline, not behind $ref: not
// every provider (nor every CLI's tool bridge) follows references. $defs
// goes once nothing refers to it.
func inlineItems(schema *jsonschema.Definition) {
	referred := false
	for key, p := range schema.Properties {
		if p.Items != nil && p.Items.Ref != "" {
			if def, ok := schema.Defs[strings.TrimPrefix(p.Items.Ref, "#/$defs/")]; ok {
				p.Items = &def
				schema.Properties[key] = p
			}
		}
		referred = referred || p.Ref != "" || p.Items != nil && p.Items.Ref != ""
	}
	if !referred {
		schema.Defs = nil
	}
}

// IsFinishingTool says a tool of that name ends a session when accepted.
func IsFinishingTool(name string) bool {
	return name == SubmitReportTool || name == SubmitReviewTool || name == SubmitPlanTool
}
