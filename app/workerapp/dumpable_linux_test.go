//go:build linux

package workerapp

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const dumpableHelperEnv = "RALPH_WORKERAPP_DUMPABLE_HELPER"

// TestDumpableHelper is not a test on its own: it reports PR_GET_DUMPABLE
// before and after makeNonDumpable in a process of its own.
func TestDumpableHelper(t *testing.T) {
	if os.Getenv(dumpableHelperEnv) == "" {
		t.Skip("helper process only")
	}
	before, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err := makeNonDumpable(); err != nil {
		t.Fatal(err)
	}
	after, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("dumpable %d -> %d\n", before, after)
}

func TestMakeNonDumpable(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestDumpableHelper$", "-test.v")
	cmd.Env = append(os.Environ(), dumpableHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "dumpable 1 -> 0\n") {
		t.Fatalf("the worker process stays dumpable:\n%s", out)
	}
}
