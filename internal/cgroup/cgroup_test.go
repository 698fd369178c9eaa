//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// manager detects the machine's cgroups; in CI (root, cgroups writable) a
// missing one is a failure, elsewhere the test skips.
func manager(t *testing.T, lim Limits) *Manager {
	t.Helper()
	m, why := Detect(lim)
	if m == nil || len(m.Enforced()) < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cgroups with memory and pids are required in CI: %s", why)
		}
		t.Skipf("no writable cgroups with memory and pids here: %s", why)
	}
	return m
}

func run(_ *testing.T, g *Group, script string) (string, error) {
	name, args := g.Wrap("bash", []string{"-c", script})
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// runners are the ways a command gets into its group: Wrap's sh (or v2's
// FD), and on cgroup v1 a thread that entered the group (Enter).
func runners(t *testing.T, m *Manager) map[string]func(*testing.T, *Group, string) (string, error) {
	out := map[string]func(*testing.T, *Group, string) (string, error){"wrapped": run}
	if m.Version() == 1 {
		out["entered"] = runEntered
	}
	return out
}

func TestMemoryLimitKills(t *testing.T) {
	m := manager(t, Limits{MemoryBytes: 64 << 20, Pids: 100}).WithoutFreezer()
	for how, run := range runners(t, m) {
		t.Run(how, func(t *testing.T) { memoryLimitKills(t, m, run) })
	}
}

func memoryLimitKills(t *testing.T, m *Manager, run func(*testing.T, *Group, string) (string, error)) {
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	dirs := append([]string(nil), g.dirs...)
	// 256 MB of touched memory in a 64 MB group.
	out, err := run(t, g, `head -c 268435456 /dev/zero | tail -c 1 >/dev/null; echo survived`)
	if err == nil && strings.Contains(out, "survived") && !g.OOMKilled() {
		// tail buffers little; hold the memory explicitly instead
		out, err = run(t, g, `x=$(head -c 268435456 /dev/zero | tr '\0' a); echo survived`)
	}
	if !g.OOMKilled() {
		t.Fatalf("no OOM kill recorded (err %v, out %q)", err, out)
	}
	g.Close()
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("group %s left behind: %v", d, err)
		}
	}
	// A group that stayed within its limit reports no kill.
	g2, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if out, err := run(t, g2, "echo small"); err != nil || out != "small\n" || g2.OOMKilled() {
		t.Fatalf("small command: %q %v oom=%v", out, err, g2.OOMKilled())
	}
}

func TestPidsLimitAndCleanup(t *testing.T) {
	m := manager(t, Limits{MemoryBytes: 1 << 30, Pids: 20}).WithoutFreezer()
	for how, run := range runners(t, m) {
		t.Run(how, func(t *testing.T) { pidsLimitAndCleanup(t, m, run) })
	}
}

func pidsLimitAndCleanup(t *testing.T, m *Manager, run func(*testing.T, *Group, string) (string, error)) {
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	// Start 60 background sleeps; past the limit fork fails inside the command.
	out, _ := run(t, g, `for i in $(seq 60); do sleep 300 >/dev/null 2>&1 & done; echo started`)
	if !strings.Contains(out, "fork: Resource temporarily unavailable") {
		t.Errorf("fork past the pids limit did not fail inside the command: %q", out)
	}
	procs := readPids(g.procs[len(g.procs)-1])
	if len(procs) == 0 {
		t.Fatal("the sleeps were not in the group")
	}
	g.Close()
	for _, pid := range procs {
		// Orphans are reparented to the machine's init, which may reap
		// them late: a zombie is dead.
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("process %d outlived the group's Close: %s", pid, st)
		}
	}
}
