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

// A merge verify's tracked files are lent from the worker's private copy
// of the scratch's last tree (internal/gitws/treecopy.go): what a command in
// the jail changes through a link, in place (append, truncate, chmod,
// touch), leaves the copy when the scratch is given back, and what it
// deleted or replaced in its scratch is back: the next merge verify sees
// the tree's true bytes (SPEC 41 within SPEC 38).
func TestMergeVerifyCannotPoisonTheTreeCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only a root worker lends tree copies (commands run as another uid)")
	}
	f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
	in, _ := gamedMerge(t, f, nil)
	in.VerifyCommand = tamper
	out := f.merge(in)
	if out.Outcome != activities.MergeRed || out.Verification == nil {
		t.Fatalf("want a red merge: %+v", out)
	}
	got := out.Verification.Output
	// As in a checkout of its own, the command may change its files.
	if strings.Contains(got, "refused:") || strings.Count(got, "allowed:") != 4 || !strings.Contains(got, "replaced build.sh") {
		t.Fatalf("the command could not change its scratch's files as in a checkout of its own:\n%s", got)
	}

	// On the host: the copy was lent (its build.sh is marked whole again)
	// and kept nothing the command changed: test.sh, changed through its
	// link, left the copy; build.sh, unlinked in the scratch (its ctime
	// moved too), is either gone or holds its own bytes.
	trees, _ := filepath.Glob(filepath.Join(f.cfg.SessionDir, "*", "trees", "*", "tree"))
	if len(trees) != 1 {
		t.Fatalf("tree copies: %v, want one", trees)
	}
	if _, err := os.Lstat(filepath.Join(trees[0], "test.sh")); !os.IsNotExist(err) {
		b, _ := os.ReadFile(filepath.Join(trees[0], "test.sh"))
		t.Fatalf("the tree copy kept the test.sh changed through its link: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(trees[0], "build.sh")); !os.IsNotExist(err) && (err != nil || string(b) != rewritingBuild) {
		t.Fatalf("the tree copy's build.sh: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(trees[0]), "ralph-tree")); err != nil {
		t.Fatalf("the copy was not given back: %v", err)
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
