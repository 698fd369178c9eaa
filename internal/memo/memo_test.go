package memo

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestGetBuildsOncePerKey(t *testing.T) {
	t.Parallel()
	c := New[string, int](4)
	builds := 0
	build := func() (int, error) { builds++; return 42, nil }
	for range 3 {
		v, err := c.Get("a", build)
		if err != nil || v != 42 {
			t.Fatalf("Get = %d, %v", v, err)
		}
	}
	if builds != 1 {
		t.Errorf("%d builds for one key, want 1", builds)
	}
}

func TestErrorsAreNeverKept(t *testing.T) {
	t.Parallel()
	c := New[string, int](4)
	boom := errors.New("boom")
	if _, err := c.Get("a", func() (int, error) { return 1, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if c.Len() != 0 {
		t.Fatalf("a failed build was kept: %d entries", c.Len())
	}
	v, err := c.Get("a", func() (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Errorf("after a failed build: Get = %d, %v, want a new build (7)", v, err)
	}
}

func TestBoundedOldestGoesFirst(t *testing.T) {
	t.Parallel()
	c := New[int, string](3)
	for i := range 100 {
		if _, err := c.Get(i, func() (string, error) { return fmt.Sprint(i), nil }); err != nil {
			t.Fatal(err)
		}
		if c.Len() > 3 {
			t.Fatalf("after %d keys the cache holds %d entries, bound 3", i+1, c.Len())
		}
	}
	rebuilt := map[int]bool{}
	for _, k := range []int{97, 98, 99, 0} {
		c.Get(k, func() (string, error) { rebuilt[k] = true; return "", nil })
	}
	if rebuilt[97] || rebuilt[98] || rebuilt[99] || !rebuilt[0] {
		t.Errorf("rebuilt %v: want only the evicted key 0 rebuilt, the newest three kept", rebuilt)
	}
	if c := New[int, int](0); c.max != 1 {
		t.Errorf("New(0) holds %d, want at least one entry", c.max)
	}
}

// Concurrent callers of one key all get the first value stored, whatever
// their own build returned (run with -race).
func TestConcurrentGetsAgree(t *testing.T) {
	t.Parallel()
	c := New[string, *int](2)
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get("k", func() (*int, error) { n := i; return &n, nil })
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for i, v := range got {
		if v != got[0] {
			t.Fatalf("caller %d got %p, caller 0 got %p: callers disagree", i, v, got[0])
		}
	}
}
