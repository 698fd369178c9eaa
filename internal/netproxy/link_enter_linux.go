package netproxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A root worker may enter a command's network namespace itself: it opens
// the proxy's listening socket there from one of its own threads and
// returns to its namespace, so no helper process starts per command (the
// helper is the worker's binary again, milliseconds of start-up). bwrap
// holds the command back (--block-fd) until the listener exists.

// listenWait bounds waiting for the namespace's loopback, which bwrap
// brings up in the command's first process while the worker already knows it.
const listenWait = 2 * time.Second

// enterLink is the state of a Link that enters the namespace.
type enterLink struct {
	blockR, blockW *os.File
	once           sync.Once // the block pipe is closed
	entered        sync.Once // Enter ran, or Close found it never would
}

// CanEnter reports whether this process may enter a command's network
// namespace (it needs CAP_SYS_ADMIN over the namespace's owner: root).
func CanEnter() bool { return os.Geteuid() == 0 }

// NewEnterLink prepares the proxy of one command that applies allow, to be
// opened by Enter. Files()[0] is bwrap's --block-fd (see BwrapArgs).
func NewEnterLink(allow *AllowList) (*Link, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox network: block pipe: %w", err)
	}
	served := make(chan struct{})
	k := &Link{proxy: New(allow, nil), served: served, enter: &enterLink{blockR: r, blockW: w}}
	return k, nil
}

// BwrapArgs are the bwrap options the link needs; firstFD is the descriptor
// number Files()[0] gets in bwrap.
func (k *Link) BwrapArgs(firstFD int) []string {
	if k == nil || k.enter == nil {
		return nil
	}
	return []string{"--block-fd", strconv.Itoa(firstFD)}
}

// Enter opens the proxy's listener in the network namespace of the process
// pidfd names (the command's first process), serves it, and lets the
// command run. With pidfd < 0 (bwrap reported nothing usable) the command
// runs with no way out.
func (k *Link) Enter(pidfd int) error {
	if k == nil || k.enter == nil {
		return nil
	}
	err := errors.New("sandbox network: the command had ended")
	k.enter.entered.Do(func() { err = k.enterOnce(pidfd) })
	return err
}

func (k *Link) enterOnce(pidfd int) error {
	defer k.enter.release()
	if pidfd < 0 {
		close(k.served)
		return errors.New("sandbox network: no namespace to enter")
	}
	ln, err := listenIn(pidfd)
	if err != nil {
		close(k.served)
		return err
	}
	go func() {
		defer close(k.served)
		k.proxy.Serve(ln)
	}()
	return nil
}

// release lets bwrap go on (a read of the block pipe returns at EOF too).
func (e *enterLink) release() { e.once.Do(func() { e.blockW.Close() }) }

// listenIn creates the listener inside the namespace from a locked thread.
// A thread that cannot return to the worker's namespace is never reused:
// its goroutine ends locked, and Go then ends the thread.
func listenIn(pidfd int) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("sandbox network: %w", err)}
			return
		}
		defer unix.Close(own)
		if err := unix.Setns(pidfd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("sandbox network: entering the command's namespace: %w", err)}
			return
		}
		fd, err := loopbackSocket()
		if unix.Setns(own, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		if err != nil {
			ch <- result{nil, err}
			return
		}
		f := os.NewFile(uintptr(fd), "proxy-listener")
		ln, err := net.FileListener(f) // back in the worker's namespace: the socket keeps its own
		f.Close()
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}

// loopbackSocket is a listening TCP socket on the namespace's 127.0.0.1 at
// Port, made with raw calls so that nothing of Go's runtime (its poller
// runs on other threads) sees the socket before the thread is back.
func loopbackSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox network: socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	addr := &unix.SockaddrInet4{Port: Port, Addr: [4]byte{127, 0, 0, 1}}
	deadline := time.Now().Add(listenWait)
	for {
		err = unix.Bind(fd, addr)
		if !errors.Is(err, syscall.EADDRNOTAVAIL) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Microsecond) // loopback not up yet
	}
	if err == nil {
		err = unix.Listen(fd, 128)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("sandbox network: listening on the command's loopback: %w", err)
	}
	return fd, nil
}
