package adversarial

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Finding 9 (docs/security.md): the filter let io_uring_setup through (its requests
// run in kernel workers the filter never sees) and personality set
// READ_IMPLIES_EXEC. Every io_uring call is refused before it looks at its
// arguments (EPERM, not EBADF for the descriptor -1), and so is every
// persona but the default; a query still answers.
func TestIoUringAndPersonasAreRefused(t *testing.T) {
	j := New(t)
	res := j.Run(strings.Join([]string{
		syscallScript("io_uring_setup", unix.SYS_IO_URING_SETUP, "1", "ctypes.create_string_buffer(256)"),
		syscallScript("io_uring_enter", unix.SYS_IO_URING_ENTER, "-1", "1", "0", "0", "0"),
		syscallScript("io_uring_register", unix.SYS_IO_URING_REGISTER, "-1", "0", "0"),
		syscallScript("read_implies_exec", unix.SYS_PERSONALITY, "ctypes.c_ulong(0x0400000)"),
		syscallScript("linux32", unix.SYS_PERSONALITY, "ctypes.c_ulong(0x0008)"),
		syscallScript("default", unix.SYS_PERSONALITY, "ctypes.c_ulong(0)"),
		syscallScript("query", unix.SYS_PERSONALITY, "ctypes.c_ulong(0xffffffff)"),
	}, "\n"))
	for _, want := range []string{"io_uring_setup=EPERM", "io_uring_enter=EPERM", "io_uring_register=EPERM",
		"read_implies_exec=EPERM", "linux32=EPERM", "default=ok", "query=ok"} {
		if !strings.Contains(res.Output, want+"\n") {
			t.Errorf("want %s:\n%s", want, res.Output)
		}
	}
}
