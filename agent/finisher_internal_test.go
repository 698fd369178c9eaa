package agent

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
)

// A finishing tool's schema, generated from its params struct, names
// exactly the keys its strict decoder reads: arguments holding every schema
// key decode, and one missing or one extra key is refused by name.
func TestFinishersSchemaIsWhatTheirDecoderReads(t *testing.T) {
	decoders := map[*finisher]func([]byte) error{
		&reportFinisher: func(b []byte) error { _, err := report.Decode(b); return err },
		&reviewFinisher: func(b []byte) error { _, err := report.DecodeReview(b); return err },
		&choiceFinisher: func(b []byte) error { _, err := report.DecodeChoice(b); return err },
		&planFinisher:   func(b []byte) error { _, err := plan.Decode(b); return err },
	}
	for f, decode := range decoders {
		args := exampleArgs(t, *f)
		encode := func(m map[string]any) []byte { b, _ := json.Marshal(m); return b }
		if err := decode(encode(args)); err != nil {
			t.Errorf("%s (%T): arguments with every schema key %s refused: %v", f.name, f.params, encode(args), err)
		}
		for _, key := range slices.Sorted(maps.Keys(args)) {
			without := maps.Clone(args)
			delete(without, key)
			if err := decode(encode(without)); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s (%T) without %q: err = %v, want one naming it", f.name, f.params, key, err)
			}
		}
		extra := maps.Clone(args)
		extra["extraKey"] = "x"
		if err := decode(encode(extra)); err == nil || !strings.Contains(err.Error(), "extraKey") {
			t.Errorf("%s (%T) with an extra key: err = %v, want one naming it", f.name, f.params, err)
		}
	}
}

// exampleArgs fills each property of f's offered schema with a value of its
// type (an enum's first value, [] for an array).
func exampleArgs(t *testing.T, f finisher) map[string]any {
	t.Helper()
	def, err := f.definition(systemData{MaxHandoffChars: 4000})
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			Type string   `json:"type"`
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(def.Function.Parameters.(json.RawMessage), &schema); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{}
	for key, p := range schema.Properties {
		switch {
		case len(p.Enum) > 0:
			args[key] = p.Enum[0]
		case p.Type == "array":
			args[key] = []any{}
		case p.Type == "integer":
			args[key] = 1
		default:
			args[key] = "x"
		}
	}
	return args
}
