package sandbox

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// The seccomp filter every sandboxed command runs under (bwrap --seccomp
// loads it just before it executes the command). bwrap's own options keep a
// command from holding capabilities; the filter closes what a process with
// none may still do, or may do in a user namespace of its own:
//   - a nested user namespace (unshare or clone with CLONE_NEWUSER; clone3
//     answers ENOSYS so that libc falls back to clone, whose flags can be
//     read) — inside one a command would be root again and could mount
//     cgroup hierarchies and lift its own limits;
//   - every mount system call, the key management calls, BPF, perf events,
//     setns;
//   - ptrace attach and seize: a command traces only what it starts itself
//     (PTRACE_TRACEME, as gdb's run and strace's fallback do);
//   - process_vm_readv and process_vm_writev, which reach another process's
//     memory with no attach, only the kernel's access check (bubblewrap's
//     pid 1 runs as the command's uid). A debugger of its own children
//     reads them through ptrace instead.
//   - io_uring: its requests run in kernel workers the filter never sees
//     (any system call the filter refuses could come back that way);
//   - personality with any persona but the default (READ_IMPLIES_EXEC makes
//     every readable mapping executable; the others date from old ABIs); a
//     query (0xffffffff) still answers.

// seccompData offsets (struct seccomp_data: nr, arch, ip, args[6]). The
// low half of an argument comes first on the little-endian machines the
// filter is built for.
const (
	offNR   = 0
	offArch = 4
	offArg0 = 16
)

// deniedSyscalls answer EPERM whatever their arguments.
var deniedSyscalls = []uint32{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_SETNS,
	unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
}

// Personas personality may be called with: the default and the query.
const (
	perLinux     = 0
	personaQuery = 0xffffffff
)

// bpfProgram assembles the filter's classic BPF instructions.
type bpfProgram []unix.SockFilter

func (p *bpfProgram) add(code uint16, k uint32, jt, jf uint8) {
	*p = append(*p, unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k})
}

func (p *bpfProgram) load(off uint32) { p.add(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off, 0, 0) }

func (p *bpfProgram) ret(v uint32) { p.add(unix.BPF_RET|unix.BPF_K, v, 0, 0) }

func errnoRet(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// denyIfFlag: syscall nr fails with EPERM when its first argument has flag set.
func (p *bpfProgram) denyIfFlag(nr, flag uint32) {
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, 4)
	p.load(offArg0)
	p.add(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, flag, 0, 1)
	p.ret(errnoRet(unix.EPERM))
	p.load(offNR)
}

// denyIfArg: syscall nr fails with EPERM when its first argument is one of values.
func (p *bpfProgram) denyIfArg(nr uint32, values ...uint32) {
	n := uint8(len(values))
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, n+4)
	p.load(offArg0)
	for i, v := range values {
		p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, v, n-uint8(i), 0) // to the ret
	}
	p.add(unix.BPF_JMP|unix.BPF_JA, 1, 0, 0)
	p.ret(errnoRet(unix.EPERM))
	p.load(offNR)
}

// denyUnlessArg: syscall nr fails with EPERM unless its first argument is
// one of values (only its low half is read: enough for personality, whose
// argument the kernel takes as an unsigned int).
func (p *bpfProgram) denyUnlessArg(nr uint32, values ...uint32) {
	n := uint8(len(values))
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, n+3)
	p.load(offArg0)
	for i, v := range values {
		p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, v, n-uint8(i), 0) // past the ret
	}
	p.ret(errnoRet(unix.EPERM))
	p.load(offNR)
}

// seccompFilter is the whole program for this machine's architecture.
func seccompFilter() (bpfProgram, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("no seccomp filter for this architecture")
	}
	var p bpfProgram
	p.load(offArch)
	// A system call of another ABI (a 32-bit one on a 64-bit kernel) has
	// other numbers: none passes.
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, auditArch, 1, 0)
	p.ret(errnoRet(unix.ENOSYS))
	p.load(offNR)
	if x32Bit != 0 {
		p.add(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, x32Bit, 0, 1)
		p.ret(errnoRet(unix.ENOSYS))
	}
	for _, nr := range deniedSyscalls {
		p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, 1)
		p.ret(errnoRet(unix.EPERM))
	}
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_CLONE3, 0, 1)
	p.ret(errnoRet(unix.ENOSYS))
	p.denyIfFlag(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	p.denyIfFlag(unix.SYS_CLONE, unix.CLONE_NEWUSER)
	p.denyIfArg(unix.SYS_PTRACE, unix.PTRACE_ATTACH, unix.PTRACE_SEIZE)
	p.denyUnlessArg(unix.SYS_PERSONALITY, perLinux, personaQuery)
	p.ret(unix.SECCOMP_RET_ALLOW)
	return p, nil
}

// seccompProgram is the filter as bwrap reads it.
func seccompProgram() ([]byte, error) {
	p, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	return p.bytes(), nil
}

// bytes is the program as bwrap reads it: struct sock_filter after struct
// sock_filter, in the machine's byte order.
func (p bpfProgram) bytes() []byte {
	out := make([]byte, 0, 8*len(p))
	for _, f := range p {
		out = binary.NativeEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.NativeEndian.AppendUint32(out, f.K)
	}
	return out
}
