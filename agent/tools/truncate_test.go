package tools

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateHeadTail(t *testing.T) {
	if got := TruncateHeadTail("short", 5); got != "short" {
		t.Errorf("at the cap: %q", got)
	}
	got := TruncateHeadTail("0123456789", 4)
	want := "0\n[... 6 characters cut from the middle of the output ...]\n789"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Code points, not bytes: each of these is 3 bytes long.
	got = TruncateHeadTail("世界你好再见朋友", 5)
	want = "世界\n[... 3 characters cut from the middle of the output ...]\n见朋友"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := TruncateHeadTail("abc", 0); got != "\n[... 3 characters cut from the middle of the output ...]\n" {
		t.Errorf("cap 0: %q", got)
	}
}

// The streaming buffer must render exactly what TruncateHeadTail would
// produce from the whole stream, whatever the write boundaries.
func TestHeadTailBufferMatchesTruncateHeadTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "\n", "é", "世", "🙂"}
	dropped := 0
	for iter := range 300 {
		var sb strings.Builder
		n := rng.IntN(400)
		for range n {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		limit := 1 + rng.IntN(20)
		buf := newHeadTailBuffer(limit)
		rest := []byte(s)
		for len(rest) > 0 {
			k := min(len(rest), 1+rng.IntN(50))
			if _, err := buf.Write(rest[:k]); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if got, want := buf.String(limit), TruncateHeadTail(s, limit); got != want {
			t.Fatalf("iteration %d (limit %d, %d runes): buffer gave\n%q\nwant\n%q", iter, limit, utf8.RuneCountInString(s), got, want)
		}
		if buf.droppedRunes > 0 {
			dropped++
		}
	}
	if dropped < 100 {
		t.Fatalf("only %d iterations exercised the dropping path", dropped)
	}
}

func TestHeadTailBufferBoundedMemory(t *testing.T) {
	buf := newHeadTailBuffer(100)
	line := []byte(strings.Repeat("x", 1000) + "\n")
	for range 10000 { // ~10 MB written
		buf.Write(line)
	}
	if held := cap(buf.head) + cap(buf.tail); held > 10*100*utf8.UTFMax {
		t.Fatalf("buffer holds %d bytes for a 100-character cap", held)
	}
	out := buf.String(100)
	if !strings.Contains(out, fmt.Sprintf("[... %d characters cut", 10000*1001-100)) {
		t.Fatalf("wrong cut count in %q", out)
	}
}
