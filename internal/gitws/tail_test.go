package gitws

import (
	"strings"
	"testing"
)

// A git command that talks a lot still shows its last line, the one that
// says what failed, within the cap.
func TestTailBufferKeepsTheEnd(t *testing.T) {
	var b tailBuffer
	for i := 0; i < 3*outputCap/1000; i++ {
		_, _ = b.Write([]byte(strings.Repeat("x", 999) + "\n"))
	}
	_, _ = b.Write([]byte("fatal: the push was rejected\n"))
	got := b.String()
	if len(got) > outputCap || !strings.HasSuffix(got, "fatal: the push was rejected\n") {
		t.Fatalf("kept %d bytes ending %q", len(got), got[max(0, len(got)-40):])
	}
}
