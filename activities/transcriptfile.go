package activities

import (
	"fmt"
	"os"
	"sync"
)

// transcriptFile is a round's transcript file, created off the round's
// path: creating a file is a journal write that costs about a millisecond
// of kernel time on some disks (measured: docs/benchmarks.md), so the round
// starts while the file is created, and lines written before it exists wait
// in memory. close waits for it, so the transcript is complete when the
// activity returns.
type transcriptFile struct {
	mu      sync.Mutex
	f       *os.File
	created error  // creating the file failed
	failed  error  // a write failed
	waiting []byte // lines written before the file existed
	done    chan struct{}
}

func createTranscriptFile(path string) *transcriptFile {
	t := &transcriptFile{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, transcriptFilePerm)
		t.mu.Lock()
		defer t.mu.Unlock()
		if err != nil {
			t.created = fmt.Errorf("create the transcript: %w", err)
			return
		}
		t.f = f
		if len(t.waiting) > 0 {
			if _, err := f.Write(t.waiting); err != nil {
				t.failed = fmt.Errorf("write the transcript: %w", err)
			}
			t.waiting = nil
		}
	}()
	return t
}

// Write appends p, or keeps it until the file exists.
func (t *transcriptFile) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.created != nil:
		return 0, t.created
	case t.failed != nil:
		return 0, t.failed
	case t.f == nil:
		t.waiting = append(t.waiting, p...)
		return len(p), nil
	}
	n, err := t.f.Write(p)
	if err != nil {
		t.failed = fmt.Errorf("write the transcript: %w", err)
	}
	return n, err
}

// close waits until the file exists and everything is written, then closes
// it. The error says the file could not be created (its lines are lost) or
// not be closed; a failed write is reported to the writer.
func (t *transcriptFile) close() error {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created != nil {
		return t.created
	}
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("close the transcript: %w", err)
	}
	if t.failed != nil {
		return t.failed
	}
	return nil
}
