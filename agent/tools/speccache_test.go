package tools

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A workspace's tools come from the per-worker cache; they must be exactly
// what building them afresh for its limits gives, each workspace with its
// own limits in its descriptions.
func TestCachedToolsAreBuiltForTheirLimits(t *testing.T) {
	for _, lim := range []Limits{DefaultLimits(), {OutputCap: 1234, ReadLineLimit: 77}, DefaultLimits()} {
		w, _ := newTestWorkspace(t, lim)
		fresh, err := buildSpecs(newDescriptionData(w.Limits()))
		if err != nil {
			t.Fatal(err)
		}
		want := []Tool{
			listFilesTool{spec: fresh.list}, readFileTool{spec: fresh.read}, writeFileTool{spec: fresh.write},
			editFileTool{spec: fresh.edit}, searchFilesTool{spec: fresh.search}, runCommandTool{spec: fresh.run},
		}
		got := w.Tools()
		if len(got) != len(want) {
			t.Fatalf("%d tools, want %d", len(got), len(want))
		}
		for i, tl := range got {
			if tl.Name() != want[i].Name() || tl.Description() != want[i].Description() || !bytes.Equal(tl.Parameters(), want[i].Parameters()) {
				t.Errorf("limits %+v: cached %s differs from a fresh build", lim, tl.Name())
			}
		}
		run := toolNamed(t, w, "run_command").Description()
		if want := fmt.Sprintf("longer than %d characters", w.Limits().OutputCap); !strings.Contains(run, want) {
			t.Errorf("limits %+v: run_command's description does not say %q: %q", lim, want, run)
		}
	}
}

// Workspaces with the same limits share the cached specs: changing what one
// workspace's tool returns must not change what the next one tells the
// model.
func TestCachedToolDefinitionsAreNotShared(t *testing.T) {
	lim := Limits{OutputCap: 4321}
	first, _ := newTestWorkspace(t, lim)
	var before [][]byte
	for _, tl := range first.Tools() {
		p := tl.Parameters()
		before = append(before, bytes.Clone(p))
		for i := range p {
			p[i] = 'X'
		}
	}
	next, _ := newTestWorkspace(t, lim)
	for i, tl := range next.Tools() {
		if !bytes.Equal(tl.Parameters(), before[i]) {
			t.Errorf("%s: parameters changed by another workspace: %s", tl.Name(), tl.Parameters())
		}
	}
	for i, tl := range first.Tools() {
		if !bytes.Equal(tl.Parameters(), before[i]) {
			t.Errorf("%s: the workspace's own parameters changed through a copy: %s", tl.Name(), tl.Parameters())
		}
	}
}

// However many distinct limits a worker meets, the cache stays bounded, and
// limits whose entry was evicted still get their own tools.
func TestSpecCacheIsBounded(t *testing.T) {
	for i := range 40 {
		newTestWorkspace(t, Limits{OutputCap: 100 + i})
		if n := specCache.Len(); n > 8 {
			t.Fatalf("after %d distinct limits the cache holds %d entries, bound 8", i+1, n)
		}
	}
	w, _ := newTestWorkspace(t, Limits{OutputCap: 100}) // evicted long ago
	if d := toolNamed(t, w, "run_command").Description(); !strings.Contains(d, "longer than 100 characters") {
		t.Errorf("an evicted entry was not rebuilt for its limits: %q", d)
	}
}
