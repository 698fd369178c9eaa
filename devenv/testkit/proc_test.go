package testkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real shell writes its background process's pid: AwaitPID returns it
// once the line is whole.
func TestAwaitPIDReadsWhatTheShellWrote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "sleep 0.2; sleep 30 & echo $! > bg.pid; wait")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid, err := AwaitPID(context.Background(), pidWait, filepath.Join(dir, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !strings.HasPrefix(string(cmdline), "sleep\x0030") {
		t.Errorf("pid %d runs %q (%v), want the background sleep 30", pid, cmdline, err)
	}
}

func TestAwaitPIDRefusesWhatIsNoPID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"partial.pid": "123", "junk.pid": "abc\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{
		"partial.pid": "never appeared",
		"junk.pid":    `holds "abc\n", not a pid`,
		"absent.pid":  "never appeared",
	} {
		_, err := AwaitPID(context.Background(), 50*time.Millisecond, filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, want)
		}
	}
}
