package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Transcript writes events as JSON lines, with every secret redacted from
// each line before it reaches w. The first write error stops further writes
// and is kept for Err: a broken transcript must not break the round.
type Transcript struct {
	mu      sync.Mutex
	w       io.Writer
	secrets [][]byte
	err     error
}

// NewTranscript writes to w, redacting secrets (typically the API key).
func NewTranscript(w io.Writer, secrets ...string) *Transcript {
	t := &Transcript{w: w}
	for _, s := range secrets {
		if len(s) < minSecretLen {
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
	if t.err != nil {
		return
	}
	line, err := json.Marshal(e)
	if err != nil {
		t.err = fmt.Errorf("encode transcript event %s: %w", e.Kind, err)
		return
	}
	for _, s := range t.secrets {
		line = bytes.ReplaceAll(line, s, []byte(redactedMarker))
	}
	line = append(line, '\n')
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
