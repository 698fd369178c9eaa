package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestToolsOrderAndNames(t *testing.T) {
	w, _ := newTestWorkspace(t, DefaultLimits())
	var names []string
	for _, tl := range w.Tools() {
		names = append(names, tl.Name())
		if tl.Description() == "" {
			t.Errorf("%s has no description", tl.Name())
		}
	}
	want := []string{"list_files", "read_file", "write_file", "edit_file", "search_files", "run_command"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
}

func TestDefaultLimits(t *testing.T) {
	l := DefaultLimits()
	if l.CommandTimeout != 120*time.Second || l.MaxCommandTimeout != 1800*time.Second ||
		l.OutputCap != 30000 || l.ReadLineLimit != 2000 || l.ReadByteLimit != 256*1024 {
		t.Fatalf("DefaultLimits() = %+v", l)
	}
	// Zero fields take defaults; explicit ones are kept.
	w, _ := newTestWorkspace(t, Limits{OutputCap: 7})
	got := w.Limits()
	if got.OutputCap != 7 || got.ReadLineLimit != 2000 || got.CommandTimeout != 120*time.Second {
		t.Fatalf("effective limits = %+v", got)
	}
	if _, err := OpenWorkspace(t.TempDir(), Limits{OutputCap: -1}); err == nil {
		t.Fatal("negative limit accepted")
	}
	if _, err := OpenWorkspace(t.TempDir()+"/missing", DefaultLimits()); err == nil {
		t.Fatal("missing workspace dir accepted")
	}
}

// paramStructs maps each tool to its argument struct, so the schema the model
// sees is checked against what the decoder accepts.
var paramStructs = map[string]any{
	"list_files":   listFilesParams{},
	"read_file":    readFileParams{},
	"write_file":   writeFileParams{},
	"edit_file":    editFileParams{},
	"search_files": searchFilesParams{},
	"run_command":  runCommandParams{},
}

func TestParametersMatchArgumentStructs(t *testing.T) {
	w, _ := newTestWorkspace(t, DefaultLimits())
	wantProps := map[string][]string{
		"list_files":   {"path"},
		"read_file":    {"limit", "offset", "path"},
		"write_file":   {"content", "path"},
		"edit_file":    {"new_string", "old_string", "path", "replace_all"},
		"search_files": {"glob", "path", "pattern"},
		"run_command":  {"command", "timeout_seconds"},
	}
	wantRequired := map[string][]string{
		"list_files":   {},
		"read_file":    {"path"},
		"write_file":   {"content", "path"},
		"edit_file":    {"new_string", "old_string", "path"},
		"search_files": {"pattern"},
		"run_command":  {"command"},
	}
	for _, tl := range w.Tools() {
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.Parameters(), &schema); err != nil {
			t.Fatalf("%s: schema is not valid JSON: %v", tl.Name(), err)
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema must be an object with additionalProperties false: %s", tl.Name(), tl.Parameters())
		}
		var props []string
		for k := range schema.Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		if !slices.Equal(props, wantProps[tl.Name()]) {
			t.Errorf("%s: schema properties %v, want %v", tl.Name(), props, wantProps[tl.Name()])
		}
		req := slices.Clone(schema.Required)
		slices.Sort(req)
		if !slices.Equal(req, wantRequired[tl.Name()]) {
			t.Errorf("%s: required %v, want %v", tl.Name(), req, wantRequired[tl.Name()])
		}
		var tags []string
		typ := reflect.TypeOf(paramStructs[tl.Name()])
		for i := range typ.NumField() {
			tags = append(tags, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		slices.Sort(tags)
		if !slices.Equal(tags, props) {
			t.Errorf("%s: argument struct fields %v differ from schema properties %v", tl.Name(), tags, props)
		}
	}
}

func TestUnknownAndMalformedArguments(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, dir+"/f.txt", "x\n")
	valid := map[string]string{
		"list_files":   `{"path":"."`,
		"read_file":    `{"path":"f.txt"`,
		"write_file":   `{"path":"g.txt","content":"y"`,
		"edit_file":    `{"path":"f.txt","old_string":"x","new_string":"z"`,
		"search_files": `{"pattern":"x"`,
		"run_command":  `{"command":"touch ran"`,
	}
	for name, prefix := range valid {
		t.Run(name, func(t *testing.T) {
			mustFail(t, call(t, w, name, prefix+`,"bogus_arg":1}`), `"bogus_arg"`)
			mustFail(t, call(t, w, name, prefix), "not valid JSON")
			mustFail(t, call(t, w, name, prefix+`} {}`), "unexpected data")
			mustFail(t, call(t, w, name, `[1,2]`), "JSON object")
		})
	}
	// None of the rejected calls may have had an effect.
	if got := readTestFile(t, dir+"/f.txt"); got != "x\n" {
		t.Errorf("f.txt changed to %q", got)
	}
	for _, p := range []string{"g.txt", "ran"} {
		if _, err := w.root.Stat(p); err == nil {
			t.Errorf("%s exists after rejected calls", p)
		}
	}
	// A wrongly typed argument is named in terms the model understands.
	mustFail(t, call(t, w, "read_file", `{"path":"f.txt","offset":"3"}`), `argument "offset" must be of type integer, got string`)
	// Missing required arguments.
	mustFail(t, call(t, w, "read_file", `{}`), "path must not be empty")
	mustFail(t, call(t, w, "write_file", `{"path":"g.txt"}`), `"content"`)
	mustFail(t, call(t, w, "edit_file", `{"path":"f.txt","new_string":"a"}`), `"old_string"`)
	mustFail(t, call(t, w, "edit_file", `{"path":"f.txt","old_string":"x"}`), `"new_string"`)
	mustFail(t, call(t, w, "search_files", `{}`), `"pattern"`)
	mustFail(t, call(t, w, "run_command", `{}`), `"command"`)
	// An empty argument string is taken as {} (some providers send it).
	if out := mustOK(t, call(t, w, "list_files", ``)); !strings.Contains(out, "f.txt") {
		t.Errorf("list_files with empty args: %q", out)
	}
}

func TestCancelledContextIsGoError(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, dir+"/f.txt", "x\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	args := map[string]string{
		"list_files":   `{}`,
		"read_file":    `{"path":"f.txt"}`,
		"write_file":   `{"path":"g.txt","content":"y"}`,
		"edit_file":    `{"path":"f.txt","old_string":"x","new_string":"z"}`,
		"search_files": `{"pattern":"x"}`,
		"run_command":  `{"command":"touch ran"}`,
	}
	for _, tl := range w.Tools() {
		if _, err := tl.Run(ctx, json.RawMessage(args[tl.Name()])); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with cancelled ctx: err = %v, want context.Canceled", tl.Name(), err)
		}
	}
	if got := readTestFile(t, dir+"/f.txt"); got != "x\n" {
		t.Errorf("f.txt changed to %q", got)
	}
}
