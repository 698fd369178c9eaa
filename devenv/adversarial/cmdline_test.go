package adversarial

import (
	"path/filepath"
	"strings"
	"testing"
)

// Finding 10 (docs/security.md): /proc/1/cmdline inside the sandbox is bubblewrap's
// own command line, which named the host's workspace root, session and
// homes directories and the worker's HOME (every mount). Its options now
// reach it through --args: only the command itself is left there.
func TestPid1CmdlineNamesNoHostPath(t *testing.T) {
	j := New(t)
	res := j.Run(`tr '\0' '\n' < /proc/1/cmdline`)
	if !strings.Contains(res.Output, "--args\n") {
		t.Fatalf("pid 1 is not bwrap reading its options from a descriptor:\n%s", res.Output)
	}
	for _, p := range []string{j.Root, j.Session, filepath.Join(j.Session, "homes"), j.Home} {
		if strings.Contains(res.Output, p) {
			t.Errorf("/proc/1/cmdline names the host path %s:\n%s", p, res.Output)
		}
	}
}
