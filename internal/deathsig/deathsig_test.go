//go:build linux

package deathsig

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/proc"
)

func sleeper() *exec.Cmd {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// endThreads runs n goroutines that each end locked to their thread, as
// agent/tools does after every command: Go then ends those threads.
func endThreads(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			time.Sleep(time.Millisecond)
		}()
	}
	wg.Wait()
}

// exited waits up to a few seconds for done to close.
func exited(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(3 * time.Second):
		return false
	}
}

// TestAChildDiesWithTheThreadThatForkedIt is why the package exists: the
// kernel sends Pdeathsig when the forking thread ends, the process alive.
// (Go wedges rather than ends the main thread, so a fork that ran there is
// tried again.)
func TestAChildDiesWithTheThreadThatForkedIt(t *testing.T) {
	for {
		cmd := sleeper()
		forked := make(chan int)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if err := cmd.Start(); err != nil {
				t.Error(err)
			}
			forked <- syscall.Gettid()
		}()
		tid := <-forked
		if t.Failed() {
			return
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		if tid == syscall.Getpid() {
			_ = cmd.Process.Kill()
			<-done
			continue
		}
		if !exited(done) {
			_ = cmd.Process.Kill()
			t.Fatal("the child outlived the thread that forked it: Pdeathsig did not fire")
		}
		return
	}
}

// TestAChildStartedHereOutlivesEndedThreads: however many threads other
// goroutines end, a child started by Go lives until it is killed.
func TestAChildStartedHereOutlivesEndedThreads(t *testing.T) {
	cmd := sleeper()
	done, hold := make(chan struct{}), make(chan struct{})
	// wait parks on a channel first (a goroutine blocked in wait4 would
	// keep its thread busy anyway): the thread is free for others unless Go
	// holds it locked.
	if err := Go(cmd.Start, func() { <-hold; _ = cmd.Wait(); close(done) }); err != nil {
		t.Fatal(err)
	}
	endThreads(200)
	time.Sleep(100 * time.Millisecond) // a signal in flight lands (not a timing assertion)
	if st, err := proc.ReadStat(cmd.Process.Pid); err != nil || st.State == 'Z' {
		t.Fatalf("the child was killed when another goroutine ended a thread (%+v, %v)", st, err)
	}
	close(hold)
	_ = cmd.Process.Kill()
	if !exited(done) {
		t.Fatal("the child did not exit after the kill")
	}
}
