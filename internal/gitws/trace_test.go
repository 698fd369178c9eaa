package gitws

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// Trace sees every command a Git runs, in order, with its directory and
// arguments but not the overrides, and never a credential of the remote.
func TestTraceSeesEachCommandWithoutCredentials(t *testing.T) {
	remote := "https://user:s3cret-token@127.0.0.1:1/repo.git" // refused at once
	g := newGit(t, ModeRemote, remote)
	dir := workspace(t, "ws")
	var mu sync.Mutex
	var got []TracedCommand
	stop := Trace(func(c TracedCommand) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, c)
	})
	_, initErr := g.run(context.Background(), dir, cmdOpts{}, "init", "-q")
	_, lsErr := g.run(context.Background(), dir, cmdOpts{}, "ls-remote", "--", remote)
	stop()
	_, _ = g.run(context.Background(), dir, cmdOpts{}, "status") // after stop: not seen
	if initErr != nil || lsErr == nil {
		t.Fatalf("init: %v; ls-remote of a port nothing listens on: %v", initErr, lsErr)
	}
	if len(got) != 2 {
		t.Fatalf("traced %d commands, want 2: %+v", len(got), got)
	}
	if got[0].Dir != dir || strings.Join(got[0].Args, " ") != "init -q" || got[0].Err != nil || got[0].Took <= 0 || got[0].CPU <= 0 {
		t.Fatalf("first command traced as %+v", got[0])
	}
	ls := strings.Join(got[1].Args, " ")
	if got[1].Err == nil || strings.Contains(ls, "s3cret") || !strings.Contains(ls, "127.0.0.1:1/repo.git") {
		t.Fatalf("ls-remote traced as %q (err %v): want it failed, its remote named without the token", ls, got[1].Err)
	}
}
