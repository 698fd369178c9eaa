package adversarial

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/sandbox"
	"golang.org/x/sys/unix"
)

// syscallScript runs one raw system call from python and prints
// "name=<errno name or ok>"; what a model's program would try.
func syscallScript(name string, nr uintptr, args ...string) string {
	return `python3 -c '
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(` + strconv.Itoa(int(nr)) + `, ` + strings.Join(append(args, "0"), ", ") + `)
e = ctypes.get_errno()
print("` + name + `=" + ("ok" if r >= 0 else errno.errorcode.get(e, str(e))))
'`
}

// Finding 1: a command ran as host uid 0 and wrote host sysctls
// (core_pattern: code run as root on the next crash) and read root-only files.
func TestCommandsCannotWriteHostSysctls(t *testing.T) {
	j := New(t)
	Unchanged(t, "/proc/sys/vm/swappiness", "/proc/sys/kernel/core_pattern")
	WriteFile(t, filepath.Join(j.Base, "root-only"), Canary)
	res := j.Run(`id -u; echo 17 > /proc/sys/vm/swappiness; echo '|` + j.Dir + `/x' > /proc/sys/kernel/core_pattern; cat ` + j.Base + `/root-only /etc/shadow`)
	if first := strings.Fields(res.Output); len(first) == 0 || first[0] == "0" {
		t.Errorf("the command ran as uid 0:\n%s", res.Output)
	}
	NoCanary(t, res.Output)
	if os.Geteuid() == 0 && strings.Contains(res.Output, "root:") {
		t.Errorf("/etc/shadow was readable:\n%s", res.Output)
	}
}

// Finding 2: from a nested user namespace a command mounted the cgroup v1
// hierarchies and lifted its own memory and pids limits.
func TestCommandsCannotLiftTheirCgroupLimits(t *testing.T) {
	j := New(t, func(c *sandbox.Config) { c.MemoryMB, c.Pids = 64, 32 })
	var limits []string
	for _, c := range []string{"memory", "pids"} {
		limits = append(limits, ownCgroupFiles(t, c)...)
	}
	Unchanged(t, limits...)
	res := j.Run(`unshare -Urmc sh -c 'mkdir -p /tmp/m && mount -t cgroup -o memory none /tmp/m && echo -1 > /tmp/m/memory.limit_in_bytes && echo lifted' 2>&1
python3 -c 'import os; os.unshare(os.CLONE_NEWUSER|os.CLONE_NEWNS|os.CLONE_NEWCGROUP); print("unshared")' 2>&1
python3 -c 'b = bytearray(300 << 20); print("allocated")'`)
	for _, bad := range []string{"lifted", "unshared", "allocated"} {
		if strings.Contains(res.Output, bad) {
			t.Errorf("%s: the limits did not hold:\n%s", bad, res.Output)
		}
	}
	if res.MemoryKill == "" {
		t.Errorf("300 MB under a 64 MB limit was not killed:\n%s", res.Output)
	}
	res = j.Run(`n=0; for i in $(seq 60); do sleep 30 & n=$((n+1)); done 2>/dev/null; echo started $(jobs -p | wc -l)`)
	if strings.Contains(res.Output, "started 60") {
		t.Errorf("60 processes under a 32 pids limit:\n%s", res.Output)
	}
}

// ownCgroupFiles are the limit files of this process's own v1 group of
// controller, which a command's group lies under.
func ownCgroupFiles(t *testing.T, controller string) []string {
	t.Helper()
	data := ReadHost(t, "/proc/self/cgroup")
	for _, line := range strings.Split(data, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == controller {
			dir := filepath.Join("/sys/fs/cgroup", controller, parts[2])
			files := map[string][]string{"memory": {"memory.limit_in_bytes"}, "pids": {"pids.max"}}[controller]
			var out []string
			for _, f := range files {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					out = append(out, filepath.Join(dir, f))
				}
			}
			return out
		}
	}
	return nil
}

// Section 26: no user namespace, mount, key management, BPF, perf events,
// ptrace of what the command did not start.
func TestCommandsHoldNoPrivilegeInAnyNamespace(t *testing.T) {
	j := New(t)
	probes := []string{
		syscallScript("unshare_user", unix.SYS_UNSHARE, strconv.Itoa(unix.CLONE_NEWUSER)),
		syscallScript("mount", unix.SYS_MOUNT, `b"none"`, `b"/tmp"`, `b"tmpfs"`, "0"),
		syscallScript("keyctl", unix.SYS_KEYCTL, "0", strconv.Itoa(unix.KEY_SPEC_SESSION_KEYRING)),
		syscallScript("add_key", unix.SYS_ADD_KEY, `b"user"`, `b"x"`, `b"y"`, "1", strconv.Itoa(unix.KEY_SPEC_SESSION_KEYRING)),
		syscallScript("bpf", unix.SYS_BPF, "0", "0", "0"),
		syscallScript("perf_event_open", unix.SYS_PERF_EVENT_OPEN, "0", "0", "-1", "-1"),
		syscallScript("ptrace_attach", unix.SYS_PTRACE, strconv.Itoa(unix.PTRACE_ATTACH), "1"),
		syscallScript("setns", unix.SYS_SETNS, "0", "0"),
	}
	res := j.Run(strings.Join(probes, "\n") + "\nunshare -U true 2>&1 && echo userns=ok; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; head -c 64 /proc/keys /proc/timer_list 2>&1 | grep -c ': ' ; : > /proc/sys/kernel/hostname 2>&1")
	for _, p := range []string{"unshare_user", "mount", "keyctl", "add_key", "bpf", "perf_event_open", "ptrace_attach", "setns", "userns"} {
		if strings.Contains(res.Output, p+"=ok") {
			t.Errorf("%s worked inside the sandbox:\n%s", p, res.Output)
		}
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("the command's status lacks %q:\n%s", want, res.Output)
		}
	}
}

// A command may trace what it starts itself (a debugger's run, strace).
func TestCommandsMayTraceTheirOwnChildren(t *testing.T) {
	j := New(t)
	res := j.Run(`python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    libc.ptrace(0, 0, 0, 0)  # PTRACE_TRACEME
    os.kill(os.getpid(), 19)
    os._exit(0)
os.waitpid(pid, 0)
print("traced" if libc.ptrace(7, pid, 0, 0) == 0 else "refused")  # PTRACE_CONT
os.waitpid(pid, 0)
'`)
	if !strings.Contains(res.Output, "traced") {
		t.Errorf("PTRACE_TRACEME of a child was refused:\n%s", res.Output)
	}
}

// Finding 7: commands inherited the worker's session keyring.
func TestCommandsStartInANewSessionKeyring(t *testing.T) {
	id, err := unix.AddKey("user", "ralph-adversarial", []byte(Canary), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Fatalf("adding a key to the worker's session keyring: %v", err)
	}
	t.Cleanup(func() { _, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0) })
	j := New(t)
	res := j.Run(syscallScript("keyctl_read", unix.SYS_KEYCTL, strconv.Itoa(unix.KEYCTL_READ), strconv.Itoa(id), "ctypes.create_string_buffer(256)", "256") +
		"\ncat /proc/keys 2>&1")
	NoCanary(t, res.Output)
	if strings.Contains(res.Output, "keyctl_read=ok") || strings.Contains(res.Output, "ralph-adversarial") {
		t.Errorf("the worker's key was reachable:\n%s", res.Output)
	}
}

// Finding 9: descriptors the worker inherited reached commands.
func TestCommandsInheritNoWorkerDescriptor(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "inherited")
	WriteFile(t, secret, Canary)
	fd, err := unix.Open(secret, unix.O_RDONLY, 0) // as a parent would leave it: not close-on-exec
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	j := New(t) // the worker starts: what it holds becomes close-on-exec
	res := j.Run("cat <&" + strconv.Itoa(fd) + " 2>&1; ls -l /proc/self/fd/ 2>&1")
	NoCanary(t, res.Output)
}

// Section 26: the masked /proc files read as nothing.
func TestSensitiveProcFilesAreMasked(t *testing.T) {
	j := New(t)
	var existing []string
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/sysrq-trigger"} {
		if _, err := os.Stat(p); err == nil {
			existing = append(existing, p)
		}
	}
	res := j.Run("for f in " + strings.Join(existing, " ") + "; do printf '%s ' $f; head -c 100 $f 2>/dev/null | wc -c; done; echo h > /proc/sysrq-trigger 2>&1")
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] != "0" {
			t.Errorf("%s is readable inside the sandbox:\n%s", f[0], res.Output)
		}
	}
}
