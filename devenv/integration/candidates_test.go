package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// Round candidates (docs/candidates.md) on the real stack: real
// git clones at the round's base, real sandboxed sessions at once, the
// scripted model telling the candidates apart by their prompt.

// servedCount wraps a script so the test knows how many answers the model
// served: the run's usage must count every one, cancelled candidates' too.
type servedCount struct {
	mu sync.Mutex
	n  int
}

func (c *servedCount) script(play func(tn turn) fakeopenai.Response) fakeopenai.Script {
	s := agentScript(play)
	s.Delivered = func(fakeopenai.Request, fakeopenai.Response) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return s
}

func (c *servedCount) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// candidateTree is where candidate k of round works for run id.
func (e *env) candidateTree(id string, round, k int) string {
	return filepath.Join(e.root, activities.CandidatesDir, names.Flat(id), fmt.Sprintf("round-%d-%d", round, k))
}

// candidateRefs lists the refs that keep candidates in the workspace ws.
func candidateRefs(t *testing.T, ws string) []string {
	t.Helper()
	out := testkit.Git(t, ws, "for-each-ref", "--format=%(refname)", gitws.CandidateRefPrefix)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// noCandidateTrees checks that every candidate's tree of run id is gone.
func (e *env) noCandidateTrees(id string) {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.root, activities.CandidatesDir, names.Flat(id)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.t.Fatal(err)
	}
	for _, d := range entries {
		e.t.Errorf("candidate tree %s was left behind", d.Name())
	}
}

func exists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, rel))
	return err == nil
}

// waitForRef waits until ref names a commit in the repository dir, or
// for at most limit (the caller's assertions then fail).
func waitForRef(dir, ref string, limit time.Duration) {
	_ = wait.For(context.Background(), limit, 50*time.Millisecond, func(ctx context.Context) error {
		return exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "-q", "--verify", ref+"^{commit}").Run()
	})
}

// outcomes lists the candidates' outcomes of a round summary.
func outcomes(cs []workflows.CandidateSummary) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Outcome)
	}
	return out
}

// Three candidates: 1 completes verified, 2's complete fails the verify
// command and it is still at work, 3 hands off first. 1 is chosen and its
// tree becomes the workspace; 2 is cancelled at once (its commands gone,
// its usage counted); 3 is kept on its ref.
func TestRealStackCandidatesVerifiedCompleteWins(t *testing.T) {
	t.Parallel()
	var c servedCount
	e := newEnv(t, c.script(func(tn turn) fakeopenai.Response {
		switch tn.Candidate() {
		case 1:
			switch tn.Step() {
			case 0:
				return tool("write_file", map[string]string{"path": "answer.txt", "content": "right\n"})
			case 1:
				return tool("run_command", map[string]string{"command": "sleep 5"})
			}
			return submit(completeArgs("answer.txt is right", "the verify command passed"))
		case 2:
			switch tn.Step() {
			case 0:
				return tool("write_file", map[string]string{"path": "answer.txt", "content": "wrong\n"})
			case 1:
				return submit(completeArgs("answer.txt written", "looks right to me"))
			case 2:
				return tool("run_command", map[string]any{"command": longCommand, "timeout_seconds": 600})
			}
			return fakeopenai.Text("candidate 2 should have been cancelled")
		case 3:
			if tn.Step() == 0 {
				return tool("write_file", map[string]string{"path": "notes.txt", "content": "half way\n"})
			}
			return submit(continueArgs("notes written", "finish answer.txt"))
		}
		return fakeopenai.Text("no candidate in the prompt")
	}), "RALPH_GIT=local", "RALPH_CANDIDATES=3", "RALPH_COMMAND_TIMEOUT_SECONDS=900")
	e.startWorker()
	id := "cand-verified"
	run := e.start(id, `{"objective":"make answer.txt say right","workspace":"answer","verifyCommand":"test \"$(cat answer.txt)\" = right"}`)
	pids := waitForPIDs(t, filepath.Join(e.candidateTree(id, 1, 2), "pids.txt"), 2)
	res, err := e.result(run)
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, pids, "commands of the cancelled candidate")
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 || res.Usage.ModelCalls != c.total() {
		t.Fatalf("result %+v: want complete after one round, usage counting all %d model calls", res, c.total())
	}
	ws := filepath.Join(e.root, "answer")
	st := e.status(id)
	cands := st.Rounds[0].Candidates
	if got := outcomes(cands); !slices.Equal(got, []string{report.StatusComplete, workflows.CandidateCancelled, report.StatusContinue}) {
		t.Fatalf("outcomes %v", got)
	}
	if !cands[0].Chosen || !cands[0].Verified || !strings.Contains(cands[0].Reason, "verified complete") || cands[0].Ref != "" ||
		cands[0].Commit != res.Checkpoint.Commit || st.Rounds[0].Commit != res.Checkpoint.Commit {
		t.Fatalf("chosen %+v, checkpoint %+v", cands[0], res.Checkpoint)
	}
	var sum int
	for _, cs := range cands {
		sum += cs.Usage.ModelCalls
	}
	if sum != res.Usage.ModelCalls || cands[1].Usage.ModelCalls != 3 {
		t.Fatalf("candidates' model calls %d (cancelled: %d), run's %d", sum, cands[1].Usage.ModelCalls, res.Usage.ModelCalls)
	}
	if head := testkit.Git(t, ws, "rev-parse", "HEAD"); head != res.Checkpoint.Commit {
		t.Fatalf("workspace HEAD %s, want the chosen commit %s", head, res.Checkpoint.Commit)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "answer.txt")); string(data) != "right\n" || exists(ws, "notes.txt") {
		t.Fatalf("workspace answer.txt %q (notes.txt present: %v)", data, exists(ws, "notes.txt"))
	}
	// Every candidate not chosen is kept, the cancelled one too (SPEC 39).
	cancelledRef, kept := gitws.CandidateRef(id, 1, 2), gitws.CandidateRef(id, 1, 3)
	if refs := candidateRefs(t, ws); !slices.Equal(refs, []string{cancelledRef, kept}) || cands[1].Ref != cancelledRef || cands[2].Ref != kept {
		t.Fatalf("candidate refs %v (status: %q, %q), want candidates 2's and 3's", refs, cands[1].Ref, cands[2].Ref)
	}
	if got := testkit.Git(t, ws, "show", kept+":notes.txt"); got != "half way" {
		t.Fatalf("candidate 3's ref holds notes.txt %q", got)
	}
	if got := testkit.Git(t, ws, "show", cancelledRef+":answer.txt"); got != "wrong" {
		t.Fatalf("the cancelled candidate's ref holds answer.txt %q", got)
	}
	for _, cs := range cands {
		if cs.Provider != "builtin" || cs.Model == "" {
			t.Fatalf("candidate %d names provider %q and model %q, want the worker's defaults", cs.Number, cs.Provider, cs.Model)
		}
	}
	e.noCandidateTrees(id)
	scheduled, cancelled := candidateEvents(t, e, id)
	if !slices.Equal(scheduled, []string{"round-1-candidate-1", "round-1-candidate-2", "round-1-candidate-3"}) || cancelled != 1 {
		t.Fatalf("RunRound activity ids %v, %d cancelled", scheduled, cancelled)
	}
	var transcripts int
	for _, f := range e.transcripts() {
		if strings.HasPrefix(filepath.Base(f), "round-1-candidate-") {
			transcripts++
		}
	}
	if transcripts != 3 {
		t.Fatalf("%d candidate transcripts, want 3", transcripts)
	}
	recordHistories(t, e, id)
}

// candidateEvents are the run's RunRound activity ids, sorted, and how
// many of them were cancelled.
func candidateEvents(t *testing.T, e *env, id string) (scheduled []string, cancelled int) {
	t.Helper()
	iter := e.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.RunRoundName {
			scheduled = append(scheduled, a.GetActivityId())
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED {
			cancelled++
		}
	}
	slices.Sort(scheduled)
	return scheduled, cancelled
}

// With the reviewer on and no candidate complete, one review sees both
// candidates' reports and diff stats and names one; the ranking (the
// smaller diff) would have chosen the other.
func TestRealStackCandidatesReviewerChooses(t *testing.T) {
	t.Parallel()
	var c servedCount
	var mu sync.Mutex
	var choicePrompts []string
	e := newEnv(t, c.script(func(tn turn) fakeopenai.Response {
		if tn.IsReview() {
			if tn.Step() == 0 {
				mu.Lock()
				choicePrompts = append(choicePrompts, tn.Prompt())
				mu.Unlock()
			}
			return fakeopenai.Tools(fakeopenai.CallJSON("submit_review", map[string]any{
				"choice": 2, "summary": "Candidate 2 also writes the test.", "findings": []string{"Run test.sh next"}}))
		}
		k := tn.Candidate()
		if tn.Step() == 0 {
			content := "fix\n"
			if k == 2 {
				content = "fix\ntest one\ntest two\n"
			}
			return tool("write_file", map[string]string{"path": fmt.Sprintf("c%d.txt", k), "content": content})
		}
		return submit(continueArgs(fmt.Sprintf("candidate %d wrote c%d.txt", k, k), "keep going"))
	}), "RALPH_GIT=local", "RALPH_CANDIDATES=2", "RALPH_REVIEW=on")
	e.startWorker()
	id := "cand-review"
	res, err := e.result(e.start(id, `{"objective":"fix it with a test","workspace":"chosen","maxRounds":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Usage.ModelCalls != c.total() || res.Report.Summary != "candidate 2 wrote c2.txt" {
		t.Fatalf("result %+v (served %d)", res, c.total())
	}
	if len(choicePrompts) != 1 {
		t.Fatalf("%d choosing reviews, want 1", len(choicePrompts))
	}
	p := choicePrompts[0]
	for _, want := range []string{"Choose between the candidates of Round 1 of 1", "Candidate 1", "candidate 1 wrote c1.txt", "c1.txt | 1 +",
		"Candidate 2", "c2.txt | 3 +++"} {
		if !strings.Contains(p, want) {
			t.Fatalf("the reviewer's prompt lacks %q:\n%s", want, p)
		}
	}
	ws := filepath.Join(e.root, "chosen")
	if !exists(ws, "c2.txt") || exists(ws, "c1.txt") {
		t.Fatal("the workspace is not candidate 2's tree")
	}
	if got := testkit.Git(t, ws, "show", gitws.CandidateRef(id, 1, 1)+":c1.txt"); got != "fix" {
		t.Fatalf("candidate 1's ref holds %q", got)
	}
	cands := e.status(id).Rounds[0].Candidates
	if !cands[1].Chosen || cands[1].Reason != "the reviewer's choice: Candidate 2 also writes the test." {
		t.Fatalf("candidates %+v", cands)
	}
	recordHistories(t, e, id)
}

// One round mixes the builtin agent and the real Codex CLI: the CLI's
// verified complete is chosen over the builtin's hand-off.
func TestRealStackCandidatesBuiltinAndCLI(t *testing.T) {
	t.Parallel()
	codex := fakeopenai.AgentScript{Command: func(int) string { return "echo made by codex > codex.txt" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return completeArgs("codex.txt written", "test -f codex.txt passed")
		}}
	// The CLI's first answer waits for the builtin's hand-off to be kept on
	// its ref, so the builtin's outcome is always continue and its ref is
	// checked below, not only when it happened to finish first.
	var ws atomic.Value // the workspace's path, set once the env has its root
	var builtinKept sync.Once
	e := agentEnv(t, fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.OfferedTool("write_file") == "" {
			builtinKept.Do(func() { waitForRef(ws.Load().(string), gitws.CandidateRef("cand-mixed", 1, 1), 2*time.Minute) })
			return codex.Rule(req)
		}
		if req.Step() == 0 {
			return tool("write_file", map[string]string{"path": "builtin.txt", "content": "made by builtin\n"})
		}
		return submit(continueArgs("builtin.txt written", "write codex.txt"))
	}}, "RALPH_GIT=local", "RALPH_CANDIDATES=2", "RALPH_CANDIDATE_AGENTS=builtin,codex")
	e.workerEnv = append(e.workerEnv, "PATH="+agentsBin+":"+os.Getenv("PATH"))
	w := e.startWorker()
	if !strings.Contains(w.out.String(), "agentCLI.codex") {
		t.Errorf("the start line does not name the candidates' CLI:\n%s", tail(w.out.String(), 2000))
	}
	id := "cand-mixed"
	ws.Store(filepath.Join(e.root, "mixed"))
	res, err := e.result(e.start(id, `{"objective":"write codex.txt","workspace":"mixed","verifyCommand":"test -f codex.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	cands := e.status(id).Rounds[0].Candidates
	if res.Status != report.OutcomeComplete || len(cands) != 2 || cands[0].Provider != "builtin" || cands[1].Provider != "codex" || !cands[1].Chosen {
		t.Fatalf("result %+v, candidates %+v", res, cands)
	}
	mixed := ws.Load().(string)
	if !exists(mixed, "codex.txt") || exists(mixed, "builtin.txt") {
		t.Fatal("the workspace is not the CLI candidate's tree")
	}
	// The builtin handed off first: it is not the workspace, and it is kept.
	if cands[0].Outcome != report.StatusContinue || testkit.Git(t, mixed, "show", gitws.CandidateRef(id, 1, 1)+":builtin.txt") != "made by builtin" {
		t.Fatalf("the builtin candidate (%+v) is not kept on its ref", cands[0])
	}
	e.noKeyAnywhere(id)
}

// A cancel reaches every running candidate: their commands are gone when
// the run closes, and their usage counts.
func TestRealStackCandidatesCancel(t *testing.T) {
	t.Parallel()
	var c servedCount
	e := newEnv(t, c.script(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": longCommand, "timeout_seconds": 600})
		}
		return fakeopenai.Text("a candidate should have been cancelled")
	}), "RALPH_GIT=local", "RALPH_CANDIDATES=2", "RALPH_COMMAND_TIMEOUT_SECONDS=900")
	e.startWorker()
	id := "cand-cancel"
	run := e.start(id, `{"objective":"sleep","workspace":"cancelled"}`)
	pids := append(waitForPIDs(t, filepath.Join(e.candidateTree(id, 1, 1), "pids.txt"), 2),
		waitForPIDs(t, filepath.Join(e.candidateTree(id, 1, 2), "pids.txt"), 2)...)
	if err := e.client.CancelWorkflow(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	var canceled *temporal.CanceledError
	if _, err := e.result(run); !errors.As(err, &canceled) {
		t.Fatalf("run ended with %v, want cancelled", err)
	}
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Errorf("process %d of a candidate outlived the closed run", pid)
		}
	}
	st := e.status(id)
	if got := outcomes(st.Candidates); !slices.Equal(got, []string{workflows.CandidateCancelled, workflows.CandidateCancelled}) ||
		st.Usage.ModelCalls != c.total() || st.Outcome != workflows.OutcomeCancelled {
		t.Fatalf("status %+v (served %d)", st, c.total())
	}
	e.noCandidateTrees(id)
	// What the cancelled candidates' trees held is kept on their refs
	// (their commands wrote pids.txt), on the round's base.
	ws := filepath.Join(e.root, "cancelled")
	want := []string{gitws.CandidateRef(id, 1, 1), gitws.CandidateRef(id, 1, 2)}
	if refs := candidateRefs(t, ws); !slices.Equal(refs, want) {
		t.Fatalf("cancelled candidates' refs %v, want %v", refs, want)
	}
	for i, ref := range want {
		if cs := st.Candidates[i]; cs.Ref != ref || cs.Provider != "builtin" || cs.Model == "" {
			t.Errorf("status of candidate %d: %+v, want its ref %s and the worker's provider and model", i+1, cs, ref)
		}
		if parent := testkit.Git(t, ws, "rev-parse", ref+"^"); parent != testkit.Git(t, ws, "rev-parse", "HEAD") {
			t.Errorf("%s's parent %s is not the round's base", ref, parent)
		}
		if files := testkit.Git(t, ws, "ls-tree", "--name-only", ref); !strings.Contains(files, "pids.txt") {
			t.Errorf("%s holds %q, want the candidate's pids.txt", ref, files)
		}
	}
	recordHistories(t, e, id)
}

// A candidate whose session fails after writing keeps what it wrote on its
// ref (SPEC 39), names the worker's provider and model, and the round goes
// on with the other candidate.
func TestRealStackCandidateFailedKeepsItsRef(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		k := tn.Candidate()
		switch {
		case tn.Step() == 0:
			return tool("write_file", map[string]string{"path": fmt.Sprintf("c%d.txt", k), "content": fmt.Sprintf("candidate %d was here\n", k)})
		case k == 1:
			return fakeopenai.Status(401, "Incorrect API key provided")
		}
		return submit(continueArgs("candidate 2 wrote c2.txt", "keep going"))
	}), "RALPH_GIT=local", "RALPH_CANDIDATES=2")
	e.startWorker()
	id := "cand-failed"
	res, err := e.result(e.start(id, `{"objective":"write files","workspace":"failed","maxRounds":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Report.Summary != "candidate 2 wrote c2.txt" {
		t.Fatalf("result %+v, want candidate 2's handoff", res)
	}
	ws := filepath.Join(e.root, "failed")
	cands := e.status(id).Rounds[0].Candidates
	failedRef := gitws.CandidateRef(id, 1, 1)
	if got := outcomes(cands); !slices.Equal(got, []string{workflows.CandidateFailed, report.StatusContinue}) || cands[0].Ref != failedRef || !cands[1].Chosen {
		t.Fatalf("candidates %+v", cands)
	}
	for _, cs := range cands {
		if cs.Provider != "builtin" || cs.Model == "" {
			t.Fatalf("candidate %d names provider %q and model %q, want the worker's defaults", cs.Number, cs.Provider, cs.Model)
		}
	}
	if refs := candidateRefs(t, ws); !slices.Equal(refs, []string{failedRef}) {
		t.Fatalf("candidate refs %v, want the failed candidate's %s", refs, failedRef)
	}
	if got := testkit.Git(t, ws, "show", failedRef+":c1.txt"); got != "candidate 1 was here" {
		t.Fatalf("the failed candidate's ref holds c1.txt %q", got)
	}
	if !exists(ws, "c2.txt") || exists(ws, "c1.txt") {
		t.Fatal("the workspace is not candidate 2's tree")
	}
	e.noCandidateTrees(id)
}

// kill -9 of the worker running the round: candidate 1 had handed off, so
// only candidate 2 runs again, on the other worker.
func TestRealStackCandidatesWorkerKilled(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	sessions := map[int]int{}
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		k := tn.Candidate()
		mu.Lock()
		if tn.Step() == 0 {
			sessions[k]++
		}
		n := sessions[k]
		mu.Unlock()
		switch {
		case k == 2 && n == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": longCommand, "timeout_seconds": 600})
		case k == 2 && n == 1:
			return fakeopenai.Text("the killed session must never get here")
		case tn.Step() == 0:
			return tool("write_file", map[string]string{"path": fmt.Sprintf("c%d.txt", k), "content": strings.Repeat("line\n", k)})
		}
		return submit(continueArgs(fmt.Sprintf("candidate %d wrote c%d.txt", k, k), "go on"))
	}), "RALPH_GIT=local", "RALPH_CANDIDATES=2", "RALPH_HEARTBEAT_TIMEOUT_SECONDS=2", "RALPH_COMMAND_TIMEOUT_SECONDS=900")
	first := e.startWorker()
	id := "cand-killed"
	run := e.start(id, `{"objective":"survive a crash","workspace":"killed","maxRounds":1}`)
	pids := waitForPIDs(t, filepath.Join(e.candidateTree(id, 1, 2), "pids.txt"), 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := wait.Until(ctx, 100*time.Millisecond, func(context.Context) error {
		if cs := e.status(id).Candidates; len(cs) != 2 || cs[0].Outcome != report.StatusContinue {
			return fmt.Errorf("candidate 1 has not handed off: %+v", cs)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.startWorker()
	first.kill(t)
	assertGone(t, pids, "commands of the killed worker")
	res, err := e.result(run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited || sessions[1] != 1 || sessions[2] != 2 {
		t.Fatalf("result %+v, sessions per candidate %v: want candidate 1 once, candidate 2 twice", res, sessions)
	}
	var attempts []string
	for _, f := range e.transcripts() {
		base := filepath.Base(f)
		attempts = append(attempts, base[:strings.Index(base, "-attempt-")+len("-attempt-")+1])
	}
	slices.Sort(attempts)
	if want := []string{"round-1-candidate-1-attempt-1", "round-1-candidate-2-attempt-1", "round-1-candidate-2-attempt-2"}; !slices.Equal(attempts, want) {
		t.Fatalf("transcripts %v, want %v", attempts, want)
	}
	// The smaller change wins the ranking: candidate 1's one line.
	if ws := filepath.Join(e.root, "killed"); !exists(ws, "c1.txt") || exists(ws, "c2.txt") {
		t.Fatal("the workspace is not candidate 1's tree")
	}
	recordHistories(t, e, id)
}

// A campaign's task loops run candidates like any run (the worker's
// RALPH_CANDIDATES): in each task the second candidate's verified complete
// is chosen, and what lands on the integration branch is its tree.
func TestRealStackCandidatesInCampaign(t *testing.T) {
	t.Parallel()
	bare, _ := bareRepo(t)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		m := campaignTaskPattern.FindStringSubmatch(tn.Prompt())
		if m == nil {
			return fakeopenai.Text("no task in the prompt")
		}
		task, k := m[1], tn.Candidate()
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": fmt.Sprintf("%s-%d.txt", task, k), "content": task + "\n"})
		}
		if k == 1 {
			return submit(continueArgs("half done", "finish it"))
		}
		return submit(completeArgs("task "+task+" done", "its file exists"))
	}), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare, "RALPH_CANDIDATES=2")
	e.startWorker()
	id := "camp-candidates"
	in := campaign.CampaignInput{VerifyCommand: "true", Tasks: []campaign.Task{
		{ID: "a", Objective: "TASK a: write a file"}, {ID: "b", Objective: "TASK b: write a file"}}}
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 5 * time.Minute}, campaign.CampaignWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res campaign.CampaignResult
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil || res.Status != campaign.CampaignComplete {
		t.Fatalf("campaign %+v: %v", res, err)
	}
	check := t.TempDir()
	testkit.Git(t, check, "clone", "-q", bare, ".")
	testkit.Git(t, check, "checkout", "-q", res.Head)
	for _, task := range []string{"a", "b"} {
		if !exists(check, task+"-2.txt") || exists(check, task+"-1.txt") {
			t.Errorf("task %s: the integration head does not hold candidate 2's tree alone", task)
		}
		st := e.status(id + "/" + task)
		if cs := st.Rounds[0].Candidates; len(cs) != 2 || !cs[1].Chosen {
			t.Errorf("task %s's round: candidates %+v", task, cs)
		}
	}
}

// As the model of one candidate: look for the other candidate's tree and
// the workspace from inside the sandbox, and plant a program in the
// clone's .git for the worker's git to run. Nothing of the other tree or
// the host's paths reaches the model, and no planted program runs on the
// host.
func TestRealStackCandidateSeesNoOtherTree(t *testing.T) {
	t.Parallel()
	canary := filepath.Join(t.TempDir(), "pwned")
	probe := strings.Join([]string{
		"ls -la .. ../.. / 2>&1",
		"find / -xdev -name 'mine-*.txt' 2>/dev/null",
		"cat .git/config",
		"mkdir -p .git/hooks; echo 'touch " + canary + "' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
		"printf '[core]\\n\\tfsmonitor = touch " + canary + "\\n' >> .git/config",
		"echo done probing",
	}, "; ")
	var mu sync.Mutex
	outputs := map[int]string{}
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		k := tn.Candidate()
		switch tn.Step() {
		case 0:
			return tool("write_file", map[string]string{"path": fmt.Sprintf("mine-%d.txt", k), "content": "secret of candidate " + strconv.Itoa(k) + "\n"})
		case 1:
			return tool("run_command", map[string]string{"command": probe})
		case 2:
			mu.Lock()
			outputs[k] = tn.LastToolOutput()
			mu.Unlock()
		}
		return submit(continueArgs(fmt.Sprintf("candidate %d probed", k), "go on"))
	}), "RALPH_SANDBOX=bwrap", "RALPH_GIT=local", "RALPH_CANDIDATES=2")
	e.startWorker()
	id := "cand-probe"
	res, err := e.result(e.start(id, `{"objective":"probe","workspace":"probed","maxRounds":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("a program planted in a candidate's .git ran on the host")
	}
	for k, out := range outputs {
		other := fmt.Sprintf("mine-%d.txt", 3-k)
		if !strings.Contains(out, "done probing") || strings.Contains(out, other) || strings.Contains(out, e.root) {
			t.Errorf("candidate %d saw the other tree or a host path:\n%s", k, out)
		}
	}
	if len(outputs) != 2 || res.Status != report.OutcomeBudgetLimited {
		t.Fatalf("result %+v, probes %d", res, len(outputs))
	}
	ws := filepath.Join(e.root, "probed")
	if exists(ws, ".git/hooks/pre-commit") || strings.Contains(testkit.Git(t, ws, "config", "--list", "--local"), "fsmonitor") {
		t.Fatal("a candidate's .git plant reached the workspace's repository")
	}
}
