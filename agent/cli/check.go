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
	d, ok := Lookup(agent)
	if !ok {
		return Found{}, fmt.Errorf("agent %q: no such CLI provider (one of %s)", agent, strings.Join(Kinds(), ", "))
	}
	bin := d.Binary()
	if command != "" {
		bin = command
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return Found{}, fmt.Errorf("RALPH_AGENT=%s: the CLI %q is not installed or not on PATH (set RALPH_AGENT_COMMAND; docs/agents.md says where to install it): %v", agent, bin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return Found{}, fmt.Errorf("RALPH_AGENT=%s: %s --version failed: %v (%s)", agent, path, err, strings.TrimSpace(string(out)))
	}
	v, ok := parseVersion(string(out))
	if !ok {
		return Found{}, fmt.Errorf("RALPH_AGENT=%s: %s --version printed no version: %q", agent, path, strings.TrimSpace(string(out)))
	}
	if !d.Tested().Contains(v) {
		return Found{}, fmt.Errorf("RALPH_AGENT=%s: %s is version %s, outside the tested range %s (docs/reference.md)", agent, path, v, d.Tested())
	}
	return Found{Dialect: d, Path: path, Version: v}, nil
}
