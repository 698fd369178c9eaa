package cli

import "sync"

// gate admits the requests of one attempt until it is shut; shut returns
// once every request it admitted is over, and admits none after, so no
// request touches the round once its attempt returned. Admitting under the
// same lock that shuts orders every Add before the Wait (a WaitGroup's
// Add from zero must not race its Wait; the race detector says so).
type gate struct {
	mu     sync.Mutex
	closed bool
	busy   sync.WaitGroup
}

// enter admits one request (false: the attempt is over); leave must follow
// an admitted one.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.busy.Add(1)
	return true
}

func (g *gate) leave() { g.busy.Done() }

// shut admits no more requests and waits for the admitted ones.
func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.busy.Wait()
}
