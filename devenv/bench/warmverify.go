package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/internal/toolcache"
)

// WarmVerifyConfig sizes the warm-verifies benchmark.
type WarmVerifyConfig struct {
	Repo    string // a Go module with dependencies to clone (this project's repository)
	Merges  int    // merges measured after the cold one
	Command string // the verify command
	// File is changed by each merge (a comment appended), so every merge
	// rebuilds and retests what depends on it, as a real merge does.
	File string
}

// DefaultWarmVerifyCommand is SPEC 41's example: vet the whole module (its
// dependencies, the Temporal SDK among them, fetched through the sandbox's
// proxy on the cold merge) and test two of its packages. A narrower vet made
// a sub-second command whose fixed cost (the jail, the cache copy) was
// most of what it measured.
const DefaultWarmVerifyCommand = "go vet ./... && go test ./report/... ./internal/tasklist/..."

// WarmVerify measures a campaign's merge verify with warm tool caches: the
// merge verify's own path (a workspace WithToolCache on the campaign's line,
// ExecFreshHome under real bubblewrap with the proxy network, its copy
// committed as a landed merge's is) on a clone of Repo at the merge
// scratch's fixed path, each merge beside the same command on the host with
// its own warm caches, on a second clone at the same commit.
func (h *Harness) WarmVerify(ctx context.Context, cfg WarmVerifyConfig) (Section, error) {
	sec := Section{
		Title: "Warm verifies: a merge verify with the line's tool caches",
		Intro: fmt.Sprintf("A clone of this repository (a real Go module with dependencies) as a campaign's merge scratch; each merge appends "+
			"a comment to `%s` and runs `%s` the way `MergeTask` does (real bubblewrap as uid 65534, proxy network, a fresh home, "+
			"the tool caches a copy of the campaign line's, committed when the merge lands), beside the same command on the host "+
			"in a second clone with the host's own warm caches. Merge 0 is cold on both sides (it fills the line and the host's caches).",
			cfg.File, cfg.Command),
	}
	base, err := os.MkdirTemp("", "ralph-warmverify-")
	if err != nil {
		return sec, err
	}
	defer toolcache.RemoveAll(base)
	root, session := filepath.Join(base, "workspaces"), filepath.Join(base, "session")
	jailDir := filepath.Join(root, "campaigns", "bench", "merge")
	hostDir, hostCache := filepath.Join(base, "host"), filepath.Join(base, "host-cache")
	for _, d := range []string{filepath.Dir(jailDir), session, hostCache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return sec, err
		}
	}
	for _, d := range []string{jailDir, hostDir} {
		if out, err := exec.CommandContext(ctx, "git", "clone", "-q", "--no-hardlinks", cfg.Repo, d).CombinedOutput(); err != nil {
			return sec, fmt.Errorf("clone %s: %v: %s", cfg.Repo, err, out)
		}
	}
	scfg := sandbox.DefaultConfig()
	scfg.Mode = sandbox.ModeBwrap
	scfg.Mirrors, _ = netproxy.Mirrors(os.Environ())
	sb, err := sandbox.New(ctx, scfg, sandbox.Paths{WorkspaceRoot: root, SessionDir: session, HomesDir: filepath.Join(session, "homes"), Environ: os.Environ()})
	if err != nil {
		return sec, err
	}
	line := toolcache.CampaignLine("bench")
	hostEnv := append(os.Environ(), toolcache.Env(hostCache)...)
	tbl := Table{Header: []string{"merge", "jail verify s", "of it the cache copy ms", "line files", "commit ms", "host warm s", "jail / host"}}
	var ratios []float64
	for i := 0; i <= cfg.Merges; i++ {
		if i > 0 {
			for _, d := range []string{jailDir, hostDir} {
				if err := appendLine(filepath.Join(d, cfg.File), fmt.Sprintf("\n// merge %d\n", i)); err != nil {
					return sec, err
				}
			}
		}
		jail, copyMs, files, commitMs, err := h.jailVerify(ctx, sb, jailDir, line, cfg.Command)
		if err != nil {
			return sec, err
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, "bash", "-c", cfg.Command)
		cmd.Dir, cmd.Env = hostDir, hostEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			return sec, fmt.Errorf("host verify, merge %d: %v: %s", i, err, out)
		}
		host := time.Since(start)
		ratio := jail.Seconds() / host.Seconds()
		if i > 0 {
			ratios = append(ratios, ratio)
		}
		tbl.Add(fmt.Sprint(i), fmt.Sprintf("%.2f", jail.Seconds()), fmt.Sprint(copyMs), fmt.Sprint(files), fmt.Sprint(commitMs),
			fmt.Sprintf("%.2f", host.Seconds()), fmt.Sprintf("%.2f", ratio))
	}
	sec.Tables = append(sec.Tables, tbl)
	sec.Goals = append(sec.Goals, warmGoalOf(ratios))
	sec.Notes = append(sec.Notes, "a verify's tool cache copy: "+sb.ToolCaches().Kind())
	return sec, nil
}

// warmGoal is SPEC 41's goal: each warm merge verify at most 1.3× the same
// command run warm on the host.
const warmGoal = 1.3

// warmGoalOf judges the goal from the warm merges' jail / host ratios: every
// one of them must be within it.
func warmGoalOf(ratios []float64) Goal {
	g := Goal{What: fmt.Sprintf("each warm merge verify in the jail at most %.1f× the same command warm on the host", warmGoal)}
	if len(ratios) > 0 {
		within := 0
		for _, r := range ratios {
			if r <= warmGoal {
				within++
			}
		}
		g.Measured = fmt.Sprintf("%d warm merges: ratio p50 %.2f, max %.2f; %d of %d within", len(ratios), median(ratios), maxOf(ratios), within, len(ratios))
		g.Met = within == len(ratios)
	}
	return g
}

// jailVerify runs one merge verify in the sandbox and commits its copy
// (the merge landed); it returns its time, the copy's share and the files
// the line held before.
func (h *Harness) jailVerify(ctx context.Context, sb *sandbox.Sandbox, dir, line, command string) (verify time.Duration, copyMs, files, commitMs int64, err error) {
	ws, err := tools.OpenWorkspace(dir, tools.Limits{}, tools.WithSandbox(sb), tools.WithToolCache(line))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer ws.Close()
	res, err := ws.ExecFreshHome(ctx, command, 30*time.Minute, 1<<16)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if res.ExitCode != 0 {
		res.ToolCache.Remove()
		return 0, 0, 0, 0, fmt.Errorf("the verify failed in the jail (exit %d): %s", res.ExitCode, tail(res.Output, 2000))
	}
	started := time.Now()
	if _, err := res.ToolCache.Commit(); err != nil {
		return 0, 0, 0, 0, err
	}
	return res.Duration, res.ToolCache.Took.Milliseconds(), res.ToolCache.From.Files, time.Since(started).Milliseconds(), nil
}

func appendLine(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
