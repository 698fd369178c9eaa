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
	// The shell's child: between its fork and its exec it may still run sh.
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 || fields[1] != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("pid %d has stat %q, want a child of the shell %d", pid, stat, cmd.Process.Pid)
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
