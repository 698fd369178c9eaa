package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// AllowedEnv lists the variables every command gets from the worker's
// environment; LC_* is allowed by prefix. Everything else is dropped: a
// credential rarely announces itself by name (DATABASE_URL, SSH_AUTH_SOCK,
// TEMPORAL_TLS_CLIENT_KEY_DATA), so only an allowlist is safe.
func AllowedEnv() []string { return []string{"PATH", "HOME", "USER", "LANG", "TERM", "TZ", "TMPDIR"} }

// allowedEnvPrefix admits the locale categories (LC_ALL, LC_CTYPE, ...).
const allowedEnvPrefix = "LC_"

// sandboxTmp is the private /tmp every sandboxed command gets; TMPDIR points
// at it because nothing else outside the workspace is writable.
const sandboxTmp = "/tmp"

// CommandEnv builds a command's environment from environ (the worker's):
// only the allowlisted names plus extra, with HOME replaced by home and
// TMPDIR by tmpdir when those are non-empty.
func CommandEnv(environ, extra []string, home, tmpdir string) []string {
	env := make([]string, 0, len(extra)+8)
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !allowedName(name, extra) {
			continue
		}
		if (name == "HOME" && home != "") || (name == "TMPDIR" && tmpdir != "") {
			continue
		}
		env = append(env, kv)
	}
	if home != "" {
		env = append(env, "HOME="+home)
	}
	if tmpdir != "" {
		env = append(env, "TMPDIR="+tmpdir)
	}
	return env
}

func allowedName(name string, extra []string) bool {
	return slices.Contains(AllowedEnv(), name) || strings.HasPrefix(name, allowedEnvPrefix) || slices.Contains(extra, name)
}

// checkEnvName refuses what cannot be a variable name, so a typo in
// RALPH_COMMAND_ENV is reported instead of silently passing nothing.
func checkEnvName(name string) error {
	if name == "" {
		return fmt.Errorf("RALPH_COMMAND_ENV: empty variable name")
	}
	for i, r := range name {
		ok := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("RALPH_COMMAND_ENV: %q is not an environment variable name", name)
		}
	}
	return nil
}
