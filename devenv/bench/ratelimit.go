package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// RateLimitConfig sizes the rate-limit benchmark.
type RateLimitConfig struct {
	Runs   int
	Window time.Duration
	// Workers are the worker binaries compared, by label ("before", "after").
	Workers []LabelledWorker
}

// LabelledWorker is a worker binary under a label.
type LabelledWorker struct {
	Label string
	Bin   string
}

// rateLimitedRequest is one request the rate-limiting provider received.
type rateLimitedRequest struct {
	run     string
	at      time.Time
	limited bool
}

// rateLimitProvider answers every request with a 429 until the window (from
// its first request) ends, announcing the rest of the window in Retry-After;
// afterwards every request completes the run.
type rateLimitProvider struct {
	window time.Duration
	mu     sync.Mutex
	end    time.Time
	log    []rateLimitedRequest
}

func (p *rateLimitProvider) answer(req fakeopenai.Request) fakeopenai.Response {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.end.IsZero() {
		p.end = now.Add(p.window)
	}
	run := runTag(req.Prompt())
	if now.Before(p.end) {
		p.log = append(p.log, rateLimitedRequest{run: run, at: now, limited: true})
		return fakeopenai.RateLimited(strconv.Itoa(int(math.Ceil(p.end.Sub(now).Seconds()))))
	}
	p.log = append(p.log, rateLimitedRequest{run: run, at: now})
	return submitComplete("done after the rate limit")
}

// runTag finds the run's tag ("rl-<n>") in the round prompt.
func runTag(prompt string) string {
	i := strings.Index(prompt, "ratelimit-run-")
	if i < 0 {
		return "?"
	}
	f := strings.FieldsFunc(prompt[i:], func(r rune) bool { return r == ' ' || r == '.' || r == '\n' || r == '"' })
	return f[0]
}

// RateLimit starts Runs runs at once against a provider that rate-limits
// every request for Window and says so in Retry-After, and counts what each
// worker binary sends during the window: goal, no request during a wait the
// provider announced.
func (h *Harness) RateLimit(ctx context.Context, cfg RateLimitConfig) (Section, error) {
	sec := Section{
		Title: "Rate limits: requests during an announced wait",
		Intro: fmt.Sprintf("One worker process (`RALPH_CONCURRENT_ROUNDS=%d`, other settings default), dev server, %d runs started at once. "+
			"The scripted provider answers every request with 429 for %s from its first request, with `Retry-After` set to the rest of "+
			"that window (so every 429 announces when the limit ends), then completes each run with its next request. A request "+
			"\"during an announced wait\" arrived from a run before the end of a wait the provider had announced to that run. "+
			"Time is real (not scaled).", cfg.Runs, cfg.Runs, cfg.Window),
	}
	t := Table{Header: []string{"worker", "requests during the window", "429 answers", "requests during an announced wait",
		"runs completed", "last run closed after the window"}}
	for _, w := range cfg.Workers {
		row, err := h.rateLimitOnce(ctx, cfg, w)
		if err != nil {
			return sec, fmt.Errorf("%s: %w", w.Label, err)
		}
		t.Add(row...)
	}
	sec.Tables = append(sec.Tables, t)
	return sec, nil
}

func (h *Harness) rateLimitOnce(ctx context.Context, cfg RateLimitConfig, lw LabelledWorker) ([]string, error) {
	p := &rateLimitProvider{window: cfg.Window}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: p.answer})
	defer model.Close()
	queue := h.name("ratelimit")
	saved := h.WorkerBin
	if lw.Bin != "" {
		h.WorkerBin = lw.Bin
	}
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), map[string]string{"RALPH_CONCURRENT_ROUNDS": strconv.Itoa(cfg.Runs)})
	h.WorkerBin = saved
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	h.logf("ratelimit (%s): %d runs, window %s", lw.Label, cfg.Runs, cfg.Window)
	errs := make(chan error, cfg.Runs)
	for i := range cfg.Runs {
		run, err := StartRalph(ctx, h.Dev, queue, fmt.Sprintf("%s-%d", queue, i),
			ralphInput{Objective: fmt.Sprintf("ratelimit-run-%d finish the work", i), MaxRounds: 1})
		if err != nil {
			return nil, err
		}
		go func() { errs <- run.Get(ctx, nil) }()
	}
	completed := 0
	for range cfg.Runs {
		if err := <-errs; err == nil {
			completed++
		}
	}
	closed := time.Now()

	p.mu.Lock()
	defer p.mu.Unlock()
	during, limited, inWait := 0, 0, 0
	waitUntil := map[string]time.Time{}
	for _, r := range p.log {
		if r.at.Before(p.end) {
			during++
		}
		if r.at.Before(waitUntil[r.run]) {
			inWait++
		}
		if r.limited {
			limited++
			waitUntil[r.run] = p.end
		}
	}
	h.logf("ratelimit (%s): %d requests in the window, %d during announced waits, %d/%d completed",
		lw.Label, during, inWait, completed, cfg.Runs)
	return []string{lw.Label, strconv.Itoa(during), strconv.Itoa(limited), strconv.Itoa(inWait),
		fmt.Sprintf("%d / %d", completed, cfg.Runs), closed.Sub(p.end).Round(time.Second).String()}, nil
}
