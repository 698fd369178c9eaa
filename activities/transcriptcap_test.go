package activities_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// A round whose events outgrow RALPH_TRANSCRIPT_MAX_MB leaves a transcript of
// at most that size, ending in the one line that says what was left out;
// the round itself still completes.
func TestRoundTranscriptStopsAtItsCap(t *testing.T) {
	big := strings.Repeat("x", 600<<10) // each call's arguments reach the transcript twice
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "a.txt", "content": big})),
		fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "b.txt", "content": big})),
		fakeopenai.Tools(fakeopenai.SubmitReport(validComplete)),
	}}, context.Background(), func(c *activities.Config) {
		c.TranscriptMaxMB = 1
		c.Agent.ContextTokens = 4 << 20 // the big calls stay in the conversation
	})
	out, err := f.run(roundInput("capped"))
	if err != nil || out.Report.Status != "complete" {
		t.Fatalf("RunRound = %+v, %v", out, err)
	}
	files := f.transcripts("capped")
	if len(files) != 1 {
		t.Fatalf("transcripts = %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 1<<20 {
		t.Errorf("transcript holds %d bytes, over its cap of 1 MB", len(data))
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	last := string(lines[len(lines)-1])
	if !strings.Contains(last, `"kind":"transcript_capped"`) || !strings.Contains(last, "cap of 1 MB (RALPH_TRANSCRIPT_MAX_MB)") {
		t.Errorf("last line = %q, want the line saying what was left out", last)
	}
	if n := bytes.Count(data, []byte("transcript_capped")); n != 1 {
		t.Errorf("%d capped lines, want 1", n)
	}
}
