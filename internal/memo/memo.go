// Package memo keeps values that are costly to build and never change once
// built (tool definitions, their encodings), so a worker builds each once
// instead of once per session. A Cache is bounded: a deployment that varies
// a key (a run may choose its own hand-off cap) never makes it grow without
// limit.
package memo

import "sync"

// Cache maps keys to built values, holding at most a fixed number of them;
// when full, the oldest entry makes room. It is safe for concurrent use.
//
// Every caller gets the same V: V must be immutable, or callers copy what
// they may change.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	m     map[K]V
	order []K // keys, oldest first
}

// New returns a cache holding at most size entries (at least one).
func New[K comparable, V any](size int) *Cache[K, V] {
	return &Cache[K, V]{max: max(size, 1), m: map[K]V{}}
}

// Get returns the value for key, building it when absent. A build error is
// returned and never kept: the next Get builds again. Two concurrent Gets
// of a missing key may both build; the first value stored is the one every
// caller gets.
func (c *Cache[K, V]) Get(key K, build func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	// Built outside the lock: a slow build never holds up other keys.
	v, err := build()
	if err != nil {
		var zero V
		return zero, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.m[key]; ok {
		return kept, nil
	}
	if len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = append(c.order[:0], c.order[1:]...)
	}
	c.m[key] = v
	c.order = append(c.order, key)
	return v, nil
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
