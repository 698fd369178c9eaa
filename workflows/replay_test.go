package workflows_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/internal/historyfile"
	"github.com/ralph-temporal/ralph/workflows"
)

// historiesDir holds histories recorded from real dev-server runs, one
// directory per release (`make histories` records a new one). The corpus only
// grows: a directory is never re-recorded or edited, so every build's
// histories keep replaying against all later code.
const historiesDir = "testdata/histories"

// manifestName lists a directory's histories with their SHA-256 (the format
// of `sha256sum`), so an edited or re-recorded history fails the test.
const manifestName = "SHA256SUMS"

// releases are the corpus's directories, oldest name first.
func releases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(historiesDir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("%s: only release directories belong in %s (record with `make histories`)", e.Name(), historiesDir)
			continue
		}
		dirs = append(dirs, filepath.Join(historiesDir, e.Name()))
	}
	if len(dirs) == 0 {
		t.Fatalf("no recorded histories in %s", historiesDir)
	}
	return dirs
}

// acceptedDifferences are the reviewed ways today's commands differ from
// those of a recorded history, by history: each is a later build's
// deliberate change that an open run of then takes on harmlessly. Anything
// else that differs fails the replay.
var acceptedDifferences = map[string][]acceptedDifference{
	// The continuation carries the idle counter since the idle budget.
	"2026-11-pre-versioning/continue-as-new-run1.json": {{"continue-as-new", "idleRounds"}},
	// The review may defer (a durable wait) since provider limits.
	"2026-12-01-review/review-approve.json": {{"activity", "deferrable"}},
	"2026-12-01-review/review-revise.json":  {{"activity", "deferrable"}},
	// A continued run says running, not starting, from its first upsert.
	"2026-12-01-search-attributes-on/continue-as-new-run2.json": {{"upsert", workflows.SearchAttrPhase}},
}

// TestReplayRecordedHistories replays every history of every release
// against the current workflow code: a change that breaks determinism for a
// run that any earlier build started fails here.
func TestReplayRecordedHistories(t *testing.T) {
	for _, dir := range releases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			files := histories(t, dir)
			for _, file := range files {
				t.Run(strings.TrimSuffix(historyfile.Name(file), ".json"), func(t *testing.T) {
					accepted := acceptedDifferences[filepath.Join(filepath.Base(dir), historyfile.Name(file))]
					if err := replayChecked(readHistory(t, file), workflows.Ralph, accepted...); err != nil {
						t.Fatalf("replay %s: %v", file, err)
					}
				})
			}
		})
	}
}

func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	hist, err := client.HistoryFromJSON(bytes.NewReader(historyJSON(t, file)), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return hist
}

// historyJSON is a history file's JSON as it was recorded.
func historyJSON(t *testing.T, file string) []byte {
	t.Helper()
	data, err := historyfile.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// runIDOf is the id of the run whose history hist is, as a worker sees it:
// a reset run's is in the workflow task its reset failed (the replayer's
// default, the started event's original run id, is the run it reset).
func runIDOf(hist *historypb.History) string {
	runID := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()
	for _, ev := range hist.GetEvents() {
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW {
			runID = a.GetNewRunId()
		}
	}
	return runID
}

// histories are a release's history files, checked against its manifest.
func histories(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, zipped...)
	slices.Sort(files)
	if len(files) == 0 {
		t.Fatalf("%s holds no histories", dir)
	}
	f, err := os.Open(filepath.Join(dir, manifestName))
	if err != nil {
		t.Fatalf("%s has no %s: %v", dir, manifestName, err)
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s/%s: malformed line %q", dir, manifestName, sc.Text())
		}
		listed[name] = sum
	}
	var names []string
	for _, file := range files {
		name := historyfile.Name(file)
		if slices.Contains(names, name) {
			t.Errorf("%s is in %s both plain and gzipped", name, dir)
		}
		names = append(names, name)
		sum := sha256.Sum256(historyJSON(t, file))
		switch want, ok := listed[name]; {
		case !ok:
			t.Errorf("%s is not in %s/%s: record new histories into a new directory", file, dir, manifestName)
		case want != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since it was recorded: histories are never rewritten, record into a new directory", file)
		}
	}
	for name := range listed {
		if !slices.Contains(names, name) {
			t.Errorf("%s/%s lists %s, which is gone: histories are never removed", dir, manifestName, name)
		}
	}
	return files
}

// TestReplayDetectsNonDeterminism proves the harness can fail: a workflow
// that schedules a different activity than the recorded one must not replay.
func TestReplayDetectsNonDeterminism(t *testing.T) {
	file := histories(t, releases(t)[0])[0]
	changed := func(ctx workflow.Context, _ []byte, _ *workflows.Continuation) (*workflows.Result, error) {
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: workflows.ResolveLimitsTimeout})
		return nil, workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 1}), "SomethingElse").Get(ctx, nil)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: workflows.WorkflowName})
	if err := replayer.ReplayWorkflowHistory(nil, readHistory(t, file)); err == nil {
		t.Fatalf("a changed workflow replayed %s without a non-determinism error", file)
	}
}

// TestCorpusHoldsEveryVersionMarker: every GetVersion change id the
// workflow uses appears in at least one recorded history, so the replay
// test runs both sides of every guard (the old path in histories from
// before the change, the new one in a history that recorded the marker).
func TestCorpusHoldsEveryVersionMarker(t *testing.T) {
	inUse := versionIDsInSource(t)
	if len(inUse) == 0 {
		t.Fatal("found no workflow.GetVersion call in the package's source")
	}
	seen := map[string]bool{}
	dc := converter.GetDefaultDataConverter()
	for _, dir := range releases(t) {
		for _, file := range histories(t, dir) {
			for _, ev := range readHistory(t, file).GetEvents() {
				m := ev.GetMarkerRecordedEventAttributes()
				if m == nil || m.GetMarkerName() != "Version" {
					continue
				}
				var id string
				if err := dc.FromPayloads(m.GetDetails()["change-id"], &id); err == nil {
					seen[id] = true
					// The rewound wait's id names its round (rewoundWaitChange).
					if family, _, ok := strings.Cut(id, "-before-round-"); ok {
						seen[family] = true
					}
				}
			}
		}
	}
	for _, id := range inUse {
		if !seen[id] {
			t.Errorf("no recorded history holds the GetVersion marker %q: record one (`make histories NAME=<new dir>`)", id)
		}
	}
}

// TestReplayDetectsChangedCommands: the careless edits of issue 42 change
// what commands carry, not their types; the replay check must fail on each.
// A default workspace named with '_' instead of '-' (as a workflow that
// adds it to the input stands in for) moves every round of a run started
// without a workspace; a time floor of 30 s instead of 10 s ends a run
// before a round it started.
func TestReplayDetectsChangedCommands(t *testing.T) {
	underscored := func(ctx workflow.Context, input json.RawMessage, cont *workflows.Continuation) (*workflows.Result, error) {
		var fields map[string]any
		if cont == nil && json.Unmarshal(input, &fields) == nil && fields[workflows.FieldWorkspace] == nil {
			fields[workflows.FieldWorkspace] = strings.ReplaceAll(workflows.DefaultWorkspace(workflow.GetInfo(ctx).WorkflowExecution.ID), "-", "_")
			input, _ = json.Marshal(fields)
		}
		return workflows.Ralph(ctx, input, cont, nil)
	}
	// budget-time-floor (2026-12-05) starts its round 2 with about 24 s of
	// its one-minute budget left.
	floor30 := func(ctx workflow.Context, input json.RawMessage, cont *workflows.Continuation) (*workflows.Result, error) {
		*workflows.MinRoundTime = 30 * time.Second
		return workflows.Ralph(ctx, input, cont, nil)
	}
	t.Cleanup(func() { *workflows.MinRoundTime = workflows.MinRoundTimeDefault })
	for _, tc := range []struct {
		name string
		wf   any
	}{{"workspace separator", underscored}, {"time floor", floor30}} {
		t.Run(tc.name, func(t *testing.T) {
			caught := 0
			for _, dir := range releases(t) {
				for _, file := range histories(t, dir) {
					accepted := acceptedDifferences[filepath.Join(filepath.Base(dir), historyfile.Name(file))]
					if err := replayChecked(readHistory(t, file), tc.wf, accepted...); err != nil {
						caught++
					}
				}
			}
			*workflows.MinRoundTime = workflows.MinRoundTimeDefault
			if caught == 0 {
				t.Fatalf("the %s changed and every recorded history still replayed", tc.name)
			}
			t.Logf("%d histories fail on the changed %s", caught, tc.name)
		})
	}
}

// versionIDsInSource are the change ids of the packages' workflow.GetVersion
// calls, read from its source: a constant id, or for an id built by a
// function of the package (rewoundWaitChange) the constants that function
// uses, the family its ids are named after.
func versionIDsInSource(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	// The campaign's workflow (its own package) replays from the same corpus.
	var files []string
	for _, pattern := range []string{"*.go", "campaign/*.go"} {
		matched, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matched...)
	}
	consts := map[string]string{}
	funcs := map[string]*ast.FuncDecl{}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					funcs[d.Name.Name] = d
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					if !ok || d.Tok != token.CONST {
						continue
					}
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	// constsIn are the string constants node names, following calls of the
	// package's functions.
	var constsIn func(node ast.Node) []string
	constsIn = func(node ast.Node) []string {
		var ids []string
		ast.Inspect(node, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				if v, ok := consts[x.Name]; ok {
					ids = append(ids, v)
				}
			case *ast.CallExpr:
				if fn, ok := x.Fun.(*ast.Ident); ok && funcs[fn.Name] != nil {
					ids = append(ids, constsIn(funcs[fn.Name].Body)...)
				}
			}
			return true
		})
		return ids
	}
	var ids []string
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GetVersion" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "workflow" {
				return true
			}
			found := constsIn(call.Args[1])
			if len(found) == 0 {
				t.Errorf("%s: a GetVersion change id this test cannot read: name it by a string constant", fset.Position(call.Pos()))
			}
			for _, id := range found {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
			return true
		})
	}
	return ids
}
