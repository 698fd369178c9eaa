package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
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

// argumentNames are the contract: each tool's argument names, required
// ones marked with a trailing "!".
var argumentNames = map[string][]string{
	"list_files":   {"path"},
	"read_file":    {"limit", "offset", "path!"},
	"write_file":   {"content!", "path!"},
	"edit_file":    {"new_string!", "old_string!", "path!", "replace_all"},
	"search_files": {"context", "glob", "ignore_case", "path", "pattern!"},
	"run_command":  {"command!", "timeout_seconds"},
}

// TestSchemasAreTheArgumentStructs checks each schema against the struct the
// tool decodes into (same fields, required exactly where the json tag has
// no omitempty, types from the Go types) and against the contract's names.
func TestSchemasAreTheArgumentStructs(t *testing.T) {
	w, _ := newTestWorkspace(t, DefaultLimits())
	jsonType := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Bool: "boolean", reflect.Float64: "number"}
	for _, tl := range w.Tools() {
		var schema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			} `json:"properties"`
			Required             []string `json:"required"`
			AdditionalProperties *bool    `json:"additionalProperties"`
		}
		dec := json.NewDecoder(strings.NewReader(string(tl.Parameters())))
		dec.DisallowUnknownFields() // nothing but what is checked here
		if err := dec.Decode(&schema); err != nil {
			t.Fatalf("%s: schema %s: %v", tl.Name(), tl.Parameters(), err)
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema must be an object with additionalProperties false: %s", tl.Name(), tl.Parameters())
		}
		typ := tl.(interface{ paramsType() reflect.Type }).paramsType()
		var fields []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			prop, ok := schema.Properties[name]
			if !ok {
				t.Errorf("%s: field %s (%q) is not in the schema", tl.Name(), f.Name, name)
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if prop.Type != jsonType[ft.Kind()] || prop.Description == "" {
				t.Errorf("%s: %s has type %q and description %q; want type %q and a description", tl.Name(), name, prop.Type, prop.Description, jsonType[ft.Kind()])
			}
			required := slices.Contains(schema.Required, name)
			if required == (opts == "omitempty") {
				t.Errorf("%s: %s required=%v, but its json tag is %q", tl.Name(), name, required, f.Tag.Get("json"))
			}
			if required {
				name += "!"
			}
			fields = append(fields, name)
		}
		if len(schema.Properties) != typ.NumField() {
			t.Errorf("%s: schema has %d properties, the struct %d fields", tl.Name(), len(schema.Properties), typ.NumField())
		}
		slices.Sort(fields)
		if !slices.Equal(fields, argumentNames[tl.Name()]) {
			t.Errorf("%s: arguments %v, want %v", tl.Name(), fields, argumentNames[tl.Name()])
		}
	}
}

// TestDescriptionsStateTheLimits checks that the templates are filled with
// the workspace's own limits, not with defaults.
func TestDescriptionsStateTheLimits(t *testing.T) {
	w, _ := newTestWorkspace(t, Limits{CommandTimeout: 45 * time.Second, MaxCommandTimeout: 900 * time.Second, OutputCap: 12345, ReadLineLimit: 321, ReadByteLimit: 64 * 1024})
	want := map[string][]string{
		"list_files":   {".gitignore", ".git", "1000 entries", "12345 characters"},
		"read_file":    {"default 321", "64 KiB", "2000 characters", lineCutMarker(), "offset"},
		"write_file":   {"atomically", "hard link"},
		"edit_file":    {"exactly once", "replace_all", "line-number prefix"},
		"search_files": {"RE2", "0 to 10", "200 matches", "12345 characters", ".gitignore", `"path-line- text"`},
		"run_command":  {"45 seconds", "up to 900 seconds", "12345 characters", "exit code"},
	}
	for _, tl := range w.Tools() {
		d := tl.Description()
		for _, s := range want[tl.Name()] {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description lacks %q:\n%s", tl.Name(), s, d)
			}
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

// A workspace WithStartAfter starts no command before its time (a lent
// tree's settle time: gitws.LendSettled), however fast its setup.
func TestCommandsStartNoEarlierThanStartAfter(t *testing.T) {
	at := time.Now().Add(150 * time.Millisecond)
	w, err := OpenWorkspace(t.TempDir(), DefaultLimits(), WithStartAfter(at))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Exec(context.Background(), "date +%s%N", time.Minute, 100)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v, %+v", err, res)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(res.Output), 10, 64)
	if err != nil {
		t.Fatalf("the command printed %q", res.Output)
	}
	if started := time.Unix(0, ns); started.Before(at) {
		t.Fatalf("the command started at %v, %v before its start-after time", started, at.Sub(started))
	}
}
