package sandbox

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/ralph-temporal/ralph/internal/netproxy"
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

// goModuleVars go with GOPROXY and GOSUMDB: the module patterns fetched
// from their origin and kept out of the checksum database. Without them a
// private module served by the team's GOPROXY fails verification against
// the public sum.golang.org. GOFLAGS and GOINSECURE change how a build or
// fetch behaves, not where from, and stay with RALPH_COMMAND_ENV.
var goModuleVars = []string{"GOPRIVATE", "GONOPROXY", "GONOSUMDB"}

// RegistryEnv reports whether name is a package-registry variable commands
// get by default (docs/security.md#package-registries): the ones the
// proxy's mirrors come from (netproxy.RegistryVar) and goModuleVars.
func RegistryEnv(name string) bool {
	return netproxy.RegistryVar(name) || slices.Contains(goModuleVars, name)
}

// CommandEnv builds a command's environment from environ (the worker's):
// only the allowlisted names, the package-registry variables whose value
// holds no credential, and extra, with HOME replaced by home and TMPDIR by
// tmpdir when those are non-empty.
func CommandEnv(environ, extra []string, home, tmpdir string) []string {
	env := make([]string, 0, len(extra)+8)
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !allowedName(name, extra) && !(RegistryEnv(name) && !HoldsCredential(value)) {
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

// WithheldRegistryEnv names the package-registry variables of environ that
// CommandEnv leaves out because their value holds a credential (and extra
// does not list them): the start-up warning names them, never their value.
func WithheldRegistryEnv(environ, extra []string) []string {
	var names []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && RegistryEnv(name) && !allowedName(name, extra) && HoldsCredential(value) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// registryNames names the package-registry variables of environ that
// CommandEnv passes because they are registry variables (extra aside).
func registryNames(environ, extra []string) []string {
	var names []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && RegistryEnv(name) && !allowedName(name, extra) && !HoldsCredential(value) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// credentialKeys are query keys that carry a secret (?token=, ?auth=,
// ?api_key=, a presigned URL's signature), matched as substrings.
var credentialKeys = []string{"token", "pass", "secret", "auth", "key", "sig"}

// HoldsCredential reports whether a registry value has a URL with a user
// (user:password@, or a token as the user) or a query key that carries a
// secret. It reads every entry a registry list may hold (separated by
// spaces, ',' or '|'), with or without a scheme; what does not parse as a
// URL counts as a credential when its host part holds an '@'.
func HoldsCredential(value string) bool {
	for _, e := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\t' || r == '\n' }) {
		if userinfo(e) {
			return true
		}
		_, query, ok := strings.Cut(e, "?")
		if !ok {
			continue
		}
		query, _, _ = strings.Cut(query, "#")
		keys, _ := url.ParseQuery(query) // what parses is enough to name a key
		for k := range keys {
			if slices.ContainsFunc(credentialKeys, func(c string) bool { return strings.Contains(strings.ToLower(k), c) }) {
				return true
			}
		}
	}
	return false
}

// userinfo reports whether entry e has a URL user that may be a secret: a
// user:password, or any user of a non-ssh URL (a token is often sent as
// the user). ssh://git@host names an account, its key is elsewhere.
func userinfo(e string) bool {
	scheme, rest, ok := strings.Cut(e, "://")
	if !ok {
		scheme, rest = "", e
	}
	authority, _, _ := strings.Cut(rest, "/")
	authority, _, _ = strings.Cut(authority, "?")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return false
	}
	ssh := strings.EqualFold(scheme, "ssh") || strings.EqualFold(scheme, "git+ssh")
	return !ssh || strings.Contains(authority[:at], ":")
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
