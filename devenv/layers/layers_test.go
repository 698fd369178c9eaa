package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The rule itself, on a graph with a planted upward import.
func TestCheckFindsPlantedUpwardImport(t *testing.T) {
	graph := map[string][]string{
		"report":         {Module + "/internal/runes", "encoding/json"},
		"internal/gitws": {Module + "/internal/names"},
		"agent":          {Module + "/report", Module + "/agent/tools", Module + "/agent/wire"},
		"agent/wire":     {Module + "/internal/runes"},
		"workflows":      {Module + "/activities"},
		"app/config":     {Module + "/workflows"},
	}
	tests := map[string][]string{"workflows": {Module + "/devenv/testkit"}}
	if bad := Check(graph, tests); len(bad) != 0 {
		t.Fatalf("a clean graph broke the rule: %v", bad)
	}
	graph["internal/gitws"] = append(graph["internal/gitws"], Module+"/app/config")
	graph["workflows"] = append(graph["workflows"], Module+"/devenv/testkit")
	graph["agent/wire"] = append(graph["agent/wire"], Module+"/agent")
	graph["newtop"] = nil
	tests["report"] = []string{Module + "/agent"}
	bad := Check(graph, tests)
	want := []string{
		"agent/wire (layer wire) import agent (layer agent): an import up a layer",
		"internal/gitws (layer base) import app/config (layer app): an import up a layer",
		"newtop: no layer",
		"workflows (layer temporal) import devenv/testkit (layer dev): an import up a layer",
		"report's tests (layer base) import agent (layer agent): an import up a layer",
	}
	if len(bad) != len(want) {
		t.Fatalf("violations = %q, want %d", bad, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(bad[i], want[i]) {
			t.Errorf("violation %d = %q, want prefix %q", i, bad[i], want[i])
		}
	}
	if got := CheckMain("worker", []string{Module + "/app/workerapp", Module + "/devenv/testkit"}); len(got) != 1 {
		t.Errorf("CheckMain missed a dev package: %v", got)
	}
}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

func goList(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports,TestImports,XTestImports,Deps"}, args...)...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// The module's real import graph, test files included.
func TestModuleImportsRunOneWay(t *testing.T) {
	graph, tests := map[string][]string{}, map[string][]string{}
	for _, p := range goList(t, "./...") {
		rel, _ := Rel(p.ImportPath)
		graph[rel] = p.Imports
		tests[rel] = append(append([]string{}, p.TestImports...), p.XTestImports...)
	}
	if len(graph) < 20 {
		t.Fatalf("go list saw only %d packages", len(graph))
	}
	for _, v := range Check(graph, tests) {
		t.Error(v)
	}
}

func TestProductionBinariesLinkNoDevPackage(t *testing.T) {
	for _, main := range ProductionMains {
		pkgs := goList(t, "./"+main)
		if len(pkgs) != 1 {
			t.Fatalf("go list ./%s: %d packages", main, len(pkgs))
		}
		for _, v := range CheckMain(main, pkgs[0].Deps) {
			t.Error(v)
		}
	}
}

// No compiled program and nothing over 1 MB is tracked. A recorded history
// that reaches the server's continue-as-new suggestion is megabytes of
// JSON; the corpus keeps such a one gzipped (workflows/replay_test.go).
func TestNoBinaryOrLargeFileTracked(t *testing.T) {
	const maxSize int64 = 1 << 20
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 50 {
		t.Fatalf("git ls-files listed only %d files", len(files))
	}
	for _, f := range files {
		if problem := trackedFileProblem(filepath.Join(root, f), maxSize); problem != "" {
			t.Errorf("%s: %s", f, problem)
		}
	}
}

func TestTrackedFileProblemFindsBinaries(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join(dir, "prog")
	os.WriteFile(elf, []byte("\x7fELF\x02\x01\x01\x00rest"), 0o755)
	script := filepath.Join(dir, "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755)
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, bytes.Repeat([]byte("a"), 2048), 0o644)
	if p := trackedFileProblem(elf, 1024); !strings.Contains(p, "executable binary") {
		t.Errorf("ELF file: %q", p)
	}
	if p := trackedFileProblem(script, 1024); p != "" {
		t.Errorf("script: %q", p)
	}
	if p := trackedFileProblem(big, 1024); !strings.Contains(p, "larger than") {
		t.Errorf("big file: %q", p)
	}
}

func trackedFileProblem(path string, maxSize int64) string {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "" // deleted in the work tree, or a link
	}
	if fi.Size() > maxSize {
		return "larger than 1 MB"
	}
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	head, _ := bufio.NewReader(f).Peek(4)
	for _, magic := range []string{"\x7fELF", "\xcf\xfa\xed\xfe", "\xfe\xed\xfa\xcf", "MZ"} {
		if strings.HasPrefix(string(head), magic) {
			return "an executable binary"
		}
	}
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
