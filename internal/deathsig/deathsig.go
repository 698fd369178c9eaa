// Package deathsig starts children whose Pdeathsig must mean "the worker
// died". Linux sends Pdeathsig when the thread that forked the child ends,
// not the process, and Go ends a thread whose goroutine exits while locked
// to it, which agent/tools does on purpose after every command (its thread
// got a session keyring of its own). A child forked on a thread that such a
// goroutine later locks and ends is killed with it: the dev server of a
// test, or a git step of another round. A child started here is forked on
// a thread held locked until the child has been waited for, so no other
// goroutine can lock (and end) that thread while the child lives.
package deathsig

import "runtime"

// Run runs f, which starts a child and waits for it, on a locked thread.
func Run(f func() error) error {
	return Go(f, func() {})
}

// Go runs start on a locked thread and returns its error; when start
// succeeds, wait (which must wait for the child) runs after it on the same
// thread, in the background, and the thread is released once it returns.
func Go(start func() error, wait func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := start()
		started <- err
		if err == nil {
			wait()
		}
	}()
	return <-started
}
