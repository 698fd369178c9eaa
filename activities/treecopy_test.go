package activities_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// tamper tries every in-place change of a tracked file a command can ask
// for, then deletes and replaces another one, and fails (the merge goes
// red: the same merge is verified again).
const tamper = `for try in 'printf x >> test.sh' ': > test.sh' 'chmod 666 test.sh' 'touch -d 2001-01-01 test.sh'; do
  if sh -c "$try" 2>/dev/null; then echo "allowed: $try"; else echo "refused: $try"; fi
done
rm build.sh && echo 'echo replaced' > build.sh && echo replaced build.sh
exit 1`

// A merge verify's tracked files are links to the worker's private copy of
// the line's tree (internal/gitws/treecopy.go): a command in the jail can
// change none of them in place, and what it deleted or replaced in its
// scratch is back, with the true bytes, in the next merge verify (SPEC 41
// within SPEC 38).
func TestMergeVerifyCannotPoisonTheTreeCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only a root worker links the tree copy (commands run as another uid)")
	}
	f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
	in, _ := gamedMerge(t, f, nil)
	in.VerifyCommand = tamper
	out := f.merge(in)
	if out.Outcome != activities.MergeRed || out.Verification == nil {
		t.Fatalf("want a red merge: %+v", out)
	}
	got := out.Verification.Output
	if strings.Contains(got, "allowed:") || strings.Count(got, "refused:") != 4 || !strings.Contains(got, "replaced build.sh") {
		t.Fatalf("the command changed a linked file in place, or could not replace one in its scratch:\n%s", got)
	}

	// On the host: the copy holds the true bytes, read-only and root's.
	copies, _ := filepath.Glob(filepath.Join(f.cfg.SessionDir, "*", "trees", "*", "tree", "test.sh"))
	if len(copies) != 1 {
		t.Fatalf("tree copies of test.sh: %v, want one", copies)
	}
	b, err := os.ReadFile(copies[0])
	fi, _ := os.Stat(copies[0])
	if err != nil || string(b) != realTest || fi.Mode().Perm()&0o222 != 0 || fi.ModTime().Year() == 2001 {
		t.Fatalf("the tree copy's test.sh: %q mode %v mtime %v err %v", b, fi.Mode(), fi.ModTime(), err)
	}

	// The next verify of the same merge sees the tree's own bytes.
	in.VerifyCommand = "sha256sum test.sh build.sh; exit 1"
	out = f.merge(in)
	for name, data := range map[string]string{"test.sh": realTest, "build.sh": rewritingBuild} {
		sum := sha256.Sum256([]byte(data))
		if !strings.Contains(out.Verification.Output, hex.EncodeToString(sum[:])+"  "+name) {
			t.Fatalf("the next verify does not see %s's true bytes:\n%s", name, out.Verification.Output)
		}
	}
}
