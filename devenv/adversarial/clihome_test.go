package adversarial

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
)

// configPaths are, per CLI, its config directory and the config file the
// worker writes there for every attempt (opencode's directory is the home).
var configPaths = map[string]struct{ dir, file string }{
	"claude-code": {`"$CLAUDE_CONFIG_DIR"`, `"$CLAUDE_CONFIG_DIR/ralph-mcp.json"`},
	"codex":       {`"$CODEX_HOME"`, `"$CODEX_HOME/config.toml"`},
	"opencode":    {`"$HOME"`, `"$OPENCODE_CONFIG"`},
}

// Finding 1 (docs/security.md): between the attempt and its continuation the model
// replaced the CLI's home, its config directory or a config file by a link
// to a root-owned directory or file outside; the worker's continuation
// then chowned the directory to the sandbox uid and wrote into it, and
// truncated, rewrote and chowned the file. Now the links' targets keep
// their owner, mode and content.
func TestContinuationFollowsNoPlantedLink(t *testing.T) {
	for _, kind := range CLIKinds {
		for _, plant := range []string{"file", "directory"} {
			t.Run(kind+"/"+plant, func(t *testing.T) {
				j := New(t)
				dir, file := rootOwned(t, j)
				c := configPaths[kind]
				script := fmt.Sprintf(`rm -f %[1]s; ln -s %[2]s %[1]s && echo planted`, c.file, file)
				if plant == "directory" {
					// The home itself sits in a directory the sandbox cannot
					// write; the attempt tries anyway.
					script = fmt.Sprintf(`mv "$HOME" "$HOME.old" && ln -s %[2]s "$HOME"
mv %[1]s %[1]s.old; ln -s %[2]s %[1]s && ln -s %[2]s "$HOME/.config" && echo planted`, c.dir, dir)
				}
				round := j.RunCLI(kind, script, "echo continued", agent.Request{})
				out := strings.Join(round.Output, "\n")
				t.Logf("round: %+v err %v\n%s", round.Result.Report, round.Err, out)
				if !slices.Contains(round.Output, "planted") {
					t.Fatalf("the attempt could not plant its links:\n%s", out)
				}
				assertUntouched(t, dir, 0o700|os.ModeDir, "")
				assertUntouched(t, filepath.Join(dir, "secret"), 0o600, Canary)
				assertUntouched(t, file, 0o600, Canary)
				if names, _ := os.ReadDir(dir); len(names) != 1 {
					t.Errorf("the worker wrote into %s: %v", dir, names)
				}
			})
		}
	}
}

// rootOwned makes a root-owned 0700 directory holding a 0600 secret and a
// root-owned 0600 file, both outside everything the sandbox shows.
func rootOwned(t *testing.T, j *Jail) (dir, file string) {
	dir, file = filepath.Join(j.Base, "root-dir"), filepath.Join(j.Base, "root-file")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	WriteFile(t, filepath.Join(dir, "secret"), Canary)
	WriteFile(t, file, Canary)
	return dir, file
}

// assertUntouched fails unless path is root's, has mode and (for a file)
// holds text.
func assertUntouched(t *testing.T, path string, mode os.FileMode, text string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
		t.Errorf("%s is now owned by %d:%d", path, st.Uid, st.Gid)
	}
	if fi.Mode() != mode {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode(), mode)
	}
	if !fi.IsDir() {
		if got := ReadHost(t, path); got != text {
			t.Errorf("%s now holds %q", path, got)
		}
	}
}
