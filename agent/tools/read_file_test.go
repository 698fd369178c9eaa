package tools

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func numberedLines(n int, width int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		line := fmt.Sprintf("line %d ", i)
		b.WriteString(line + strings.Repeat("x", max(0, width-len(line))) + "\n")
	}
	return b.String()
}

func TestReadFileHappyPath(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, filepath.Join(dir, "src/a.txt"), "héllo 世界\nsecond\nno newline at end")
	out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "src/a.txt"}))
	want := "     1\théllo 世界\n     2\tsecond\n     3\tno newline at end\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// "./" prefixes and inner ".." that stay inside are fine.
	if out2 := mustOK(t, call(t, w, "read_file", map[string]any{"path": "./src/../src/a.txt"})); out2 != want {
		t.Fatalf("cleaned path read %q", out2)
	}
	if out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "src/../src/a.txt"})); out != want {
		t.Fatalf("got %q", out)
	}
	writeTestFile(t, filepath.Join(dir, "empty"), "")
	if out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "empty"})); !strings.Contains(out, "empty") {
		t.Fatalf("empty file: %q", out)
	}
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "src"}), "is a directory")
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "missing.txt"}), "no such file")
}

func TestReadFileOffsetLimit(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, filepath.Join(dir, "ten.txt"), numberedLines(10, 0))

	out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "ten.txt", "offset": 3, "limit": 2}))
	want := "     3\tline 3 \n     4\tline 4 \n[showed lines 3-4; more lines remain: continue with offset 5]\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// The last page does not claim more lines.
	out = mustOK(t, call(t, w, "read_file", map[string]any{"path": "ten.txt", "offset": 9, "limit": 5}))
	if out != "     9\tline 9 \n    10\tline 10 \n" {
		t.Fatalf("last page: %q", out)
	}
	// Exactly reaching the end with the limit is not "more lines" either.
	out = mustOK(t, call(t, w, "read_file", map[string]any{"path": "ten.txt", "offset": 9, "limit": 2}))
	if strings.Contains(out, "more lines") {
		t.Fatalf("claims more lines at EOF: %q", out)
	}
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "ten.txt", "offset": 11}), "past the end")
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "ten.txt", "offset": -1}), "positive")

	// Default limit: ReadLineLimit lines.
	writeTestFile(t, filepath.Join(dir, "long.txt"), numberedLines(2500, 0))
	out = mustOK(t, call(t, w, "read_file", map[string]any{"path": "long.txt"}))
	if n := strings.Count(out, "\tline "); n != 2000 {
		t.Fatalf("default read returned %d lines", n)
	}
	if !strings.Contains(out, "  2000\tline 2000 \n") || strings.Contains(out, "\tline 2001 ") || !strings.Contains(out, "continue with offset 2001") {
		t.Fatalf("default read tail: %q", out[len(out)-200:])
	}
}

func TestReadFileByteCap(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	// 5000 lines of 100 bytes: 500 KB, twice the read cap.
	content := numberedLines(5000, 99)
	writeTestFile(t, filepath.Join(dir, "big.txt"), content)
	var got []string
	offset := 1
	for calls := 0; ; calls++ {
		if calls > 10 {
			t.Fatal("paging does not terminate")
		}
		out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "big.txt", "offset": offset, "limit": 5000}))
		if len(out) > DefaultReadByteLimit+200 {
			t.Fatalf("returned %d bytes, cap is %d", len(out), DefaultReadByteLimit)
		}
		body, note, _ := strings.Cut(out, "[stopped at the")
		for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
			num, text, ok := strings.Cut(l, "\t")
			if !ok {
				t.Fatalf("line without number prefix: %q", l)
			}
			if n, err := strconv.Atoi(strings.TrimSpace(num)); err != nil || n != len(got)+1 {
				t.Fatalf("line number %q, want %d", num, len(got)+1)
			}
			got = append(got, text)
		}
		if note == "" {
			break
		}
		m := regexp.MustCompile(`continue with offset (\d+)`).FindStringSubmatch(note)
		if m == nil {
			t.Fatalf("cap note without offset: %q", note)
		}
		offset, _ = strconv.Atoi(m[1])
		if offset != len(got)+1 {
			t.Fatalf("continue offset %d after %d lines", offset, len(got))
		}
	}
	if strings.Join(got, "\n")+"\n" != content {
		t.Fatal("paged reads do not reassemble the file")
	}

	// A line longer than a small byte cap is shown cut, not refused.
	small, sdir := newTestWorkspace(t, Limits{ReadByteLimit: 1000})
	writeTestFile(t, filepath.Join(sdir, "oneline.txt"), strings.Repeat("y", 1500)+"\nnext\n")
	out := mustOK(t, call(t, small, "read_file", map[string]any{"path": "oneline.txt"}))
	if len(out) > 1000+200 || !strings.Contains(out, "longer than the 1000-byte read cap") || !strings.Contains(out, "continue with offset 2") {
		t.Fatalf("long line: %d bytes, tail %q", len(out), out[len(out)-150:])
	}
}

func TestReadFileRefusesBinary(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, filepath.Join(dir, "nul.bin"), "text\x00more text\n")
	writeTestFile(t, filepath.Join(dir, "latin1.txt"), "caf\xe9\n")
	// Invalid UTF-8 far beyond the sniffed prefix is caught on the line.
	writeTestFile(t, filepath.Join(dir, "late.txt"), numberedLines(1000, 20)+"bad \xff\xfe\n")
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "nul.bin"}), "binary")
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "latin1.txt"}), "binary")
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "late.txt"}), "binary")
	// A multi-byte character straddling the 8 KiB sniff boundary is text.
	lines := strings.Repeat(strings.Repeat("a", 99)+"\n", BinarySniffBytes/100)
	straddle := lines + strings.Repeat("b", BinarySniffBytes-1-len(lines)) + "世\n"
	writeTestFile(t, filepath.Join(dir, "straddle.txt"), straddle)
	out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "straddle.txt"}))
	if !strings.HasSuffix(out, "b世\n") {
		t.Fatalf("straddling character lost: %q", out[len(out)-20:])
	}
}

func TestReadFileEscapesRefused(t *testing.T) {
	f := newEscapeFixture(t)
	for _, p := range f.escapingPaths() {
		res := call(t, f.w, "read_file", map[string]any{"path": p})
		if !res.Failed || strings.Contains(res.Output, secret) {
			t.Errorf("read_file(%q) = %+v, want refusal", p, res)
		}
	}
	mustFail(t, call(t, f.w, "read_file", map[string]any{"path": "../x"}), "outside the workspace")
	mustFail(t, call(t, f.w, "read_file", map[string]any{"path": "/etc/passwd"}), "absolute")
	mustFail(t, call(t, f.w, "read_file", map[string]any{"path": "outfile"}), "outside the workspace")
	// A symlink that stays inside is followed.
	if out := mustOK(t, call(t, f.w, "read_file", map[string]any{"path": "inlink"})); !strings.Contains(out, "inside") {
		t.Fatalf("inside symlink: %q", out)
	}
}

func TestReadFileCutsLongLines(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	exact := strings.Repeat("x", ReadMaxLineRunes)
	content := exact + "\n" +
		strings.Repeat("y", ReadMaxLineRunes+1) + "\n" +
		strings.Repeat("世", ReadMaxLineRunes+500) + "\n" +
		strings.Repeat("z", 100*1024) + "\n" +
		"end\n"
	writeTestFile(t, filepath.Join(dir, "wide.txt"), content)
	out := mustOK(t, call(t, w, "read_file", map[string]any{"path": "wide.txt"}))
	want := "     1\t" + exact + "\n" +
		"     2\t" + strings.Repeat("y", ReadMaxLineRunes) + lineCutMarker() + "\n" +
		"     3\t" + strings.Repeat("世", ReadMaxLineRunes) + lineCutMarker() + "\n" +
		"     4\t" + strings.Repeat("z", ReadMaxLineRunes) + lineCutMarker() + "\n" +
		"     5\tend\n"
	if out != want {
		t.Fatalf("got %d bytes:\n%.300s...\nwant %d bytes", len(out), out, len(want))
	}
	// Paging past a cut line keeps the numbering of the file.
	out = mustOK(t, call(t, w, "read_file", map[string]any{"path": "wide.txt", "offset": 4, "limit": 1}))
	if !strings.HasPrefix(out, "     4\tzzz") || !strings.HasSuffix(out, lineCutMarker()+"\n[showed lines 4-4; more lines remain: continue with offset 5]\n") {
		t.Fatalf("paged cut line: %q", out[len(out)-120:])
	}
}
