package adversarial

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Section 13: other workspaces, the session directory and the worker's home
// are invisible; the environment is an allowlist; /proc shows only the
// command's own processes.
func TestHiddenPathsEnvironmentAndProcessTable(t *testing.T) {
	t.Setenv("RALPH_ADVERSARIAL_SECRET", Canary)
	j := New(t)
	res := j.Run("cat " + filepath.Join(j.Other, "secret") + " " + filepath.Join(j.Session, "transcript") + " " + filepath.Join(j.Home, ".netrc") +
		" 2>&1; env; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null; echo pids $(ls -d /proc/[0-9]* | wc -l) end")
	NoCanary(t, res.Output)
	// bwrap's pid 1, bash and the ls pipeline: a handful, never the host's.
	f := strings.Fields(res.Output[strings.LastIndex(res.Output, "pids "):])
	if n, err := strconv.Atoi(f[1]); err != nil || n > 10 {
		t.Errorf("the command sees %s processes", f[1])
	}
}

// Section 13: every process a command starts, detached or not, is gone
// when the call returns.
func TestDetachedProcessesEndWithTheCall(t *testing.T) {
	j := New(t)
	j.Run("setsid sleep 987 >/dev/null 2>&1 < /dev/null & nohup sleep 986 >/dev/null 2>&1 & echo started")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && (strings.Contains(string(cmdline), "sleep\x00987") || strings.Contains(string(cmdline), "sleep\x00986")) {
			t.Errorf("process %s outlived its call: %q", e.Name(), cmdline)
		}
	}
}

// Section 20: the private /tmp is bounded by RALPH_SANDBOX_TMP_MB; nothing
// outside the workspace, /tmp and the private HOME is writable.
func TestTmpIsBoundedAndTheSystemReadOnly(t *testing.T) {
	j := New(t, func(c *sandbox.Config) { c.TmpMB = 8 })
	res := j.Run("dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>&1; for p in /etc/x /usr/x /var/tmp/x /sys/x /dev/x; do touch $p 2>/dev/null && echo WROTE $p; done; echo end")
	if !strings.Contains(res.Output, "No space left on device") {
		t.Errorf("16 MB went into an 8 MB /tmp:\n%s", res.Output)
	}
	if strings.Contains(res.Output, "WROTE") {
		t.Errorf("a write outside the workspace succeeded:\n%s", res.Output)
	}
}

// Section 20: cloud metadata and private addresses are refused by the proxy.
func TestProxyRefusesMetadataAndPrivateAddresses(t *testing.T) {
	j := New(t)
	res := j.Run(curlCode("http://169.254.169.254/latest/meta-data/") + "\n" + curlCode("http://10.0.0.1/") + "\n" + curlCode("http://[fd00::1]/"))
	for _, line := range strings.Fields(res.Output) {
		if !strings.HasSuffix(line, "=403") {
			t.Errorf("not refused: %s\n%s", line, res.Output)
		}
	}
}
