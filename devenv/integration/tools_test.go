package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// TestRealStackToolsSeeSourcesPastIgnoredTree runs a round whose model
// lists, searches and reads a workspace holding a git-ignored node_modules/
// of 3,000 files, and checks what reached the model: the generated schemas
// in the request, src/ in the listing and the search, node_modules nowhere,
// and read_file's numbered, cut lines.
func TestRealStackToolsSeeSourcesPastIgnoredTree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch tn.Step() {
		case 0:
			return tool("list_files", map[string]any{})
		case 1:
			return tool("search_files", map[string]any{"pattern": "NEEDLE", "ignore_case": true, "context": 1})
		case 2:
			return tool("read_file", map[string]any{"path": "src/wide.txt"})
		default:
			return submit(completeArgs("looked around", "src/main.go holds the needle"))
		}
	}))
	ws := filepath.Join(e.root, "tools")
	files := map[string]string{
		".gitignore":   "node_modules/\n",
		"src/main.go":  "package main\n\n// the needle\nfunc main() {}\n",
		"src/wide.txt": "short\n" + strings.Repeat("w", 5000) + "\n",
	}
	for i := range 3000 {
		files[fmt.Sprintf("node_modules/pkg%02d/index%04d.js", i%30, i)] = "// needle\n"
	}
	for p, content := range files {
		path := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.startWorker()
	res, err := e.result(e.start("tools-ignored-tree", `{"objective":"find the needle","workspace":"tools"}`))
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("run: %+v, %v", res, err)
	}

	reqs := e.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	// The schema the model was offered is the generated one.
	var search map[string]any
	for _, tl := range reqs[0].Chat.Tools {
		if tl.Function != nil && tl.Function.Name == "search_files" {
			raw, _ := json.Marshal(tl.Function.Parameters)
			if err := json.Unmarshal(raw, &search); err != nil {
				t.Fatal(err)
			}
		}
	}
	props, _ := search["properties"].(map[string]any)
	var names []string
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"context", "glob", "ignore_case", "path", "pattern"}) || search["additionalProperties"] != false {
		t.Fatalf("search_files schema sent: %v", search)
	}

	listing := reqs[1].LastToolOutput()
	if !strings.Contains(listing, "src/main.go\n") || strings.Contains(listing, "node_modules/pkg") ||
		!strings.HasSuffix(listing, "[1 entry ignored by .gitignore was left out: node_modules/; name one as path to list it]\n") {
		t.Fatalf("listing the model saw:\n%s", listing)
	}
	found := reqs[2].LastToolOutput()
	want := "src/main.go-2- \nsrc/main.go:3: // the needle\nsrc/main.go-4- func main() {}\n"
	if found != want {
		t.Fatalf("search results the model saw:\n%q\nwant\n%q", found, want)
	}
	read := reqs[3].LastToolOutput()
	if read != "     1\tshort\n     2\t"+strings.Repeat("w", 2000)+" [... line cut at 2000 characters]\n" {
		t.Fatalf("read_file output the model saw: %.200q", read)
	}
}
