package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/codec"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// EncryptionConfig sizes the encryption-overhead benchmark.
type EncryptionConfig struct {
	Rounds int // rounds per run
	Reps   int // measured runs of each loop
}

// Encryption measures what payload encryption adds per round: the bare
// loop, a plain Ralph loop and a Ralph loop whose client (so its worker and
// its starter) encrypts every payload with the RALPH_ENCRYPTION_KEY_FILE
// codec, alternately on the dev server, eager activities on.
func (h *Harness) Encryption(ctx context.Context, cfg EncryptionConfig) (Section, error) {
	sec := Section{
		Title: "7. Per-round overhead with payload encryption",
		Intro: fmt.Sprintf("The benchmark-1 setup (instant scripted model, one model call per round, maxRounds %d, eager activities on, "+
			"in-process workers with the worker binary's registration and options) on the dev server, three loops alternately, %d measured runs each "+
			"after a warm-up: the bare no-op loop, Ralph with plaintext payloads, and Ralph through a client built by `config.ClientOptions` "+
			"with `RALPH_ENCRYPTION_KEY_FILE` set (AES-256-GCM codec data converter and encoded failure attributes on the worker and the starter). "+
			"Per-round times come from the server's event timestamps; the round spanning the continue-as-new is left out as in benchmark 1.",
			cfg.Rounds, cfg.Reps),
	}
	keyFile, err := h.writeKeyFile()
	if err != nil {
		return sec, err
	}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return submitContinue("round done")
	}})
	defer model.Close()
	plainW, err := h.StartInProc(h.Dev, "enc-plain", model.BaseURL(), true, nil)
	if err != nil {
		return sec, err
	}
	defer plainW.Stop()
	encW, err := h.StartInProc(h.Dev, "enc-on", model.BaseURL(), true, map[string]string{config.EnvEncryptionKeyFile: keyFile})
	if err != nil {
		return sec, err
	}
	defer encW.Stop()
	encTarget := encW.On(h.Dev)
	encTarget.Name += ", encrypted"

	loops := []*encryptionLoop{
		{name: "bare", run: func(ctx context.Context, rounds int) (loopRun, error) {
			return h.bareLoopRun(ctx, h.Dev, plainW.Queue, rounds, false, true)
		}},
		{name: "Ralph, plaintext", run: h.encryptionRalph(h.Dev, plainW, false)},
		{name: "Ralph, encrypted", run: h.encryptionRalph(encTarget, encW, true)},
	}
	if err := h.measureEncryption(ctx, loops, cfg); err != nil {
		return sec, err
	}
	sec.Tables = []Table{encryptionTable(loops)}
	sec.Notes = append(sec.Notes,
		"Every payload of the encrypted runs was checked to carry the `binary/encrypted` encoding, and every payload of the plaintext runs not to.")
	return sec, nil
}

// encryptionLoop is one of the compared loops and the round times it
// measured.
type encryptionLoop struct {
	name    string
	run     func(ctx context.Context, rounds int) (loopRun, error)
	periods []time.Duration
	execs   []time.Duration
}

// encryptionRalph is a Ralph loop on w through t, its payloads checked to
// be encrypted or not.
func (h *Harness) encryptionRalph(t Target, w *InProc, encrypted bool) func(context.Context, int) (loopRun, error) {
	l := ralphLoop{objective: "benchmark payload encryption", encrypted: encrypted}
	return func(ctx context.Context, rounds int) (loopRun, error) { return l.run(ctx, h, t, w.Queue, rounds, true) }
}

// once runs the loop for rounds with its own deadline, keeping its times
// when record.
func (l *encryptionLoop) once(ctx context.Context, rounds int, record bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r, err := l.run(ctx, rounds)
	if err != nil {
		return err
	}
	if record {
		within, _ := r.rounds.SplitPeriods()
		l.periods = append(l.periods, within...)
		l.execs = append(l.execs, r.rounds.Executions()...)
	}
	return nil
}

// measureEncryption warms every loop up, then runs them Reps times,
// rotating the order so no loop always runs first.
func (h *Harness) measureEncryption(ctx context.Context, loops []*encryptionLoop, cfg EncryptionConfig) error {
	h.logf("encryption: warm-up")
	for _, l := range loops {
		if err := l.once(ctx, 3, false); err != nil {
			return err
		}
	}
	for rep := range cfg.Reps {
		h.logf("encryption: run %d/%d", rep+1, cfg.Reps)
		for i := range loops {
			if err := loops[(i+rep)%len(loops)].once(ctx, cfg.Rounds, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// encryptionTable sets each loop against the bare one and plaintext Ralph
// (loops[0] and loops[1]).
func encryptionTable(loops []*encryptionLoop) Table {
	bareP50 := float64(Median(loops[0].periods))
	plainP50 := float64(Median(loops[1].periods))
	t := Table{Header: []string{"loop", "rounds measured", "round p50 ms", "round p95 ms", "in activity p50 ms", "ratio to bare (p50)", "ratio to plaintext Ralph (p50)"}}
	for _, l := range loops {
		p50 := float64(Median(l.periods))
		t.Add(l.name, fmt.Sprint(len(l.periods)), ms(Median(l.periods)), ms(Percentile(l.periods, 95)), ms(Median(l.execs)),
			ratio(p50, bareP50), ratio(p50, plainP50))
	}
	return t
}

// checkEncoding makes sure the loop measured what it claims: every input
// and result payload of the run's activities is encrypted (or none is).
func checkEncoding(chain []RunHistory, encrypted bool) error {
	for _, run := range chain {
		for _, ev := range run.Events {
			payloads := ev.GetActivityTaskScheduledEventAttributes().GetInput().GetPayloads()
			payloads = append(payloads, ev.GetActivityTaskCompletedEventAttributes().GetResult().GetPayloads()...)
			for _, p := range payloads {
				if got := string(p.GetMetadata()[converter.MetadataEncoding]) == codec.Encoding; got != encrypted {
					return fmt.Errorf("event %d: payload encoding %q, want encrypted=%v", ev.GetEventId(), p.GetMetadata()[converter.MetadataEncoding], encrypted)
				}
			}
		}
	}
	return nil
}

// writeKeyFile writes a fresh payload key file (one key) into the run's dir.
func (h *Harness) writeKeyFile() (string, error) {
	key := make([]byte, codec.KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	path := filepath.Join(h.Dir, h.name("bench")+".keys")
	line := "bench " + base64.StdEncoding.EncodeToString(key) + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("write the benchmark key file: %w", err)
	}
	return path, nil
}
