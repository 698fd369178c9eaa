package starterapp

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/usage"
)

// hostile is model text that would act on a terminal printed verbatim: an
// OSC 52 clipboard write ended by BEL, a clear screen, a C1 CSI (U+009B)
// colour, a carriage return that overwrites the line, a backspace.
const hostile = "done \x1b]52;c;Y3VybCBldmlsfHNo\x07 \x1b[2J\u009b31mred\rforged\b tab\tkept"

// controls names the control characters in out (none: "").
func controls(out string) string {
	var found []string
	if !utf8.ValidString(out) {
		found = append(found, "invalid UTF-8")
	}
	for _, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
			found = append(found, fmt.Sprintf("%U", r))
		}
	}
	return strings.Join(found, " ")
}

func TestPrintableWriterKeepsRunesCutBetweenWrites(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := &printableWriter{w: &out}
	text := []byte("é😀\x1b[2J ě\u009b1m\n")
	for i := range text { // one byte per write: every rune is cut
		if n, err := w.Write(text[i : i+1]); n != 1 || err != nil {
			t.Fatalf("write %d = %d, %v", i, n, err)
		}
	}
	if got, want := out.String(), "é😀[2J ě1m\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

// The starter prints a run's summary, its failure and its last handoff as
// text: no byte of what it prints is a control character (issue 51).
func TestStarterPrintsNoTerminalCommands(t *testing.T) {
	s := startStack(t)
	check := func(name string, inv invocation) {
		t.Helper()
		for stream, out := range map[string]string{"stdout": inv.stdout, "stderr": inv.stderr} {
			if c := controls(out); c != "" {
				t.Errorf("%s: %s holds %s:\n%q", name, stream, c, out)
			}
			// A C1 byte (0x9b) is either U+009B, or not UTF-8: controls names both.
			for _, b := range []byte{0x1b, 0x07, '\r', '\b'} {
				if strings.IndexByte(out, b) >= 0 {
					t.Errorf("%s: %s holds byte %#x", name, stream, b)
				}
			}
		}
	}
	complete := s.starter(t, nil, "run", "--workspace", "esc", "--objective", "escape complete")
	// The result's report is JSON, C0 escaped by encoding/json and C1 dropped;
	// a progress line is the summary as text.
	complete.expect(t, ExitComplete, []string{`"summary": "done \u001b]52;c;Y3VybCBldmlsfHNo\u0007 \u001b[2J31mred\rforged\b tab\tkept"`},
		[]string{"round 1/256 complete: done ]52;c;Y3VybCBldmlsfHNo [2J31mred forged tab kept"})
	check("run (complete)", complete)

	failed := s.starter(t, nil, "run", "--workspace", "escf", "--objective", "escape fail")
	failed.expect(t, ExitFailed, nil, []string{"verify said done ]52;c;", "Last accepted handoff:", "round 1/256 continue: done ]52"})
	check("run (failed)", failed)

	for _, args := range [][]string{{"status", "ralph-esc"}, {"result", "--json", "ralph-esc"}, {"result", "ralph-escf"}} {
		check(strings.Join(args, " "), s.starter(t, nil, args...))
	}
}

// Main's printing is routed through the writer on every path, an error
// that names a workspace file too (no server needed): a task file whose
// name and content hold escape sequences.
func TestMainPrintsAFileErrorAsText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/tasks\x1b[2J.md"
	if err := os.WriteFile(path, []byte("- [ ] a\x1b]52;c;eA==\x07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	app := &App{Env: config.MapEnv{}, Stdout: &stdout, Stderr: &stderr}
	if code := app.Main([]string{"campaign", "--tasks", path, "--verify", "true"}); code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "tasks[2J.md") {
		t.Errorf("stderr %q does not name the file", stderr.String())
	}
	if c := controls(stderr.String() + stdout.String()); c != "" {
		t.Errorf("printed %s: %q", c, stderr.String())
	}
}

// The usage line keeps the providers' figures and shows an estimate apart,
// only when there is one.
func TestUsageLineShowsTheEstimateApart(t *testing.T) {
	t.Parallel()
	reported := usage.Usage{ModelCalls: 2, ToolCalls: 1, PromptTokens: 3906, CompletionTokens: 123}
	if got := usageLine(reported); got != "usage: 2 model calls, 1 tool calls, 3906 prompt tokens, 123 completion tokens" {
		t.Errorf("line = %q", got)
	}
	reported.Estimated = usage.Counts{ModelCalls: 1, PromptTokens: 1232, CompletionTokens: 371}
	if got := usageLine(reported); got != "usage: 2 model calls, 1 tool calls, 3906 prompt tokens, 123 completion tokens as reported; "+
		"estimated without a provider's figure: 1 model calls, 1232 prompt tokens, 371 completion tokens" {
		t.Errorf("line = %q", got)
	}
}
