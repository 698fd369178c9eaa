package adversarial

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// goModule writes a module with a passing package q and a package p whose
// protected test passes only when /tmp/ralph-forge exists, checked by a raw
// syscall that Go's test cache does not record: a run that passed with the
// file leaves a cached "ok" that the same tree's real run contradicts.
func goModule(t *testing.T, dir string) {
	t.Helper()
	for name, data := range map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.22\n",
		"q/q.go":      "package q\n\nfunc Two() int { return 2 }\n",
		"q/q_test.go": "package q\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal(\"two\")\n\t}\n}\n",
		"p/p_test.go": "package p\n\nimport (\n\t\"syscall\"\n\t\"testing\"\n)\n\nfunc TestProtected(t *testing.T) {\n\tvar st syscall.Stat_t\n" +
			"\tif syscall.Stat(\"/tmp/ralph-forge\", &st) != nil {\n\t\tt.Fatal(\"the real test fails\")\n\t}\n}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		WriteFile(t, filepath.Join(dir, name), data)
	}
}

// verify runs command as a verify does (ExecFreshHome).
func verify(t *testing.T, ws *tools.Workspace, command string) tools.ExecResult {
	t.Helper()
	res, err := ws.ExecFreshHome(context.Background(), command, 5*time.Minute, 64<<10)
	if err != nil {
		t.Fatalf("verify %q: %v", command, err)
	}
	return res
}

// A task forges a passing cached result for the protected test of its own
// tree and tries to write the line's cache through its copy; the verify of
// that very tree still runs the real test (it fails), and the line keeps
// none of the task's bytes (SPEC 41, warm verifies).
func TestForgedToolCacheNeverReachesAVerify(t *testing.T) {
	j := New(t)
	const line = "campaign-poison"
	open := func(name string) *tools.Workspace {
		dir := filepath.Join(j.Root, name)
		goModule(t, dir)
		return j.Open(dir, tools.WithToolCache(line))
	}

	// The merge verify's scratch: a cold verify, committed as if it landed;
	// the next verify starts warm from it.
	merge := open("merge")
	cold := verify(t, merge, "go env GOCACHE && go test ./q/")
	if cold.ExitCode != 0 || !strings.Contains(cold.Output, sandbox.ToolCacheMount+"/go-build") || strings.Contains(cold.Output, "(cached)") {
		t.Fatalf("cold verify: exit %d, %q", cold.ExitCode, cold.Output)
	}
	if _, err := cold.ToolCache.Commit(); err != nil {
		t.Fatal(err)
	}
	warm := verify(t, merge, "go test ./q/")
	if warm.ExitCode != 0 || !strings.Contains(warm.Output, "(cached)") {
		t.Fatalf("the verify after a commit did not start warm: %q", warm.Output)
	}
	t.Logf("verify cold %v, warm %v (its copy %v)", cold.Duration, warm.Duration, warm.ToolCache.Took)
	warm.ToolCache.Remove()

	// A task's workspace: its commands start from a copy of the line and
	// forge a passing result for the protected test of this very tree.
	task := open("task")
	forged := Run(t, task, "touch /tmp/ralph-forge && go test ./p/ && go test ./p/")
	if forged.ExitCode != 0 || !strings.Contains(forged.Output, "(cached)") {
		t.Fatalf("the model's own copy does not hold the forged result: %q", forged.Output)
	}
	// It writes the line's files (the read-only ones its copy did not write
	// itself) through its copy: append, chmod, touch.
	tamper := Run(t, task, `n=0; m=0; for f in $(find "$GOCACHE" -type f ! -perm -u+w); do m=$((m+1)); `+
		`if { echo forged >> "$f"; } 2>/dev/null || chmod u+w "$f" 2>/dev/null || touch "$f" 2>/dev/null; then n=$((n+1)); fi; done; echo "tried=$m tampered=$n"`)
	if !strings.Contains(tamper.Output, "tampered=0") || strings.Contains(tamper.Output, "tried=0 ") {
		t.Fatalf("a command wrote through its copy into the line: %q", tamper.Output)
	}

	// The verify of the same tree runs the real test: it fails.
	v := verify(t, task, "go test ./p/")
	v.ToolCache.Remove()
	if v.ExitCode == 0 || strings.Contains(v.Output, "(cached)") || !strings.Contains(v.Output, "the real test fails") {
		t.Fatalf("the verify trusted the model's cache: exit %d, %q", v.ExitCode, v.Output)
	}
	again := verify(t, merge, "go test ./q/")
	again.ToolCache.Remove()
	if again.ExitCode != 0 || !strings.Contains(again.Output, "(cached)") {
		t.Fatalf("the line's cache was damaged by the model's commands: %q", again.Output)
	}
	// On the host: nothing of the line carries the model's bytes.
	lines := filepath.Join(j.Session, "homes", ".toolcache", "lines", line)
	files := 0
	_ = filepath.WalkDir(lines, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
			if b, _ := os.ReadFile(path); strings.Contains(string(b), "forged") {
				t.Errorf("the line's %s holds the model's write", path)
			}
		}
		return nil
	})
	if files == 0 {
		t.Fatal("the line holds no files: the commit did not happen")
	}
}

// A line damaged on the host (a cache file cut short) is rebuilt: the next
// verify starts cold and passes, and the line is written anew.
func TestDamagedToolCacheIsRebuilt(t *testing.T) {
	j := New(t)
	const line = "campaign-damaged"
	dir := filepath.Join(j.Root, "merge")
	goModule(t, dir)
	ws := j.Open(dir, tools.WithToolCache(line))
	first := verify(t, ws, "go test ./q/")
	if _, err := first.ToolCache.Commit(); err != nil || first.ExitCode != 0 {
		t.Fatalf("first verify: %v, %q", err, first.Output)
	}
	lineDir := filepath.Join(j.Session, "homes", ".toolcache", "lines", line)
	var victim string
	_ = filepath.WalkDir(lineDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, "-d") && victim == "" {
			victim = path
		}
		return nil
	})
	if err := os.Truncate(victim, 0); err != nil {
		t.Fatal(err)
	}
	second := verify(t, ws, "go test ./q/")
	if second.ToolCache.Rebuilt == "" || second.ToolCache.From.Files != 0 {
		t.Fatalf("a damaged line was trusted: %+v", second.ToolCache)
	}
	if second.ExitCode != 0 || strings.Contains(second.Output, "(cached)") {
		t.Fatalf("the verify after the damage: exit %d, %q", second.ExitCode, second.Output)
	}
	if _, err := os.Stat(lineDir); !os.IsNotExist(err) {
		t.Fatalf("the damaged line is still there: %v", err)
	}
	if _, err := second.ToolCache.Commit(); err != nil {
		t.Fatal(err)
	}
	if markers, _ := filepath.Glob(filepath.Join(lineDir, "*", ".ralph-toolcache")); len(markers) != 1 {
		t.Fatalf("the rebuilt line was not written anew: layers %v", markers)
	}
}

// An agent CLI (Spawn) runs its commands from the model's copy of the line
// too: a task's first round starts warm whatever its provider, and what the
// CLI's commands write stays in that copy (SPEC 41).
func TestSpawnedAgentStartsWarm(t *testing.T) {
	j := New(t)
	const line = "campaign-spawn"
	merge := filepath.Join(j.Root, "merge")
	goModule(t, merge)
	landed := verify(t, j.Open(merge, tools.WithToolCache(line)), `mkdir -p "$GOCACHE/ab" && echo from-the-line > "$GOCACHE/ab/entry"`)
	if _, err := landed.ToolCache.Commit(); err != nil || landed.ExitCode != 0 {
		t.Fatalf("the landed verify: %v, %q", err, landed.Output)
	}

	task := filepath.Join(j.Root, "task")
	goModule(t, task)
	res, err := j.Open(task, tools.WithToolCache(line)).Spawn(context.Background(), tools.Process{Argv: []string{"sh", "-c",
		`echo "GOCACHE=$GOCACHE"; cat "$GOCACHE/ab/entry"; { echo forged >> "$GOCACHE/ab/entry" && echo wrote; } 2>/dev/null; ` +
			`echo mine > "$GOCACHE/ab/own" && echo own-ok`}}, time.Minute, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GOCACHE=" + sandbox.ToolCacheMount + "/go-build\n", "from-the-line\n", "own-ok\n"} {
		if !strings.Contains(res.Output, want) {
			t.Fatalf("the spawned agent's commands did not start from the line's copy (no %q): %q", want, res.Output)
		}
	}
	if strings.Contains(res.Output, "wrote") {
		t.Fatalf("a spawned command wrote the line's file through its copy: %q", res.Output)
	}
	entry, _ := filepath.Glob(filepath.Join(j.Session, "homes", ".toolcache", "lines", line, "*", "go-build", "ab", "entry"))
	if len(entry) != 1 {
		t.Fatalf("the line's layers hold the entry %d times, want once", len(entry))
	}
	if b, err := os.ReadFile(entry[0]); err != nil || string(b) != "from-the-line\n" {
		t.Fatalf("the line's file on the host: %q, %v", b, err)
	}
}
