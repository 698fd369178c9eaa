package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/ralph-temporal/ralph/agent/wire"
)

// Transcript writes events as JSON lines, with every secret redacted from
// each line before it reaches w. The first write error stops further writes
// and is kept for Err: a broken transcript must not break the round.
type Transcript struct {
	mu      sync.Mutex
	w       io.Writer
	secrets [][]byte
	err     error
	limit   int64 // bytes of events written at most (see SetLimit)
	written int64
	capped  bool
}

// DefaultTranscriptMaxBytes caps one round attempt's transcript
// (RALPH_TRANSCRIPT_MAX_MB): a command that makes a million proxied
// connections must not fill the worker's disk with their records.
const DefaultTranscriptMaxBytes = 256 << 20

// SetLimit caps the transcript at limit bytes; past it one line says what
// was left out and nothing more is written.
func (t *Transcript) SetLimit(limit int64) {
	t.mu.Lock()
	t.limit = limit
	t.mu.Unlock()
}

// cappedLine is the transcript's last line once its cap is reached.
type cappedLine struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// NewTranscript writes to w, redacting secrets (typically the API key).
func NewTranscript(w io.Writer, secrets ...string) *Transcript {
	t := &Transcript{w: w, limit: DefaultTranscriptMaxBytes}
	for _, s := range secrets {
		if len(s) < wire.MinSecretLen {
			continue
		}
		t.secrets = append(t.secrets, []byte(s))
		// The key as it appears inside a JSON string, if escaping changes it.
		if quoted, err := json.Marshal(s); err == nil {
			if inner := quoted[1 : len(quoted)-1]; !bytes.Equal(inner, []byte(s)) {
				t.secrets = append(t.secrets, inner)
			}
		}
	}
	return t
}

// Observe writes one event line.
func (t *Transcript) Observe(e Event) {
	if e.Kind == EventModelProgress {
		return // the answer itself follows in model_response
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil || t.capped {
		return
	}
	line, err := json.Marshal(e)
	if err != nil {
		t.err = fmt.Errorf("encode transcript event %s: %w", e.Kind, err)
		return
	}
	for _, s := range t.secrets {
		line = bytes.ReplaceAll(line, s, []byte(wire.RedactedMarker))
	}
	line = append(line, '\n')
	if t.written+int64(len(line)) > t.limit {
		t.capped = true
		line, _ = json.Marshal(cappedLine{Kind: "transcript_capped", Message: fmt.Sprintf(
			"the transcript reached its cap of %d MB (RALPH_TRANSCRIPT_MAX_MB): this %s event and every later one are left out", t.limit>>20, e.Kind)})
		line = append(line, '\n')
	}
	t.written += int64(len(line))
	if _, err := t.w.Write(line); err != nil {
		t.err = fmt.Errorf("write transcript: %w", err)
	}
}

// Err is the first error met while writing, if any.
func (t *Transcript) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
