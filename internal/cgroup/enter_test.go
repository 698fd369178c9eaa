//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// offMain runs f on a locked thread other than the main one (which Enter
// refuses: its groups are the process's), as the worker's git does.
func offMain(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if syscall.Gettid() == os.Getpid() {
			offMain(f) // this thread stays locked meanwhile: the inner runs elsewhere
			return
		}
		f()
	}()
	<-done
}

// runEntered runs bash script inside g as the worker's git runs there on
// cgroup v1: started by a thread that entered g's groups.
func runEntered(t *testing.T, g *Group, script string) (string, error) {
	t.Helper()
	var out strings.Builder
	cmd := exec.Command("bash", "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	offMain(func() {
		leave, enterErr := g.Enter()
		if enterErr != nil {
			err = enterErr
			return
		}
		err = cmd.Start()
		if lerr := leave(); lerr != nil {
			t.Errorf("leaving the group: %v", lerr)
		}
		if err == nil {
			err = cmd.Wait()
		}
	})
	return out.String(), err
}

// threadGroups is /proc/thread-self/cgroup of the calling (locked) thread.
func threadGroups(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A command started by a thread inside the groups is born in every one of
// them (the kernel's own view of the process, before it ran a thing), and
// the thread is back where it was once it left: the groups are then empty
// and removed.
func TestEnteredThreadStartsTheCommandInsideAndLeaves(t *testing.T) {
	m := manager(t, Limits{MemoryBytes: 256 << 20, Pids: 64})
	if m.Version() != 1 {
		// v2 starts the command in its group (its FD): no thread may enter one.
		g, err := m.New()
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if _, err := g.Enter(); err == nil {
			t.Fatal("a thread entered a cgroup v2 group")
		}
		return
	}
	m = m.WithoutFreezer()
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(g.dirs[0])
	var before, after, tasks string
	var out []byte
	offMain(func() {
		before = threadGroups(t)
		leave, err := g.Enter()
		if err != nil {
			t.Error(err)
			return
		}
		cmd := exec.Command("cat", "/proc/self/cgroup")
		var buf strings.Builder
		cmd.Stdout = &buf
		err = cmd.Start()
		if lerr := leave(); lerr != nil {
			t.Error(lerr)
		}
		after = threadGroups(t)
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			t.Error(err)
		}
		out = []byte(buf.String())
		b, _ := os.ReadFile(filepath.Join(g.dirs[0], "tasks"))
		tasks = string(b)
	})
	if t.Failed() {
		return
	}
	for _, c := range []string{"memory", "pids"} {
		if !hasGroupLine(string(out), c, name) {
			t.Errorf("the command was not born in its %s group %s:\n%s", c, name, out)
		}
	}
	if before != after || strings.Contains(after, name) {
		t.Errorf("the thread did not go back: before\n%s\nafter\n%s", before, after)
	}
	if strings.TrimSpace(tasks) != "" {
		t.Errorf("the group still holds %q after the command", tasks)
	}
	g.Close()
	for _, d := range g.dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("group %s left behind: %v", d, err)
		}
	}
}

// hasGroupLine: /proc/<pid>/cgroup text puts controller c in a group named name.
func hasGroupLine(text, c, name string) bool {
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+c+",") && filepath.Base(parts[2]) == name {
			return true
		}
	}
	return false
}

// A thread that cannot go back is never used again: it stays locked, so Go
// ends it with its goroutine instead of letting it fork other commands
// inside the group. (A fake hierarchy whose home "tasks" is a directory,
// so the move back fails.)
func TestAThreadThatCannotLeaveEnds(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "ralph-test-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &Group{dirs: []string{dir}, dirFD: -1}
	for {
		tids := make(chan int, 1)
		errs := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- syscall.Gettid()
			leave, err := g.Enter()
			if err != nil {
				errs <- err
				return
			}
			errs <- leave()
		}()
		tid := <-tids
		err := <-errs
		if tid == os.Getpid() {
			// Enter refuses the main thread, which Go would wedge rather
			// than end anyway.
			if err == nil || !strings.Contains(err.Error(), "main thread") {
				t.Fatalf("Enter on the main thread = %v, want a refusal", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "moving the thread back to "+home) {
			t.Fatalf("leave = %v, want the failed move back named", err)
		}
		task := "/proc/self/task/" + strconv.Itoa(tid)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(task); os.IsNotExist(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %d lives on after its goroutine ended, still in the group", tid)
			}
		}
	}
}

// A group with a freezer is not entered: freezing the command would stop
// the worker's thread with it.
func TestAGroupWithAFreezerIsNotEntered(t *testing.T) {
	g := &Group{dirs: []string{t.TempDir()}, frzDir: "/x", dirFD: -1}
	if _, err := g.Enter(); err == nil || !strings.Contains(err.Error(), "freezer") {
		t.Fatalf("Enter = %v, want a refusal naming the freezer", err)
	}
	if _, err := (&Group{v2: true, dirs: []string{"/x"}, dirFD: 3}).Enter(); err == nil {
		t.Fatal("a v2 group was entered by a thread")
	}
}

// Close never kills the worker: a thread of it that could not leave a
// group lists the worker's pid in the group's processes until the thread
// ends. (A fake group listing this process, emptied a moment later.)
func TestCloseSparesTheWorkerItself(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ralph-test-2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	procs := filepath.Join(dir, "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = os.Remove(procs) // the thread ended: the group empties
	}()
	(&Group{dirs: []string{dir}, dirFD: -1}).Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the group was not removed once empty: %v", err)
	}
}
