package adversarial

import (
	"bytes"
	"context"
	"fmt"
	"github.com/ralph-temporal/ralph/agent/tools"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/devenv/adversarial/scriptcli"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// TestSwappedTestIsNotVerified: issue 41 finding 3. The CLI's background
// watcher trades the protected test for `exit 0` the moment the worker's
// protected-path check has read it and puts it back once verify read it.
// Every process of the attempt is frozen while the submission is checked,
// so verify runs the real, failing test and the report is refused; the
// host sees the watcher frozen while verify starts.
func TestSwappedTestIsNotVerified(t *testing.T) {
	r := newCLIRig(t, "swap", func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Tools(fakeopenai.CallJSON("ralph_submit_report",
			map[string]any{"status": "complete", "summary": "Done.", "evidence": []string{"tests pass"}, "nextSteps": []string{}, "blocker": ""}))
	})
	test := filepath.Join(r.j.Dir, scriptcli.Protected)
	if err := os.MkdirAll(filepath.Dir(test), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, []byte("echo the real test fails\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var states []string
	r.seen = func(ev agent.Event) {
		if ev.Kind == agent.EventVerifyStart {
			states = append(states, watcherStates(t)...)
		}
	}
	res, err := r.run(t, agent.Request{VerifyCommand: "sh " + scriptcli.Protected, ProtectedPaths: [][]string{{scriptcli.Protected}}})
	if err == nil || res.Verification != nil {
		t.Fatalf("the report was accepted: verification %+v, err %v", res.Verification, err)
	}
	results := r.events(agent.EventVerifyResult)
	if len(results) == 0 {
		t.Fatal("verify never ran")
	}
	for _, v := range results {
		if !v.Failed || !strings.Contains(v.Output, "the real test fails") {
			t.Errorf("verify did not run the real test: failed %v, output %q", v.Failed, v.Output)
		}
	}
	if !outputHas(r, "watch:", "swapped") {
		t.Error("the watcher never swapped the test: the probe proved nothing")
	}
	if len(states) == 0 {
		t.Fatal("no watcher process was running when verify started")
	}
	for _, s := range states {
		if !strings.Contains(s, "frozen") {
			t.Errorf("the watcher ran while the submission was checked: %s", s)
		}
	}
}

// watcherStates describes, from the host, each process of the scripted
// watcher: its State and its group's freezer state; "frozen" when either
// says nothing of it runs.
func watcherStates(t *testing.T) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(scriptcli.WatchMark)) {
			continue
		}
		state := statusLine(filepath.Join("/proc", e.Name(), "status"), "State:")
		frz := freezerState(filepath.Join("/proc", e.Name(), "cgroup"))
		desc := fmt.Sprintf("pid %s %s, freezer %q", e.Name(), state, frz)
		if strings.HasPrefix(state, "T") || frz == "FROZEN" || frz == "frozen 1" {
			desc += ": frozen"
		}
		out = append(out, desc)
	}
	return out
}

func statusLine(file, key string) string {
	data, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// freezerState is the v1 freezer.state or the v2 cgroup.events frozen
// line of the group a /proc/<pid>/cgroup names ("" when none).
func freezerState(file string) string {
	data, _ := os.ReadFile(file)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "freezer" {
			if st, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state")); err == nil {
				return strings.TrimSpace(string(st))
			}
		}
		if parts[1] == "" {
			if v := statusLine(filepath.Join("/sys/fs/cgroup", parts[2], "cgroup.events"), "frozen "); v != "" {
				return "frozen " + v
			}
		}
	}
	return ""
}

// BenchmarkSubmissionFreeze: what a submission's freeze and thaw of the
// attempt's sandbox (bubblewrap, a shell and two background processes)
// cost, with this machine's freezer.
func BenchmarkSubmissionFreeze(b *testing.B) {
	j := New(b)
	hold := &tools.Hold{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = j.WS.Spawn(ctx, tools.Process{Argv: []string{"sh", "-c", "sleep 600 & sleep 600 & wait"}, Hold: hold}, time.Hour, 1000)
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(time.Second) // the sandbox is up (the hold attached)
	b.Logf("submissionFreeze: %s", j.Sandbox.SubmissionFreeze())
	var freeze, thaw time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := hold.Freeze(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		hold.Thaw()
		freeze, thaw = freeze+t1.Sub(t0), thaw+time.Since(t1)
	}
	b.ReportMetric(float64(freeze.Microseconds())/1000/float64(b.N), "freeze-ms")
	b.ReportMetric(float64(thaw.Microseconds())/1000/float64(b.N), "thaw-ms")
}
