package tools

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

func TestSandboxTmpIsSized(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{TmpMB: 16})
	out := call(t, f.w, "run_command", map[string]any{"command": "head -c 64M /dev/zero > /tmp/big; echo tmp=$?; head -c 64M /dev/zero > /dev/shm/big; echo shm=$?; echo x > /dev/x; df -m /tmp | tail -1"}).Output
	for _, want := range []string{"No space left on device\ntmp=1", "No space left on device\nshm=1", "/dev/x: Read-only file system", " 16 "} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// The workspace and the next command are unaffected.
	if out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "echo fine > ok.txt && cat ok.txt && test ! -e /tmp/big && echo fresh"})); out != "exit code: 0\nfine\nfresh\n" {
		t.Errorf("after a full /tmp: %q", out)
	}
}

func TestSandboxMemoryLimit(t *testing.T) {
	testkit.RequireCgroups(t)
	for _, mode := range []string{sandbox.ModeBwrap, sandbox.ModeOff} {
		t.Run(mode, func(t *testing.T) {
			f := newSandboxFixture(t, mode, sandbox.Config{MemoryMB: 64})
			// 512 MB held by one process: past 64 MB the kernel kills it.
			res := call(t, f.w, "run_command", map[string]any{"command": `x=$(head -c 536870912 /dev/zero | tr '\0' a); echo survived ${#x}`})
			if !res.Failed || !strings.Contains(res.Output, "killed: the command exceeded its memory limit of 64 MB (RALPH_SANDBOX_MEMORY_MB)") || strings.Contains(res.Output, "survived") {
				t.Fatalf("memory hog: failed=%v\n%s", res.Failed, res.Output)
			}
			// The next command runs normally and is not reported as killed.
			if out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "echo next"})); out != "exit code: 0\nnext\n" {
				t.Errorf("after the hog: %q", out)
			}
			// The verify path (Exec) says so too.
			r, err := f.w.Exec(t.Context(), `x=$(head -c 536870912 /dev/zero | tr '\0' a)`, DefaultLimits().CommandTimeout, 1000)
			if err != nil || r.MemoryKill == "" || !strings.HasPrefix(r.Output, "[killed: the command exceeded its memory limit of 64 MB") {
				t.Errorf("Exec: %+v %v", r, err)
			}
		})
	}
}

func TestSandboxPidsLimit(t *testing.T) {
	testkit.RequireCgroups(t)
	for _, mode := range []string{sandbox.ModeBwrap, sandbox.ModeOff} {
		t.Run(mode, func(t *testing.T) {
			f := newSandboxFixture(t, mode, sandbox.Config{Pids: 32})
			res := call(t, f.w, "run_command", map[string]any{"command": `for i in $(seq 100); do sleep 6061 >/dev/null 2>&1 & done; echo looped`, "timeout_seconds": 60})
			if !strings.Contains(res.Output, "fork: Resource temporarily unavailable") {
				t.Fatalf("fork loop: %s", res.Output)
			}
			// Nothing outlives the call (a zombie waiting for the machine's init is dead).
			out, _ := exec.Command("bash", "-c", `for p in $(pgrep -f "sleep 606[1]"); do awk '$3 != "Z" {print}' /proc/$p/stat 2>/dev/null; done`).Output()
			if len(strings.TrimSpace(string(out))) > 0 {
				t.Errorf("processes outlived the call: %s", out)
			}
			if out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "echo next"})); out != "exit code: 0\nnext\n" {
				t.Errorf("after the fork loop: %q", out)
			}
		})
	}
}
