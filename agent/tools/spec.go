package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/sashabaranov/go-openai/jsonschema"
)

// spec is what the model is told about one tool: its name, its description
// and the JSON Schema of its arguments. The schema is generated from P, the
// very struct the tool decodes its arguments into, so the two cannot drift:
// a field's json tag names the argument (",omitempty" makes it optional),
// its description tag describes it and an enum tag lists its values.
type spec[P any] struct {
	name        string
	description string
	parameters  json.RawMessage
}

// newSpec renders the tool's description template with data and derives its
// parameter schema from P.
func newSpec[P any](name string, data descriptionData) (spec[P], error) {
	desc, err := renderDescription(name, data)
	if err != nil {
		return spec[P]{}, err
	}
	var zero P
	def, err := jsonschema.GenerateSchemaForType(zero)
	if err != nil {
		return spec[P]{}, fmt.Errorf("generating the parameter schema of %s: %w", name, err)
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return spec[P]{}, fmt.Errorf("encoding the parameter schema of %s: %w", name, err)
	}
	return spec[P]{name: name, description: desc, parameters: raw}, nil
}

func (s spec[P]) Name() string { return s.name }

func (s spec[P]) Description() string { return s.description }

// Parameters returns a copy, so no caller can change what later calls see.
func (s spec[P]) Parameters() json.RawMessage { return append(json.RawMessage(nil), s.parameters...) }

// decode reads the model's arguments strictly into a P. The error text is
// meant for the model.
func (s spec[P]) decode(args json.RawMessage) (P, error) {
	var p P
	err := decodeArgs(s.name, args, &p)
	return p, err
}

// paramsType is the argument struct, for tests that compare it with the
// schema the model sees.
func (s spec[P]) paramsType() reflect.Type { return reflect.TypeFor[P]() }
