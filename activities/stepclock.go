package activities

import "time"

// stepClock times an attempt's steps one after another, so the worker's
// log says where a round's time went (the candidates benchmark reads
// it): each mark is the time since the previous one.
type stepClock struct {
	last  time.Time
	names []string
	took  []time.Duration
}

func newStepClock() *stepClock { return &stepClock{last: time.Now()} }

// mark ends the step called name.
func (c *stepClock) mark(name string) {
	now := time.Now()
	c.names, c.took = append(c.names, name), append(c.took, now.Sub(c.last))
	c.last = now
}

// fields are the steps as log attributes: <name>Ms and its milliseconds.
func (c *stepClock) fields() []any {
	out := make([]any, 0, 2*len(c.names))
	for i, name := range c.names {
		out = append(out, name+"Ms", float64(c.took[i].Microseconds())/1000)
	}
	return out
}
