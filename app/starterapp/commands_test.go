package starterapp

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/devenv/testkit"
)

var update = flag.Bool("update", false, "rewrite the starter block of docs/reference.md from the command declarations")

// Markers around the generated starter reference in docs/reference.md.
const (
	referenceBegin = "<!-- starter:begin (generated: go test ./app/starterapp -run TestReferenceDocs -update) -->\n"
	referenceEnd   = "<!-- starter:end -->"
)

func TestReferenceDocs(t *testing.T) {
	testkit.GeneratedBlock(t, "../../docs/reference.md", referenceBegin, referenceEnd, Reference(), *update,
		"go test ./app/starterapp -run TestReferenceDocs -update")
}

// Every declared command parses, has help that names its flags and exit
// codes, and appears in the top-level help and the reference.
func TestEveryCommandIsDeclaredOnce(t *testing.T) {
	seen := map[string]bool{}
	var top bytes.Buffer
	if _, err := parseArgs([]string{"--help"}, config.MapEnv{}, nil, &top); err != flag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	ref := Reference()
	for _, d := range commands {
		if seen[d.name] {
			t.Errorf("command %s is declared twice", d.name)
		}
		seen[d.name] = true
		if d.summary == "" || d.detail == "" || d.exec == nil || len(d.exits) == 0 {
			t.Errorf("command %s lacks a summary, detail, exits or exec", d.name)
		}
		if !strings.Contains(top.String(), "\n  "+d.name+" ") {
			t.Errorf("starter --help does not list %s:\n%s", d.name, top.String())
		}
		if !strings.Contains(ref, "### starter "+d.name+"\n") {
			t.Errorf("the reference has no section for %s", d.name)
		}
		var help bytes.Buffer
		if _, err := parseArgs([]string{d.name, "--help"}, config.MapEnv{}, nil, &help); err != flag.ErrHelp {
			t.Fatalf("%s --help: %v", d.name, err)
		}
		flags := map[string]bool{}
		for _, f := range append(append([]flagDecl{}, addressFlags...), d.flags...) {
			if flags[f.name] {
				t.Errorf("%s declares --%s twice", d.name, f.name)
			}
			flags[f.name] = true
			if !strings.Contains(help.String(), "  -"+f.name+"\n") && !strings.Contains(help.String(), "  -"+f.name+" ") {
				t.Errorf("%s --help does not show --%s:\n%s", d.name, f.name, help.String())
			}
		}
		for _, u := range d.exits {
			if _, ok := exitDecls(u.code); !ok {
				t.Errorf("%s declares exit code %d, which is not an exit code", d.name, u.code)
			}
		}
		if !strings.Contains(help.String(), "Exit codes:\n") {
			t.Errorf("%s --help has no exit codes:\n%s", d.name, help.String())
		}
	}
	// Every exit code (docs/reference.md#exit-codes), each once, with the outcome that maps to it.
	want := map[int]string{0: "complete", 3: "blocked", 4: "budget-limited", 5: "stopped", 6: "partial", 1: "failed", 130: "cancelled", 2: "bad usage"}
	if len(exitCodes) != len(want) {
		t.Errorf("%d exit codes, want %d", len(exitCodes), len(want))
	}
	for _, e := range exitCodes {
		if want[e.code] != e.name {
			t.Errorf("exit code %d is %q, want %q", e.code, e.name, want[e.code])
		}
		if e.outcome != "" {
			if code, ok := ExitCode(e.outcome); !ok || code != e.code {
				t.Errorf("outcome %s exits %d", e.outcome, code)
			}
		}
		if !strings.Contains(top.String(), e.name+": "+e.meaning) {
			t.Errorf("starter --help lacks exit code %d", e.code)
		}
	}
}

// A count flag of a command that addresses a run is checked as well as one
// of a command that starts a run.
func TestCountFlagsAreChecked(t *testing.T) {
	_, err := parseArgs([]string{"run", "--objective", "o", "--workspace", "w", "--max-tokens", "-3"}, config.MapEnv{}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--max-tokens="-3"`) {
		t.Fatalf("err = %v", err)
	}
}
