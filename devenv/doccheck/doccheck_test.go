package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryDocs checks the real pages: README.md is short, and every
// link of README.md, CONTRIBUTING.md and docs/ stays in the repository and
// leads to a file and heading that exist.
func TestRepositoryDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 3 {
		t.Fatalf("pages %v: expected README.md, CONTRIBUTING.md and docs/", pages)
	}
	for _, msg := range Check(root, pages) {
		t.Error(msg)
	}
}

// TestCheckFindsWhatItMust plants each kind of bad page in a scratch
// repository: the checker must report every one of them and nothing else.
func TestCheckFindsWhatItMust(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Repeat("line\n", MaxREADMELines+1)+
		"[spec](../shared/SPEC.md) [ok](docs/a.md#the-part) [gone](docs/moved.md)\n"+
		"[web](https://example.com/x) ui <http://127.0.0.1:8233> [abs](/etc/passwd)\n"+
		"`[in code](nowhere.md)`\n```\n[in a fence](nowhere.md)\n```\n")
	write("CONTRIBUTING.md", "[up](docs/../../outside.md) [anchor](docs/a.md#no-such-part) [self](#rules)\n## Rules\n")
	write("docs/a.md", "# A\n## The part\n[back](../README.md) [sibling](b.md)\n[ref]: https://example.org\n")

	got := strings.Join(Check(root, []string{"README.md", "CONTRIBUTING.md", "docs/a.md"}), "\n")
	for _, want := range []string{
		"README.md: 207 lines, at most 200",
		`"../shared/SPEC.md" points outside the repository`,
		`"docs/moved.md" names a file that does not exist`,
		`"https://example.com/x" points outside the repository`,
		`"/etc/passwd" is an absolute path`,
		`"docs/../../outside.md" points outside the repository`,
		`"docs/a.md#no-such-part" names a heading #no-such-part`,
		`docs/a.md:3: link "b.md" names a file that does not exist`,
		`docs/a.md:4: link "https://example.org" points outside`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, fine := range []string{"docs/a.md#the-part\"", "127.0.0.1", "nowhere.md", "../README.md", "#rules"} {
		if strings.Contains(got, fine) {
			t.Errorf("reported %q, which is fine:\n%s", fine, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 9 {
		t.Errorf("%d problems, want 9:\n%s", n, got)
	}
}

func TestAnchorsAsGitHubMakesThem(t *testing.T) {
	a := Anchors("# Title\n## `remote`: workers without shared storage\n## Git: the worker's steps, never the model's\n" +
		"## How a round ends: hand-offs, bounded context\n## Title\n```\n# not a heading\n```\n## Settings (worker; flags mirror env)\n")
	for _, want := range []string{"title", "remote-workers-without-shared-storage", "git-the-workers-steps-never-the-models",
		"how-a-round-ends-hand-offs-bounded-context", "title-1", "settings-worker-flags-mirror-env"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line in a code fence made an anchor")
	}
}

// TestFencedCodeIsNeitherLinkNorHeading feeds one text to both scans: a link
// or heading inside a ``` or ~~~ fence (including a ``` line inside a ~~~
// fence, which does not close it) is code to both, and the lines after a
// fence keep their numbers.
func TestFencedCodeIsNeitherLinkNorHeading(t *testing.T) {
	text := "# Outside\n" +
		"```sh\n# fenced heading\n[fenced](fenced.md)\n```\n" +
		"~~~\n```\n## Tilde heading\n<https://tilde.example>\n~~~\n" +
		"## After\n[after](after.md)\n"

	links := Links(text)
	if len(links) != 1 || links[0].Target != "after.md" || links[0].Line != 12 {
		t.Errorf("links %+v, want only after.md on line 12", links)
	}
	a := Anchors(text)
	if len(a) != 2 || !a["outside"] || !a["after"] {
		t.Errorf("anchors %v, want only outside and after", a)
	}
}
