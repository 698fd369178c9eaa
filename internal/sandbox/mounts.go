package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// secretPathVars name worker variables whose values are files only the
// worker may read; every TEMPORAL_TLS_* variable that names a path counts too.
const (
	tlsVarPrefix         = "TEMPORAL_TLS_"
	temporalConfigVar    = "TEMPORAL_CONFIG_FILE"
	encryptionKeyFileVar = "RALPH_ENCRYPTION_KEY_FILE"
)

// xdgVars name the worker's own configuration, data, state and cache
// directories (credentials of gh, gcloud, docker ... live there when they
// are outside HOME).
var xdgVars = []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"}

// resolveMounts lists the existing paths to hide and the paths to share,
// absolute and symlink-free, so that bwrap mounts over what the names
// really lead to.
func resolveMounts(cfg Config, p Paths, root string) (hidden, share []string, err error) {
	candidates := []string{root, p.SessionDir}
	if home := envValue(p.Environ, "HOME"); home != "" {
		candidates = append(candidates, home)
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, home)
	}
	for _, kv := range p.Environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, tlsVarPrefix) || name == temporalConfigVar || slices.Contains(xdgVars, name):
			candidates = append(candidates, value)
		case name == encryptionKeyFileVar && value != "":
			// The whole directory: editors, rotations and backups leave
			// copies of a key beside it.
			candidates = append(candidates, value, filepath.Dir(value))
		}
	}
	candidates = append(candidates, cfg.Hide...)
	for _, c := range candidates {
		real, ok := existing(c)
		// Hiding "/" would hide the system itself (a HOME of "/" is common
		// for service users); the rest of the policy still applies.
		if ok && real != "/" && !slices.Contains(hidden, real) {
			hidden = append(hidden, real)
		}
	}
	// A path inside a hidden directory is hidden with it; mounting over it
	// as well would leave its name behind as a mount point.
	hidden = slices.DeleteFunc(slices.Clone(hidden), func(h string) bool {
		return slices.ContainsFunc(hidden, func(d string) bool { return d != h && isDir(d) && within(h, d) })
	})
	for _, c := range cfg.Share {
		if !filepath.IsAbs(c) {
			return nil, nil, fmt.Errorf("sandbox: RALPH_SANDBOX_SHARE path %q must be absolute", c)
		}
		real, ok := existing(c)
		if !ok {
			return nil, nil, fmt.Errorf("sandbox: RALPH_SANDBOX_SHARE path %q does not exist (create it first)", c)
		}
		if slices.Contains(hidden, real) {
			return nil, nil, fmt.Errorf("sandbox: RALPH_SANDBOX_SHARE path %q is a path the sandbox hides", c)
		}
		share = append(share, real)
	}
	return hidden, share, nil
}

// existing resolves path when it names something that exists. Values that
// are not paths (PEM data in TEMPORAL_TLS_*_DATA, "true") simply do not.
func existing(path string) (string, bool) {
	if path == "" || strings.ContainsAny(path, "\n\x00") {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", false
	}
	return real, true
}

func envValue(environ []string, name string) string {
	for _, kv := range slices.Backward(environ) {
		if n, v, ok := strings.Cut(kv, "="); ok && n == name {
			return v
		}
	}
	return ""
}

// maskedProc are the /proc files container runtimes mask: kernel memory,
// every key on the system, timer and scheduler internals, the SysRq trigger.
var maskedProc = []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/sysrq-trigger"}

// mount is one bwrap mount over dest.
type mount struct {
	dest string
	args []string
}

// args is the bwrap command line around argv. Mounts are applied outermost
// first so that a deeper one wins: the workspace is bound back inside the
// hidden workspace root, the private home inside the hidden session
// directory, a shared cache inside the hidden worker home.
func (s *Sandbox) args(dir, home, cache string, infoFD int, argv []string, ro ReadOnly, opts []string) []string {
	a := []string{
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		// bwrap runs as the commands' uid: its user namespace maps only that
		// uid and owns nothing of the host, and no nested one can be made.
		"--unshare-user", "--disable-userns",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
	}
	a = append(a, opts...)
	if s.network != NetHost {
		// proxy: the command's own namespace, left only through the proxy
		// (see Run); off: the same namespace without it.
		a = append(a, "--unshare-net")
	}
	// /tmp and /dev/shm are sized tmpfs (their pages belong to no process,
	// so only a size bounds them); /dev itself is made read-only below.
	size := fmt.Sprint(s.tmpBytes)
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--size", size, "--tmpfs", sandboxTmp, "--size", size, "--tmpfs", "/dev/shm")
	for _, p := range maskedProc {
		if _, err := os.Lstat(p); err == nil { // bwrap cannot mount over what does not exist
			a = append(a, "--ro-bind", os.DevNull, p)
		}
	}
	var ms []mount
	for _, h := range s.hidden {
		if isDir(h) {
			ms = append(ms, mount{h, []string{"--tmpfs", h}})
		} else {
			ms = append(ms, mount{h, []string{"--ro-bind", os.DevNull, h}})
		}
	}
	for _, p := range s.share {
		ms = append(ms, mount{p, []string{"--bind", p, p}})
	}
	if home != "" {
		ms = append(ms, mount{home, []string{"--bind", home, home}})
	}
	if cache != "" {
		// Always the same path: Go keys its build cache on GOMODCACHE's.
		ms = append(ms, mount{ToolCacheMount, []string{"--bind", cache, ToolCacheMount}})
	}
	if ro.Workspace {
		ms = append(ms, mount{dir, []string{"--ro-bind", dir, dir}})
	} else {
		ms = append(ms, mount{dir, []string{"--bind", dir, dir}})
	}
	for _, p := range ro.Paths {
		// Only what still lies in the workspace and exists: a protected file
		// the model replaced by a symlink must not pull another path in.
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
				ms = append(ms, mount{p, []string{"--ro-bind", p, p}})
			}
		}
	}
	if gitDir := filepath.Join(dir, ".git"); s.protectGit && isPlainDir(gitDir) {
		// History stays readable (git log, diff, show); config, hooks,
		// refs, objects and links under .git cannot change.
		ms = append(ms, mount{gitDir, []string{"--ro-bind", gitDir, gitDir}})
	}
	slices.SortStableFunc(ms, func(x, y mount) int { return depth(x.dest) - depth(y.dest) })
	for _, m := range ms {
		a = append(a, m.args...)
	}
	// A hidden directory is an empty tmpfs; it is made read-only last, once
	// the mounts inside it exist, so a write there fails instead of
	// vanishing with the sandbox.
	for _, h := range s.hidden {
		if isDir(h) {
			a = append(a, "--remount-ro", h)
		}
	}
	a = append(a, "--remount-ro", "/dev", "--chdir", dir)
	if infoFD >= 0 {
		a = append(a, "--info-fd", fmt.Sprint(infoFD))
	}
	return append(append(a, "--"), argv...)
}

func depth(path string) int {
	return strings.Count(filepath.Clean(path), string(filepath.Separator))
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir() || errors.Is(err, fs.ErrPermission)
}

// isPlainDir: a directory, not a link to one (the worker's git refuses a
// linked .git anyway; bwrap would mount what it leads to).
func isPlainDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// within reports whether path lies below dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}
