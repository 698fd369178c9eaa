package tools

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// commandTimeout is the timeout of one command: the default when none is
// asked for, else the one asked for up to MaxCommandTimeout, with a note
// for the model when it was capped.
func (l Limits) commandTimeout(requested *float64) (time.Duration, string, error) {
	if requested == nil {
		return l.CommandTimeout, "", nil
	}
	s := *requested
	if s <= 0 || math.IsNaN(s) {
		return 0, "", errors.New("timeout_seconds must be positive")
	}
	if maxT := l.MaxCommandTimeout; s > maxT.Seconds() {
		return maxT, fmt.Sprintf("[timeout_seconds capped to %s]\n", seconds(maxT)), nil
	}
	return time.Duration(s * float64(time.Second)), "", nil
}
