package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-temporal/ralph/internal/names"
)

func TestCommandEnvIsAnAllowlist(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/worker", "USER=ralph", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "TZ=UTC", "TMPDIR=/var/tmp",
		"OPENAI_API_KEY=sk-canary", "TEMPORAL_API_KEY=tk-canary", "DATABASE_URL=postgres://u:pw@db/x",
		"TEMPORAL_TLS_CLIENT_KEY_DATA=-----BEGIN", "SSH_AUTH_SOCK=/tmp/agent", "GOFLAGS=-mod=mod", "noequals",
	}
	got := CommandEnv(environ, []string{"GOFLAGS"}, "/homes/ws", "/tmp")
	want := []string{"PATH=/usr/bin", "USER=ralph", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "TZ=UTC", "GOFLAGS=-mod=mod", "HOME=/homes/ws", "TMPDIR=/tmp"}
	if !slices.Equal(got, want) {
		t.Fatalf("CommandEnv =\n%q\nwant\n%q", got, want)
	}
	// Without a private home and tmp, the worker's are kept.
	got = CommandEnv(environ, nil, "", "")
	if !slices.Contains(got, "HOME=/home/worker") || !slices.Contains(got, "TMPDIR=/var/tmp") || slices.Contains(got, "GOFLAGS=-mod=mod") {
		t.Fatalf("CommandEnv without overrides = %q", got)
	}
}

// The package-registry variables reach commands unless their value holds a
// credential; RALPH_COMMAND_ENV (extra) still passes one it names.
func TestCommandEnvPassesPackageRegistries(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "GOPROXY=https://goproxy.corp.internal,direct", "GOSUMDB=sum.corp.internal+key https://sum.corp.internal",
		"GOPRIVATE=*.corp.internal", "GONOPROXY=git.corp.internal", "GONOSUMDB=*.corp.internal", "GOFLAGS=-mod=mod",
		"npm_config_registry=https://npm.corp.internal/", "PIP_INDEX_URL=https://ci:s3cret@pypi.corp.internal/simple",
		"PIP_EXTRA_INDEX_URL=https://pypi.org/simple https://pypi2.corp.internal/simple?token=tk-canary",
		"UV_INDEX=corp=https://uv.corp.internal/simple", "CARGO_REGISTRIES_CORP_INDEX=sparse+https://cargo.corp.internal/index/",
		"CARGO_REGISTRIES_GIT_INDEX=ssh://git@git.corp.internal/index", "NPM_CONFIG_USERCONFIG=/etc/npmrc",
	}
	got := CommandEnv(environ, nil, "", "")
	want := []string{"PATH=/usr/bin", "GOPROXY=https://goproxy.corp.internal,direct", "GOSUMDB=sum.corp.internal+key https://sum.corp.internal",
		"GOPRIVATE=*.corp.internal", "GONOPROXY=git.corp.internal", "GONOSUMDB=*.corp.internal",
		"npm_config_registry=https://npm.corp.internal/", "UV_INDEX=corp=https://uv.corp.internal/simple",
		"CARGO_REGISTRIES_CORP_INDEX=sparse+https://cargo.corp.internal/index/", "CARGO_REGISTRIES_GIT_INDEX=ssh://git@git.corp.internal/index"}
	if !slices.Equal(got, want) {
		t.Fatalf("CommandEnv =\n%q\nwant\n%q", got, want)
	}
	if w := WithheldRegistryEnv(environ, nil); !slices.Equal(w, []string{"PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"}) {
		t.Errorf("withheld = %q", w)
	}
	// Named in RALPH_COMMAND_ENV, a value with a credential is passed and no longer reported.
	got = CommandEnv(environ, []string{"PIP_INDEX_URL"}, "", "")
	if !slices.Contains(got, "PIP_INDEX_URL=https://ci:s3cret@pypi.corp.internal/simple") || slices.ContainsFunc(got, func(kv string) bool { return strings.Contains(kv, "tk-canary") }) {
		t.Errorf("with RALPH_COMMAND_ENV=PIP_INDEX_URL: %q", got)
	}
	if w := WithheldRegistryEnv(environ, []string{"PIP_INDEX_URL"}); !slices.Equal(w, []string{"PIP_EXTRA_INDEX_URL"}) {
		t.Errorf("withheld with RALPH_COMMAND_ENV = %q", w)
	}
}

// The start line names the registry variables commands get by default:
// not one withheld, nor one RALPH_COMMAND_ENV already names.
func TestRegistryEnvNamesWhatCommandsGet(t *testing.T) {
	f := newFixture(t)
	f.paths.Environ = append(f.paths.Environ, "GOPROXY=https://goproxy.corp.internal", "GONOSUMDB=*.corp.internal",
		"npm_config_registry=https://npm.corp.internal/", "PIP_INDEX_URL=https://ci:s3cret@pypi.corp.internal/simple")
	sb, err := New(context.Background(), Config{Mode: ModeOff, CommandEnv: []string{"npm_config_registry"}}, f.paths)
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.RegistryEnv(); !slices.Equal(got, []string{"GONOSUMDB", "GOPROXY"}) {
		t.Errorf("RegistryEnv = %q", got)
	}
	env := sb.Env(f.paths.Environ, "")
	for _, want := range []string{"GOPROXY=https://goproxy.corp.internal", "GONOSUMDB=*.corp.internal", "npm_config_registry=https://npm.corp.internal/"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %q", want, env)
		}
	}
	if slices.ContainsFunc(env, func(kv string) bool { return strings.Contains(kv, "s3cret") }) {
		t.Errorf("a password reached the command environment: %q", env)
	}
}

func TestHoldsCredential(t *testing.T) {
	for v, want := range map[string]bool{
		"https://goproxy.corp.internal":                        false,
		"https://proxy.golang.org,direct":                      false,
		"goproxy.corp.internal:8443/mod|off":                   false,
		"sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3": false,
		"https://pypi.corp/simple?format=json":                 false,
		"ssh://git@git.corp/index":                             false,
		"*.corp.internal,git.corp.internal/x":                  false,
		"https://user:pass@goproxy.corp":                       true,
		"https://proxy.golang.org,https://ci:pw@athens.corp":   true,
		"ci:pw@athens.corp|direct":                             true,
		"https://ghp_abcdef@goproxy.corp/":                     true,
		"ssh://git:pw@git.corp/index":                          true,
		"corp=https://u:p@uv.corp/simple":                      true,
		"https://pypi.corp/simple?token=abc":                   true,
		"https://npm.corp/?_authToken=abc#x":                   true,
		"https://a.corp https://b.corp/s?X-Amz-Signature=1":    true,
		"https://u:p@[fd00::1]:8443/":                          true,
	} {
		if got := HoldsCredential(v); got != want {
			t.Errorf("HoldsCredential(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestCheckEnvName(t *testing.T) {
	for _, ok := range []string{"GOFLAGS", "_X", "a1"} {
		if err := checkEnvName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1X", "A=B", "A B", "A-B"} {
		if err := checkEnvName(bad); err == nil || !strings.Contains(err.Error(), "RALPH_COMMAND_ENV") {
			t.Errorf("%q accepted or unclear: %v", bad, err)
		}
	}
}

type fixture struct {
	root, session, home, tls, share string
	paths                           Paths
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{
		root: filepath.Join(base, "workspaces"), session: filepath.Join(base, "sessions"),
		home: filepath.Join(base, "home"), share: filepath.Join(base, "home", "gomod"),
		tls: filepath.Join(base, "tls", "client.key"),
	}
	for _, d := range []string{f.root + "/ws", f.session, f.share, filepath.Dir(f.tls)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.tls, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.paths = Paths{WorkspaceRoot: f.root, SessionDir: f.session, HomesDir: filepath.Join(f.session, "homes"),
		Environ: []string{"HOME=" + f.home, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + f.tls, "TEMPORAL_TLS_CLIENT_KEY_DATA=-----BEGIN KEY"}}
	return f
}

func TestNewRefusesBadConfig(t *testing.T) {
	f := newFixture(t)
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"mode":           {Config{Mode: "on"}, `RALPH_SANDBOX must be auto, bwrap or off, got "on"`},
		"env name":       {Config{Mode: ModeOff, CommandEnv: []string{"BAD-NAME"}}, `"BAD-NAME" is not an environment variable name`},
		"share missing":  {Config{Mode: ModeOff, Share: []string{f.share + "-missing"}}, "does not exist"},
		"share hidden":   {Config{Mode: ModeOff, Share: []string{f.session}}, "is a path the sandbox hides"},
		"share relative": {Config{Mode: ModeOff, Share: []string{"cache"}}, "must be absolute"},
		"tool cache":     {Config{Mode: ModeOff, ToolCacheMB: -1}, "RALPH_TOOL_CACHE_MB must be a positive integer, got -1"},
	}
	for name, c := range cases {
		if _, err := New(context.Background(), c.cfg, f.paths); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

// bwrap mode on a machine without bubblewrap refuses, naming why; auto
// falls back and says why.
func TestModesWithoutBubblewrap(t *testing.T) {
	f := newFixture(t)
	t.Setenv("PATH", t.TempDir())
	_, err := New(context.Background(), Config{Mode: ModeBwrap}, f.paths)
	if err == nil || !strings.Contains(err.Error(), "RALPH_SANDBOX=bwrap but bubblewrap does not work here") || !strings.Contains(err.Error(), "not installed or not on PATH") {
		t.Fatalf("bwrap without bubblewrap: %v", err)
	}
	sb, err := New(context.Background(), Config{Mode: ModeAuto}, f.paths)
	if err != nil || sb.Mode() != ModeOff || !strings.Contains(sb.Fallback(), "not installed") {
		t.Fatalf("auto without bubblewrap: %v, mode %s, fallback %q", err, sb.Mode(), sb.Fallback())
	}
}

func TestHiddenPathsAndMountOrder(t *testing.T) {
	f := newFixture(t)
	sb, err := New(context.Background(), Config{Mode: ModeOff, Network: NetOff, Share: []string{f.share}, Hide: []string{"/nonexistent/skip"}}, f.paths)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{f.root, f.session, f.home, f.tls}
	for _, w := range want {
		if !slices.Contains(sb.Hidden(), w) {
			t.Errorf("%s not hidden: %v", w, sb.Hidden())
		}
	}
	if slices.Contains(sb.Hidden(), "/nonexistent/skip") {
		t.Error("a missing path is listed as hidden")
	}
	dir := filepath.Join(f.root, "ws")
	home, err := sb.Home(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(home) != f.paths.HomesDir || filepath.Base(home) != names.Flat("ws") {
		t.Errorf("private home %s", home)
	}
	a := strings.Join(sb.args(dir, home, "", 3, []string{"bash", "-c", "true"}, ReadOnly{}, nil), " ")
	for _, flag := range []string{"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent", "--new-session", "--cap-drop ALL", "--proc /proc", "--dev /dev", "--tmpfs /tmp", "--info-fd 3", "--chdir " + dir} {
		if !strings.Contains(a, flag) {
			t.Errorf("bwrap args lack %s: %s", flag, a)
		}
	}
	// Outermost first: the root is hidden before the workspace is bound
	// back, the home dir before the shared cache inside it, the session
	// directory before the private home in it; a file is hidden with /dev/null.
	order := []string{"--tmpfs " + f.root, "--bind " + dir + " " + dir}
	order2 := []string{"--tmpfs " + f.home, "--bind " + f.share + " " + f.share}
	order3 := []string{"--tmpfs " + f.session, "--bind " + home + " " + home}
	for _, o := range [][]string{order, order2, order3} {
		i, j := strings.Index(a, o[0]), strings.Index(a, o[1])
		if i < 0 || j < 0 || i > j {
			t.Errorf("%q must come before %q in %s", o[0], o[1], a)
		}
	}
	if !strings.Contains(a, "--ro-bind /dev/null "+f.tls) || !strings.Contains(a, "--remount-ro "+f.root) {
		t.Errorf("file hiding or read-only hidden dirs missing: %s", a)
	}
	if !strings.HasSuffix(a, "-- bash -c true") {
		t.Errorf("command not last: %s", a)
	}
	if strings.Contains(a, ToolCacheMount) {
		t.Errorf("a command without a tool cache sees one: %s", a)
	}
	// A tool cache copy is bound at the one fixed path, inside the private
	// /tmp (so after it); without bubblewrap the tools use the copy itself.
	cache := filepath.Join(f.paths.HomesDir, ".toolcache", "work", "copy-1")
	ca := strings.Join(sb.args(dir, home, cache, 3, []string{"true"}, ReadOnly{}, nil), " ")
	i, j := strings.Index(ca, "--tmpfs /tmp"), strings.Index(ca, "--bind "+cache+" "+ToolCacheMount)
	if i < 0 || j < i {
		t.Errorf("the tool cache is not bound at %s after the private /tmp: %s", ToolCacheMount, ca)
	}
	if env := strings.Join(sb.ToolCacheEnv(cache), " "); !strings.Contains(env, "GOCACHE="+cache+"/go-build") ||
		!strings.Contains(env, "GOMODCACHE="+cache+"/go-mod") {
		t.Errorf("tool cache env = %s", env)
	}
	if _, err := sb.Home(f.session); err == nil {
		t.Error("a home for a directory outside the workspace root")
	}
}

func TestInitPID(t *testing.T) {
	pid, err := InitPID(strings.NewReader("{\n    \"child-pid\": 4242,\n    \"pid-namespace\": 1\n}\n"))
	if err != nil || pid != 4242 {
		t.Fatalf("InitPID = %d, %v", pid, err)
	}
	for _, bad := range []string{"", "{}", "not json"} {
		if _, err := InitPID(strings.NewReader(bad)); err == nil {
			t.Errorf("InitPID(%q) accepted", bad)
		}
	}
}

func TestNilSandboxRunsDirectly(t *testing.T) {
	var sb *Sandbox
	if name, args := sb.Command("/w", "", 3, []string{"bash", "-c", "true"}); name != "bash" || strings.Join(args, " ") != "-c true" {
		t.Fatalf("nil Command = %s %v", name, args)
	}
	if home, err := sb.Home("/w"); home != "" || err != nil || sb.Mode() != ModeOff {
		t.Fatalf("nil Home = %q, %v", home, err)
	}
}

// bubblewrap is installed where the tests run: the probe must pass.
func TestBwrapModeProbes(t *testing.T) {
	f := newFixture(t)
	sb, err := New(context.Background(), Config{Mode: ModeBwrap, Network: NetHost}, f.paths)
	if err != nil {
		t.Fatalf("bwrap mode: %v", err)
	}
	if sb.Mode() != ModeBwrap || sb.Fallback() != "" {
		t.Fatalf("mode %s, fallback %q", sb.Mode(), sb.Fallback())
	}
}

// A worker whose home holds the workspace root and the session directory
// (the default .ralph/ under a home): the home is hidden, the workspace and
// the private home are mounted back inside it, and only they are reachable.
func TestBwrapNestedHiddenPaths(t *testing.T) {
	base := t.TempDir()
	root, session := filepath.Join(base, ".ralph", "workspaces"), filepath.Join(base, ".ralph", "sessions")
	for _, d := range []string{root + "/ws", root + "/other", session} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(base, ".netrc"), filepath.Join(root, "other", "secret")} {
		if err := os.WriteFile(f, []byte("nested-canary"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := New(context.Background(), Config{Mode: ModeBwrap, Network: NetHost}, Paths{
		WorkspaceRoot: root, SessionDir: session, HomesDir: filepath.Join(session, "homes"), Environ: []string{"HOME=" + base},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "ws")
	home, err := sb.Home(dir)
	if err != nil {
		t.Fatal(err)
	}
	script := "cat " + base + "/.netrc " + root + "/other/secret 2>&1; ls -A " + base + " " + root + "; echo ok > here; echo h > $HOME/h; touch " + base + "/escape 2>&1 || echo refused"
	cmd := jailed(t, sb, dir, home, script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "nested-canary") || strings.Contains(string(out), "\nother\n") || !strings.Contains(string(out), "refused") {
		t.Fatalf("hidden paths reachable:\n%s", out)
	}
	for _, p := range []string{filepath.Join(dir, "here"), filepath.Join(home, "h")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("write to the workspace or private home lost: %v", err)
		}
	}
}

// A bubblewrap that is installed but cannot work (user namespaces refused,
// a container's seccomp profile) is named by its own message.
func TestBrokenBubblewrapIsNamed(t *testing.T) {
	f := newFixture(t)
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, BwrapProgram), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	_, err := New(context.Background(), Config{Mode: ModeBwrap}, f.paths)
	if err == nil || !strings.Contains(err.Error(), "setting up uid map: Permission denied") {
		t.Fatalf("bwrap mode with a broken bubblewrap: %v", err)
	}
	sb, err := New(context.Background(), Config{Mode: ModeAuto}, f.paths)
	if err != nil || sb.Mode() != ModeOff || !strings.Contains(sb.Fallback(), "uid map") {
		t.Fatalf("auto with a broken bubblewrap: %v, mode %s, fallback %q", err, sb.Mode(), sb.Fallback())
	}
}

// Finding 7: the worker's XDG directories, the whole directory of the
// encryption key and a local run's state directory (hidden through
// RALPH_SANDBOX_HIDE, with the workspace inside it) are invisible to a
// command; the workspace and private home still work.
func TestBwrapHidesXDGKeyDirAndState(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, ".ralph")
	root, session := filepath.Join(state, "workspaces"), filepath.Join(state, "sessions")
	xdg := map[string]string{}
	for _, name := range xdgVars {
		xdg[name] = filepath.Join(base, strings.ToLower(name))
	}
	keyDir := filepath.Join(base, "keys")
	for _, d := range []string{root + "/ws", session, keyDir, xdg["XDG_CONFIG_HOME"], xdg["XDG_DATA_HOME"], xdg["XDG_STATE_HOME"], xdg["XDG_CACHE_HOME"]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secrets := []string{filepath.Join(state, "temporal.db"), filepath.Join(state, "logs"), filepath.Join(keyDir, "payload.key"), filepath.Join(keyDir, "payload.key.old")}
	for _, dir := range xdg {
		secrets = append(secrets, filepath.Join(dir, "credentials"))
	}
	for _, f := range secrets {
		if err := os.WriteFile(f, []byte("edge-canary"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	environ := []string{"HOME=" + filepath.Join(base, "home"), "RALPH_ENCRYPTION_KEY_FILE=" + filepath.Join(keyDir, "payload.key")}
	for name, dir := range xdg {
		environ = append(environ, name+"="+dir)
	}
	sb, err := New(context.Background(), Config{Mode: ModeBwrap, Network: NetHost, Hide: []string{state}}, Paths{
		WorkspaceRoot: root, SessionDir: session, HomesDir: filepath.Join(session, "homes"), Environ: environ,
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "ws")
	home, err := sb.Home(dir)
	if err != nil {
		t.Fatal(err)
	}
	script := "cat " + strings.Join(secrets, " ") + " 2>&1; ls -A " + state + " " + keyDir + "; echo ok > here && echo workspace-ok"
	cmd := jailed(t, sb, dir, home, script)
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "edge-canary") || strings.Contains(string(out), "\ntemporal.db\n") || strings.Contains(string(out), "\npayload.key") {
		t.Fatalf("a hidden path is reachable:\n%s", out)
	}
	if !strings.Contains(string(out), "workspace-ok") {
		t.Fatalf("the workspace inside the hidden state directory is not usable:\n%s", out)
	}
}

// jailed is script run the way every command is started: the workspace
// given to the commands' uid, bwrap as that uid.
func jailed(t *testing.T, sb *Sandbox, dir, home, script string) *exec.Cmd {
	t.Helper()
	if err := sb.Own(dir); err != nil {
		t.Fatal(err)
	}
	name, args := sb.Command(dir, home, -1, []string{"bash", "-c", script})
	cmd := exec.Command(name, args...)
	cmd.Env = sb.Env(os.Environ(), home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: sb.Credential()}
	return cmd
}

// TestNewSweepsTheFreshHomesOfAKilledWorker: a fresh home whose lock
// nobody holds (its worker was killed mid-round) is removed when a sandbox
// starts on the same homes directory; a home in use stays.
func TestNewSweepsTheFreshHomesOfAKilledWorker(t *testing.T) {
	f := newFixture(t)
	sb, err := New(context.Background(), Config{Mode: ModeOff}, f.paths)
	if err != nil {
		t.Fatal(err)
	}
	inUse, remove, err := sb.FreshHome()
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	fresh := filepath.Join(f.paths.HomesDir, freshHomes)
	killed := filepath.Join(fresh, "home-killed")
	if err := os.MkdirAll(filepath.Join(killed, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(killed+homeLockSuffix, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Config{Mode: ModeOff}, f.paths); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(fresh)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{filepath.Base(inUse), filepath.Base(inUse) + homeLockSuffix}
	if !slices.Equal(left, want) {
		t.Errorf("fresh homes after a sandbox started: %v, want %v", left, want)
	}
}
