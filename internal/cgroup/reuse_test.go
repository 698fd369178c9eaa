//go:build linux

package cgroup

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A group reused for command after command (gitws's stations) is reset
// between them: the next command's peak and OOM kills are its own, and the
// group is idle only with no process of another in it.
func TestResetGivesTheNextCommandItsOwnPeakAndKills(t *testing.T) {
	m := manager(t, Limits{MemoryBytes: 64 << 20, Pids: 100}).WithoutFreezer()
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if m.Version() == 2 {
		if g.Reset() == nil {
			t.Fatal("a cgroup v2 group was reset (its memory.peak resets per descriptor)")
		}
		return
	}
	const hog = 16 << 20
	if out, err := run(t, g, `x=$(head -c 16777216 /dev/zero | tr '\0' a); echo ${#x}`); err != nil || out != "16777216\n" {
		t.Fatalf("hog: %q %v", out, err)
	}
	if p := g.PeakBytes(); p < hog {
		t.Fatalf("peak %d after holding %d bytes", p, hog)
	}
	if !g.Idle() {
		t.Fatal("the group is not idle after its command ended")
	}
	if err := g.Reset(); err != nil {
		t.Fatal(err)
	}
	if p := g.PeakBytes(); p > 1<<20 {
		t.Fatalf("peak %d right after the reset", p)
	}
	if out, err := run(t, g, "echo small"); err != nil || out != "small\n" {
		t.Fatalf("small: %q %v", out, err)
	}
	if p := g.PeakBytes(); p >= hog {
		t.Fatalf("a small command after the hog reports the hog's peak: %d", p)
	}

	// 256 MB in the 64 MB group: killed, and counted for this command only.
	_, _ = run(t, g, `x=$(head -c 268435456 /dev/zero | tr '\0' a); echo survived`)
	if !g.OOMKilled() {
		t.Fatal("no OOM kill recorded")
	}
	if err := g.Reset(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, g, "echo small"); err != nil || out != "small\n" || g.OOMKilled() {
		t.Fatalf("the command after an OOM kill: %q %v, oom=%v", out, err, g.OOMKilled())
	}

	// A process left in the group keeps it from being idle.
	name, args := g.Wrap("sleep", []string{"30"})
	left := exec.Command(name, args...)
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	defer left.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); g.Idle(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the group stayed idle with a sleep in it")
		}
	}
	_ = left.Process.Kill()
	_ = left.Wait()
	if !g.Idle() {
		t.Fatalf("not idle after the sleep ended: %v", strings.Join(g.procs, " "))
	}
}
