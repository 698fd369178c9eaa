package agent

import (
	"bytes"
	"strings"
	"testing"
)

func TestTranscriptStopsAtItsCapWithOneLineSayingSo(t *testing.T) {
	var buf bytes.Buffer
	tr := NewTranscript(&buf)
	tr.SetLimit(3 << 20)
	big := strings.Repeat("x", 1<<20)
	for range 10 {
		tr.Observe(Event{Kind: EventToolResult, Output: big})
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"kind":"transcript_capped"`) || !strings.Contains(lines[2], "cap of 3 MB (RALPH_TRANSCRIPT_MAX_MB)") {
		t.Fatalf("got %d lines, last %.200s", len(lines), lines[len(lines)-1])
	}
	if buf.Len() > 3<<20 {
		t.Errorf("the transcript is %d bytes, over its cap", buf.Len())
	}
}
