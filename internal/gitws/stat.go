package gitws

import "context"

// A merge step's diff stat (DiffStat of the stack's base and tip) reads the
// object store alone, so it runs beside the tip's checkout, which writes
// the work tree and the index: a git command less on the step's path (SPEC
// 41, the queue's own cost). Both are done before the verify command
// starts, as before.

// statFuture is a diff stat under way.
type statFuture struct {
	done chan struct{}
	out  string
	err  error
}

func statKey(base, tip string) string { return base + ".." + tip }

// startStat starts the diff stat of base..tip in the scratch dir, for
// DiffStat to take (only in a scratch of the worker's, which ForgetScratch
// waits for).
func (g *Git) startStat(ctx context.Context, dir, base, tip string) {
	if g.scratches == nil {
		return
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return
	}
	st := v.(*scratchState)
	f := &statFuture{done: make(chan struct{})}
	st.mu.Lock()
	if st.stats == nil {
		st.stats = map[string]*statFuture{}
	}
	if _, dup := st.stats[statKey(base, tip)]; dup {
		st.mu.Unlock()
		return
	}
	st.stats[statKey(base, tip)] = f
	st.mu.Unlock()
	go func() {
		defer close(f.done)
		f.out, f.err = g.diffStat(ctx, dir, base, tip)
	}()
}

// startedStat is the diff stat of base..tip started in dir, if any (it
// stays for ForgetScratch to wait for; an object id names one diff).
func (g *Git) startedStat(dir, base, tip string) *statFuture {
	if g.scratches == nil {
		return nil
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return nil
	}
	st := v.(*scratchState)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stats[statKey(base, tip)]
}
