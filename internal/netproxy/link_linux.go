package netproxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperArg marks the process as the network helper (see init).
const helperArg = "__ralph-sandbox-net-helper"

// The helper is the worker's own binary, re-executed inside the sandbox
// through an inherited descriptor (so it runs even when the binary's path
// is hidden there). In the command's fresh network namespace it opens the
// proxy's listening socket, hands that socket to the worker over an
// inherited unix socket and then execs the command: the worker accepts
// and serves the command's connections from its own namespace, and no
// process of ours stays in the sandbox.
func init() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		os.Exit(helperMain(os.Args[2:]))
	}
}

// helperMain: args are <link fd> <exe fd> <argv...>. It returns only on failure.
func helperMain(args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "ralph sandbox: network helper: %v\n", err)
		return 126
	}
	if len(args) < 3 {
		return fail(errors.New("usage: link-fd exe-fd command"))
	}
	linkFD, err1 := strconv.Atoi(args[0])
	exeFD, err2 := strconv.Atoi(args[1])
	if err := errors.Join(err1, err2); err != nil {
		return fail(err)
	}
	unix.CloseOnExec(exeFD)
	unix.CloseOnExec(linkFD)
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(Port)))
	if err != nil {
		return fail(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fail(err)
	}
	if err := unix.Sendmsg(linkFD, []byte{1}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return fail(fmt.Errorf("handing the listener to the worker: %w", err))
	}
	f.Close()
	ln.Close() // the worker holds the socket now
	path, err := exec.LookPath(args[2])
	if err != nil {
		return fail(err)
	}
	return fail(syscall.Exec(path, args[2:], os.Environ()))
}

var (
	exeOnce sync.Once
	exeFile *os.File
	exeErr  error
)

// executable is this binary, opened once: a descriptor keeps working even
// if the file is replaced on disk during an upgrade.
func executable() (*os.File, error) {
	exeOnce.Do(func() {
		var path string
		if path, exeErr = os.Executable(); exeErr == nil {
			exeFile, exeErr = os.Open(path)
		}
	})
	return exeFile, exeErr
}

// Link is one command's way to its proxy.
type Link struct {
	proxy  *Proxy
	parent *net.UnixConn
	child  *os.File
	exe    *os.File
	served chan struct{}
	// enter: no helper; the worker opens the listener in the command's
	// namespace itself (see NewEnterLink).
	enter *enterLink
}

// NewLink prepares the proxy of one command that applies allow.
func NewLink(allow *AllowList) (*Link, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox network: locating the worker binary for the helper: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox network: socketpair: %w", err)
	}
	pf := os.NewFile(uintptr(fds[0]), "proxy-link")
	c, err := net.FileConn(pf)
	pf.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("sandbox network: %w", err)
	}
	return &Link{proxy: New(allow, nil), parent: c.(*net.UnixConn), child: os.NewFile(uintptr(fds[1]), "proxy-link-child"),
		exe: exe, served: make(chan struct{})}, nil
}

// Files are the descriptors the command's process must inherit, in order,
// starting at the descriptor number given to Argv.
func (k *Link) Files() []*os.File {
	if k.enter != nil {
		return []*os.File{k.enter.blockR}
	}
	return []*os.File{k.child, k.exe}
}

// Argv wraps argv (run inside the sandbox) in the helper; firstFD is the
// descriptor number Files()[0] gets in the child.
func (k *Link) Argv(firstFD int, argv []string) []string {
	if k.enter != nil {
		return argv
	}
	return append([]string{fmt.Sprintf("/proc/self/fd/%d", firstFD+1), helperArg,
		strconv.Itoa(firstFD), strconv.Itoa(firstFD + 1)}, argv...)
}

// Started is called once the command's process exists: the worker's copy
// of the child's end is closed, and the proxy serves the listener the
// helper sends (if it ever does).
func (k *Link) Started() {
	if k.enter != nil {
		k.enter.blockR.Close()
		return
	}
	k.child.Close()
	go func() {
		defer close(k.served)
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := k.parent.ReadMsgUnix(make([]byte, 1), oob)
		if err != nil || oobn == 0 {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return
		}
		f := os.NewFile(uintptr(fds[0]), "proxy-listener")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return
		}
		k.proxy.Serve(l)
	}()
}

// Close ends the proxy (every tunnel with it) once the command is over and
// returns what it recorded.
func (k *Link) Close() []Record {
	if k.enter != nil {
		k.enter.entered.Do(func() { close(k.served) }) // never entered: nothing serves
		k.enter.release()
		k.proxy.Close()
		<-k.served
		return k.proxy.Records()
	}
	k.child.Close()
	k.parent.Close()
	k.proxy.Close()
	// A Serve that starts after Close closes its listener at once.
	<-k.served
	return k.proxy.Records()
}
