package cli

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Range is a span of versions, From included, Below excluded.
type Range struct{ From, Below Version }

func (r Range) String() string { return fmt.Sprintf(">= %s, < %s", r.From, r.Below) }

// Contains reports whether v lies in r.
func (r Range) Contains(v Version) bool { return !v.less(r.From) && v.less(r.Below) }

// Version is a dotted major.minor.patch.
type Version [3]int

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

func (v Version) less(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

var versionPattern = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// parseVersion finds the first x.y.z in a --version output.
func parseVersion(out string) (Version, bool) {
	m := versionPattern.FindStringSubmatch(out)
	if m == nil {
		return Version{}, false
	}
	var v Version
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

// Found is a checked CLI: where it is and which version.
type Found struct {
	Dialect Dialect
	Path    string
	Version Version
}

// String is how the start line names it.
func (f Found) String() string {
	return fmt.Sprintf("%s %s (%s, tested %s)", f.Dialect.Name(), f.Version, f.Path, f.Dialect.Tested())
}

// Check finds the CLI of agent (a RALPH_AGENT value other than builtin)
// and checks its version against the tested range; the error names what is
// missing. command overrides the binary.
func Check(ctx context.Context, agent, command string) (Found, error) {
	return check(ctx, "RALPH_AGENT", agent, command)
}

// check is Check for the setting (RALPH_AGENT or RALPH_REVIEW_AGENT) that
// names agent, so that the error names what the operator set.
func check(ctx context.Context, setting, agent, command string) (Found, error) {
	d, ok := Lookup(agent)
	if !ok {
		return Found{}, fmt.Errorf("%s=%q: no such CLI provider (one of %s)", setting, agent, strings.Join(Kinds(), ", "))
	}
	bin := d.Binary()
	if command != "" {
		bin = command
	}
	named := setting + "=" + agent
	path, err := exec.LookPath(bin)
	if err != nil {
		hint := "set RALPH_AGENT_COMMAND"
		if setting != "RALPH_AGENT" {
			hint = "the reviewer's CLI is found on PATH"
		}
		return Found{}, fmt.Errorf("%s: the CLI %q is not installed or not on PATH (%s; docs/agents.md says where to install it): %v", named, bin, hint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return Found{}, fmt.Errorf("%s: %s --version failed: %v (%s)", named, path, err, strings.TrimSpace(string(out)))
	}
	v, ok := parseVersion(string(out))
	if !ok {
		return Found{}, fmt.Errorf("%s: %s --version printed no version: %q", named, path, strings.TrimSpace(string(out)))
	}
	if !d.Tested().Contains(v) {
		return Found{}, fmt.Errorf("%s: %s is version %s, outside the tested range %s (docs/reference.md)", named, path, v, d.Tested())
	}
	return Found{Dialect: d, Path: path, Version: v}, nil
}
