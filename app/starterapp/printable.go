package starterapp

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// printableWriter is where everything the starter prints goes through:
// runes.Printable drops the control characters of model and workspace text
// (summaries, failures, paths, guidance, task lines), so an escape sequence
// a model wrote reaches the operator's terminal as text, never as a command
// (a clipboard write, a cleared screen; docs/security.md). JSON output
// loses only C1 characters this way: encoding/json escapes the C0 ones.
// The campaign's live block moves the cursor on the raw terminal instead
// (App.term).
type printableWriter struct {
	mu      sync.Mutex
	w       io.Writer
	partial []byte // a rune cut between two writes, completed by the next
}

func (p *printableWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data := append(p.partial, b...)
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	p.partial = bytes.Clone(data[cut:])
	if _, err := io.WriteString(p.w, runes.Printable(string(data[:cut]))); err != nil {
		return 0, err
	}
	return len(b), nil
}
