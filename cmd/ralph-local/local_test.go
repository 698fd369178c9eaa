package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
)

// newLocal is a ralph-local run in a temp dir on free ports; extra are
// environment entries.
func newLocal(t *testing.T, signals chan os.Signal, extra ...string) (*local, *testkit.Buffer, *int) {
	t.Helper()
	ports := make([]string, 2)
	for i := range ports {
		p, err := temporalserver.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = strconv.Itoa(p)
	}
	environ := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		EnvTemporalPort + "=" + ports[0], EnvUIPort + "=" + ports[1],
		// A TEMPORAL_ADDRESS of the caller's is never used.
		"TEMPORAL_ADDRESS=192.0.2.1:7233"}, extra...)
	out := &testkit.Buffer{}
	serverPID := new(int)
	return &local{dir: t.TempDir(), environ: environ, stdout: out, stderr: out, signals: signals,
		serverUp: func(pid int) { *serverPID = pid }}, out, serverPID
}

func TestDemoRunCompletesAndStopsTheServer(t *testing.T) {
	l, out, serverPID := newLocal(t, make(chan os.Signal))
	if rc := l.main(nil); rc != 0 {
		t.Fatalf("exit %d, output:\n%s", rc, out)
	}
	if _, err := os.Stat(filepath.Join(l.dir, ".ralph", "workspaces", "demo", "greet.sh")); err != nil {
		t.Fatalf("the demo's work is missing: %v\n%s", err, out)
	}
	// The demo's objective names its check: the run is verified by it, and
	// every round that changed the workspace is a git commit there (round 2
	// only re-runs the test), both shown at the end.
	for _, want := range []string{"model mode: demo, because OPENAI_API_KEY and RALPH_MODEL are not set", "greet.sh", "the run completed",
		"the verify command passed (exit 0): bash greet_test.sh", "git checkpoints: RALPH_GIT=local",
		"per-round commits in the workspace (git log --oneline):", "ralph: round 1/", "continue: Wrote greet.sh", "ralph: workspace initialised"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if *serverPID == 0 || proc.Alive(*serverPID) {
		t.Errorf("dev server pid %d: still running after the run (or never started)", *serverPID)
	}
}

// TestInterruptCancelsTheRunAndLeavesNothing: a Ctrl-C while a round waits
// on the model cancels the run (exit 130), and the dev server is gone.
func TestInterruptCancelsTheRunAndLeavesNothing(t *testing.T) {
	model := fakeopenai.NewServer(fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Hang()}})
	defer model.Close()
	signals := make(chan os.Signal, 1)
	l, out, serverPID := newLocal(t, signals, "OPENAI_API_KEY=sk-local-test", "RALPH_MODEL=scripted",
		"OPENAI_BASE_URL="+model.BaseURL(), "RALPH_WORKSPACE=interrupt")
	go func() {
		for model.RequestCount() == 0 {
			time.Sleep(50 * time.Millisecond)
		}
		signals <- os.Interrupt
	}()
	if rc := l.main([]string{"wait", "for", "the", "model"}); rc != exitCancelled {
		t.Fatalf("exit %d, want %d; output:\n%s", rc, exitCancelled, out)
	}
	if !strings.Contains(out.String(), "model mode: real") {
		t.Errorf("output lacks the real model mode:\n%s", out)
	}
	if *serverPID == 0 || proc.Alive(*serverPID) {
		t.Errorf("dev server pid %d still running after the cancelled run", *serverPID)
	}
	if strings.Contains(out.String(), "context canceled") {
		t.Errorf("the cancelled round was relayed as a worker error:\n%s", out)
	}
	if strings.Contains(out.String(), "sk-local-test") {
		t.Error("the API key was printed")
	}
}

func TestBadSettingsAreNamed(t *testing.T) {
	for env, want := range map[string]string{
		EnvTemporalPort + "=0":     EnvTemporalPort,
		EnvUIPort + "=x":           EnvUIPort,
		EnvServerTimeout + "=-1":   EnvServerTimeout,
		EnvTemporalPort + "=8233":  "are both 8233",
		EnvWorkerTimeout + "=1.5":  EnvWorkerTimeout,
		EnvTemporalPort + "=70000": "at most 65535",
		"RALPH_DEMO=maybe":         "RALPH_DEMO",
	} {
		_, err := parseSettings(nil, envMap([]string{env}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to name %s", env, err, want)
		}
	}
	// RALPH_DEMO reads like every boolean setting of the worker.
	s, err := parseSettings(nil, map[string]string{"RALPH_DEMO": "on", "RALPH_MODEL": "m", "OPENAI_API_KEY": "k"})
	if err != nil || !s.demo {
		t.Errorf("RALPH_DEMO=on: demo %v, %v", s.demo, err)
	}
}

// The campaign demo starts from a fresh bare remote each time, and its
// verify command passes on the seed and refuses conflict markers.
func TestCampaignDemoSeedsAFreshRemote(t *testing.T) {
	l, _, _ := newLocal(t, make(chan os.Signal))
	state := filepath.Join(l.dir, stateDir)
	env := localEnv(map[string]string{}, "127.0.0.1:1", state)
	campaignEnv(env, state)
	d, err := l.prepareCampaign(state, env)
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(d.remote, "refs", "heads", "ralph", "stale")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("0000000000000000000000000000000000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err = l.prepareCampaign(state, env); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the earlier demo's branch survived: %v", err)
	}
	if env[envGit] != "remote" || env["RALPH_GIT_REMOTE"] != d.remote {
		t.Errorf("env = %v", env)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", d.remote, clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v: %s", err, out)
	}
	if out, err := exec.Command("bash", filepath.Join(clone, "check.sh")).CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("check.sh on the seed: %v: %s", err, out)
	}
	conflicted := "# Greetings, one per line\n<<<<<<< HEAD\nHello, world!\n=======\nBonjour, le monde !\n>>>>>>> integration\n"
	if err := os.WriteFile(filepath.Join(clone, "greetings.txt"), []byte(conflicted), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", filepath.Join(clone, "check.sh")).CombinedOutput(); err == nil || !strings.Contains(string(out), "FAIL: conflict markers") {
		t.Errorf("check.sh passed conflict markers: %v: %s", err, out)
	}
	tasks, err := os.ReadFile(d.tasks)
	if err != nil || !strings.Contains(string(tasks), "- [ ] french: In greetings.txt") {
		t.Errorf("tasks file: %v %q", err, tasks)
	}
}

// make demo-campaign end to end: the conflicting pair both land (one on
// its second go, its conflict resolved by keeping both lines), the third
// after its dependency, and the integration branch's graph is shown.
func TestCampaignDemoMergesEveryTask(t *testing.T) {
	l, out, _ := newLocal(t, make(chan os.Signal))
	if rc := l.main([]string{campaignFlag}); rc != 0 {
		t.Fatalf("exit %d, output:\n%s", rc, out)
	}
	for _, want := range []string{"Campaign campaign-demo: complete, 3 of 3 tasks merged", "go 2 round", "conflicts in greetings.txt",
		"log --graph --oneline", "ralph: merge task readme", "The previous report named greetings.txt as conflicting"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	remote := filepath.Join(l.dir, stateDir, campaignDir, "remote.git")
	got, err := exec.Command("git", "--git-dir", remote, "show", "ralph/campaigns/"+campaignID+"/integration:greetings.txt").CombinedOutput()
	if err != nil || !strings.Contains(string(got), "Hello, world!\n") || !strings.Contains(string(got), "Bonjour, le monde !\n") || strings.Contains(string(got), "<<<<<<<") {
		t.Errorf("greetings.txt on the integration branch: %v\n%s", err, got)
	}
}

// The planning demo (--plan) seeds the campaign demo's files afresh; its
// objective is one the scripted planner plans (three lines of a file the
// seed holds, each added by a task the scripted model plays); check.sh
// passes on the seed.
func TestPlanDemoSeedsAFreshRemote(t *testing.T) {
	s, err := parseSettings([]string{planFlag}, map[string]string{})
	if err != nil || !s.plan || s.campaign {
		t.Fatalf("--plan: %+v, %v", s, err)
	}
	if _, err := parseSettings([]string{planFlag, "more"}, map[string]string{}); err == nil || !strings.Contains(err.Error(), "takes no objective") {
		t.Errorf("--plan with an objective: %v", err)
	}
	l, _, _ := newLocal(t, make(chan os.Signal))
	state := filepath.Join(l.dir, stateDir)
	env := localEnv(map[string]string{}, "127.0.0.1:1", state)
	campaignEnv(env, state)
	remote, err := l.preparePlan(state, env)
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", remote, clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v: %s", err, out)
	}
	if out, err := exec.Command("bash", filepath.Join(clone, "check.sh")).CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("check.sh on the seed: %v: %s", err, out)
	}
	m := regexp.MustCompile(`^In (\S+), add the lines ((?:"[^"]+"(?:, | and )?)+) after the first line\.$`).FindStringSubmatch(planObjective)
	if m == nil || strings.Count(m[2], `"`) != 6 {
		t.Fatalf("the objective %q is not one the scripted planner plans", planObjective)
	}
	if _, err := os.Stat(filepath.Join(clone, m[1])); err != nil {
		t.Errorf("the objective names %s, not in the seed: %v", m[1], err)
	}
}

// make demo-plan end to end: wave 1's plan (three tasks, the second after
// the first) is printed, its tasks merge, wave 2's planner finds the lines
// on the head and says complete, the head's verify passes, and the graph is
// shown.
func TestPlanDemoCompletesVerified(t *testing.T) {
	l, out, _ := newLocal(t, make(chan os.Signal))
	if rc := l.main([]string{planFlag}); rc != 0 {
		t.Fatalf("exit %d, output:\n%s", rc, out)
	}
	for _, want := range []string{"wave 1 plan: tasks:", "plan w1-line-2 (after w1-line-1): In greetings.txt", "Campaign plan-demo: complete, 3 of 3 tasks merged",
		"wave 1 tasks (w1-line-1, w1-line-2, w1-line-3)", "wave 2 complete, head verify passed", "log --graph --oneline", "ralph: merge task w1-line-2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	remote := filepath.Join(l.dir, stateDir, campaignDir, "remote.git")
	got, err := exec.Command("git", "--git-dir", remote, "show", "ralph/campaigns/"+planID+"/integration:greetings.txt").CombinedOutput()
	for _, line := range []string{"Hello, world!\n", "Bonjour, le monde !\n", "Hallo, Welt!\n"} {
		if err != nil || !strings.Contains(string(got), line) || strings.Contains(string(got), "<<<<<<<") {
			t.Errorf("greetings.txt on the integration branch lacks %q: %v\n%s", line, err, got)
		}
	}
}
