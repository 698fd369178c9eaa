package activities_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/gitws"
)

// traceSteps runs step n times and logs each git command's median time.
func traceSteps(b *testing.B, name string, step func(n int) time.Duration, n int) {
	var mu sync.Mutex
	by, cpu := map[string][]time.Duration{}, map[string]time.Duration{}
	var order []string
	count := 0
	stop := gitws.Trace(func(c gitws.TracedCommand) {
		mu.Lock()
		defer mu.Unlock()
		k := c.Args[0]
		for i, a := range c.Args {
			if a == "-c" {
				continue
			}
			if i > 0 && c.Args[i-1] == "-c" {
				continue
			}
			k = a
			break
		}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], c.Took)
		cpu[k] += c.CPU
		count++
	})
	var steps []time.Duration
	for i := range n {
		steps = append(steps, step(i))
	}
	stop()
	slices.Sort(steps)
	var lines []string
	for _, k := range order {
		d := by[k]
		slices.Sort(d)
		lines = append(lines, fmt.Sprintf("%-14s x%.1f  p50 %5.1fms  cpu %5.1fms/step", k, float64(len(d))/float64(n),
			float64(d[len(d)/2].Microseconds())/1000, float64(cpu[k].Microseconds())/1000/float64(n)))
	}
	b.Logf("%s: p50 %v, %.1f git commands per step:\n%s", name, steps[len(steps)/2], float64(count)/float64(n), strings.Join(lines, "\n"))
}

// BenchmarkQueueCostTrace logs, for 15 demo merges and 15 first
// PrepareTasks, how many git commands each ran and each command's median
// time (gitws.Trace): where the queue's own cost goes.
func BenchmarkQueueCostTrace(b *testing.B) {
	q := newQueueBench(b, false)
	q.merge(-1)
	traceSteps(b, "MergeTask", q.merge, 15)
	q.prepare(-1)
	traceSteps(b, "PrepareTask", q.prepare, 15)
	for b.Loop() {
	}
}
