package adversarial

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-temporal/ralph/agent/tools"
)

// Finding 8: a directory made 0111 hid a swapped protected directory from
// the worker's snapshot walk, so the restore missed it and a stub test
// passed verification.
func TestProtectedWalkSeesDirectoriesACommandMadeUnreadable(t *testing.T) {
	j := New(t)
	if err := os.MkdirAll(filepath.Join(j.Dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(j.Dir, "tests", "a_test.sh"), "exit 1\n")
	p, err := tools.ParseProtected([]string{"tests/**"})
	if err != nil {
		t.Fatal(err)
	}
	ws := j.Open(j.Dir, tools.WithProtected(p))
	snap, err := ws.SnapshotProtected()
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, ws, "echo 'exit 0' > tests/a_test.sh 2>&1; mkdir tests/new && echo 'exit 0' > tests/new/b_test.sh; chmod 0111 tests/new tests; ls tests 2>&1")
	restored, err := ws.RestoreProtected(snap)
	if err != nil {
		t.Fatalf("the restore failed: %v\n%s", err, res.Output)
	}
	if got := ReadHost(t, filepath.Join(j.Dir, "tests", "a_test.sh")); got != "exit 1\n" {
		t.Errorf("the protected test is %q after the restore", got)
	}
	if _, err := os.Lstat(filepath.Join(j.Dir, "tests", "new")); err == nil {
		t.Errorf("the planted directory behind 0111 survived the restore (restored %v)", restored)
	}
	again, err := ws.SnapshotProtected()
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != snap.Len() {
		t.Errorf("the snapshot after the restore has %d entries, want %d", again.Len(), snap.Len())
	}
}
