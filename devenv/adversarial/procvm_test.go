package adversarial

import (
	"strings"
	"testing"
)

// vmAccessScript tries process_vm_readv and process_vm_writev (python's
// ctypes, as a model's program would) on pid 1 of the sandbox, the process
// bubblewrap started before the command, at an address taken from its maps
// when they are readable. It prints "<call>=<errno name or reached>": EFAULT
// counts as reached, since the kernel checks access before it copies.
const vmAccessScript = `python3 -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
addr = 0x400000
try:
    addr = int(open("/proc/1/maps").readline().split("-")[0], 16)
except Exception:
    pass
buf = ctypes.create_string_buffer(16)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
remote = iovec(addr, 16)
for name in ("process_vm_readv", "process_vm_writev"):
    f = getattr(libc, name)
    f.restype = ctypes.c_ssize_t
    r = f(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    e = ctypes.get_errno()
    print(name + "=" + ("reached" if r >= 0 or e == errno.EFAULT else errno.errorcode.get(e, str(e))))
'`

// Section 26: a command reads or writes no memory of a process it did not
// start. process_vm_readv and process_vm_writev need no ptrace attach (which
// the filter refuses), only the kernel's access check.
func TestCommandsCannotReachTheMemoryOfOtherProcesses(t *testing.T) {
	j := New(t)
	res := j.Run(vmAccessScript)
	for _, call := range []string{"process_vm_readv", "process_vm_writev"} {
		if !strings.Contains(res.Output, call+"=") {
			t.Errorf("%s was not tried:\n%s", call, res.Output)
		}
		if strings.Contains(res.Output, call+"=reached") {
			t.Errorf("%s reached pid 1's memory:\n%s", call, res.Output)
		}
	}
}
