package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/ralph-temporal/ralph/internal/cgroup"
	"github.com/ralph-temporal/ralph/internal/netproxy"
)

// Run is what one command gets beyond its mounts: its cgroup and, in proxy
// mode, its proxy. A nil *Run adds nothing.
type Run struct {
	cg     *cgroup.Group
	link   *netproxy.Link
	mem    int64
	filter *os.File // bwrap's --seccomp descriptor
	// args and argsW are the pipe bwrap reads its options from (--args):
	// a command's /proc/1/cmdline (bwrap's own) then names no host path.
	args, argsW *os.File
	cred        *syscall.Credential
	cache       string // the command's tool cache copy, bound at ToolCacheMount
}

// UseToolCache has the command see the tool cache copy at dir (see
// ToolCacheEnv); "" gives it none.
func (r *Run) UseToolCache(dir string) {
	if r != nil {
		r.cache = dir
	}
}

// Outcome is what a finished command's Run observed.
type Outcome struct {
	// Network is every connection the command asked the proxy for.
	Network []netproxy.Record
	// OOMKilled: the kernel killed a process of the command for exceeding
	// the memory limit (MemoryMB).
	OOMKilled bool
	MemoryMB  int64
}

// Prepare sets up one command's cgroup and proxy. Finish must follow.
func (s *Sandbox) Prepare() (*Run, error) {
	if s == nil {
		return nil, nil
	}
	r := &Run{mem: s.limits.MemoryBytes >> 20, cred: s.Credential()}
	var err error
	if r.cg, err = s.cg.New(); err != nil {
		return nil, err
	}
	if s.mode == ModeBwrap {
		if r.args, r.argsW, err = os.Pipe(); err != nil {
			r.cg.Close()
			return nil, fmt.Errorf("sandbox: arguments pipe: %w", err)
		}
		if r.filter, err = seccompFile(s.seccomp); err != nil {
			r.Finish()
			return nil, err
		}
	}
	if s.Network() == NetProxy {
		newLink := netproxy.NewLink
		if netproxy.CanEnter() {
			newLink = netproxy.NewEnterLink // no helper process per command
		}
		if r.link, err = newLink(s.allow); err != nil {
			r.Finish()
			return nil, err
		}
	}
	return r, nil
}

// SysProcAttr completes the attributes of the command's first process:
// the commands' uid and gid, and (cgroup v2) the group it is born in.
func (r *Run) SysProcAttr(attr *syscall.SysProcAttr) {
	if r == nil {
		return
	}
	attr.Credential = r.cred
	if fd, ok := r.cg.FD(); ok {
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
}

// Entered is told the command's first process once bwrap has reported it
// (pidfd on it; -1 when it never did): in proxy mode the worker opens the
// proxy's listener in its network namespace and lets the command go on.
func (r *Run) Entered(pidfd int) {
	if r != nil && r.link != nil {
		_ = r.link.Enter(pidfd) // on failure the command runs with no way out
	}
}

// Files are the descriptors the command's process must inherit right after
// the ones given to CommandFor as firstFD-3 (in this order).
func (r *Run) Files() []*os.File {
	if r == nil {
		return nil
	}
	var fs []*os.File
	if r.args != nil {
		fs = append(fs, r.args)
	}
	if r.filter != nil {
		fs = append(fs, r.filter)
	}
	if r.link != nil {
		fs = append(fs, r.link.Files()...)
	}
	return fs
}

// CommandFor is CommandReadOnly for a prepared run: firstFD is the descriptor
// number Files()[0] gets in the child.
func (s *Sandbox) CommandFor(r *Run, dir, home string, infoFD, firstFD int, ro ReadOnly, argv []string) (string, []string) {
	if s == nil || r == nil {
		return s.CommandReadOnly(dir, home, infoFD, ro, argv)
	}
	argsFD := firstFD
	if r.args != nil {
		firstFD++
	}
	var opts []string
	if r.filter != nil {
		opts = append(opts, "--seccomp", strconv.Itoa(firstFD))
		firstFD++
	}
	if r.link != nil && s.Network() == NetProxy {
		argv = r.link.Argv(firstFD, argv)
		opts = append(opts, r.link.BwrapArgs(firstFD)...)
	}
	name, args := argv[0], argv[1:]
	if s.mode == ModeBwrap {
		name, args = s.bwrap, s.args(s.realDir(dir), home, r.cache, infoFD, argv, ro, opts)
		if r.args != nil {
			args = r.passArgs(args[:len(args)-len(argv)-1], argsFD, argv)
		}
	}
	return r.cg.Wrap(name, args)
}

// passArgs writes bwrap's options to the arguments pipe (in the background:
// they may pass its capacity before bwrap reads) and returns the command
// line that has bwrap read them from fd. Only the command stays on it: bwrap
// takes that from its own argv alone.
func (r *Run) passArgs(opts []string, fd int, argv []string) []string {
	var data []byte
	for _, o := range opts {
		data = append(append(data, o...), 0)
	}
	w := r.argsW
	r.argsW = nil
	go func() {
		_, _ = w.Write(data) // fails only once the command will not start
		w.Close()
	}()
	return append([]string{"--args", strconv.Itoa(fd), "--"}, argv...)
}

// Started is called once the command's process exists.
func (r *Run) Started() {
	if r == nil {
		return
	}
	if r.filter != nil {
		r.filter.Close() // bwrap has its copy
	}
	if r.args != nil {
		r.args.Close() // likewise
	}
	if r.link != nil {
		r.link.Started()
	}
}

// Finish is called once every process of the command is gone: it ends the
// proxy and removes the cgroup (killing anything still in it).
func (r *Run) Finish() Outcome {
	if r == nil {
		return Outcome{}
	}
	var o Outcome
	for _, f := range []*os.File{r.filter, r.args, r.argsW} {
		if f != nil {
			f.Close()
		}
	}
	if r.link != nil {
		o.Network = r.link.Close()
	}
	o.OOMKilled, o.MemoryMB = r.cg.OOMKilled(), r.mem
	r.cg.Close()
	return o
}

// String describes the outcome's memory kill for a tool result.
func (o Outcome) String() string {
	if !o.OOMKilled {
		return ""
	}
	return fmt.Sprintf("killed: the command exceeded its memory limit of %d MB (RALPH_SANDBOX_MEMORY_MB)", o.MemoryMB)
}

// Freezable is whether Freeze can stop every process of the command (a
// cgroup freezer); without one the caller stops them by signal.
func (r *Run) Freezable() bool { return r != nil && r.cg.Frozen() }

// Freeze stops every process of the command; Thaw lets them go on.
func (r *Run) Freeze() error { return r.cg.Freeze() }

// Thaw undoes Freeze.
func (r *Run) Thaw() error { return r.cg.Thaw() }

// SubmissionFreeze is how the worker stops an attempt's processes while
// its submission is checked: the cgroup freezer when the command groups
// have one, else SIGSTOP/SIGCONT of the attempt's processes.
func (s *Sandbox) SubmissionFreeze() string {
	if s != nil {
		if f := s.cg.Freezer(); f != "" {
			return f
		}
	}
	return "sigstop"
}
