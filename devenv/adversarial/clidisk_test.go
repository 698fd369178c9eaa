package adversarial

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Findings 6 and 7 (docs/security.md): the CLI's home was outside every disk bound
// (200 MB written there survived and starved the next run), and no bound
// counted inodes (empty files filled the file system). Now an attempt past
// RALPH_AGENT_HOME_MAX_MB or RALPH_WORKSPACE_MAX_FILES is killed, gets no
// continuation, and its home is gone when the round returns.
func TestCLIHomeCountsTowardTheDiskBounds(t *testing.T) {
	for _, c := range []struct {
		name, fill, limit string
		adjust            func(*sandbox.Config)
	}{
		{"megabytes", `head -c 40000000 /dev/urandom > "$HOME/fill"`, "RALPH_AGENT_HOME_MAX_MB",
			func(c *sandbox.Config) { c.AgentHomeMaxMB = 10 }},
		{"files", `mkdir "$HOME/many" && cd "$HOME/many" && seq 3000 | xargs touch`, "RALPH_WORKSPACE_MAX_FILES",
			func(c *sandbox.Config) { c.WorkspaceMaxFiles = 1000 }},
	} {
		for _, kind := range CLIKinds {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				j := New(t, c.adjust)
				attempt := fmt.Sprintf(`echo "$HOME" > home.txt; %s; sleep 60`, c.fill)
				round := j.RunCLI(kind, attempt, "touch continued", agent.Request{})
				out := strings.Join(round.Output, "\n")
				if _, err := os.Stat(filepath.Join(j.Dir, "home.txt")); err != nil {
					t.Fatalf("the attempt never ran: %v %v\n%s", err, round.Err, out)
				}
				if why := fmt.Sprintf("%+v %v", round.Result, round.Err); !strings.Contains(why, c.limit) {
					t.Errorf("the round did not end naming %s: %s\n%s", c.limit, why, out)
				}
				if _, err := os.Stat(filepath.Join(j.Dir, "continued")); err == nil {
					t.Error("the attempt past the bound got its continuation")
				}
				home := strings.TrimSpace(ReadHost(t, filepath.Join(j.Dir, "home.txt")))
				if _, err := os.Stat(home); !os.IsNotExist(err) {
					t.Errorf("the killed attempt's home %s is still there: %v", home, err)
				}
			})
		}
	}
}
