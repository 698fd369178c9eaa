package workerapp

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// The start line names the package registries the worker's environment
// names, from the configuration through the sandbox the activities build;
// a registry URL's password never shows, and RALPH_SANDBOX_ALLOW_HOSTS,
// when set, is all the line names.
func TestStartLineNamesPackageMirrors(t *testing.T) {
	dir := t.TempDir()
	line := func(env config.MapEnv) string {
		t.Helper()
		env["RALPH_SANDBOX"] = sandbox.ModeOff // no probe: the network text is what is under test
		cfg, err := config.LoadWorker([]string{"--model", "m", "--workspace-root", filepath.Join(dir, "ws"), "--session-dir", filepath.Join(dir, "sessions")}, env, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		acts, err := activities.New(cfg.Activities)
		if err != nil {
			t.Fatal(err)
		}
		sb := acts.Sandbox()
		return networkText(sandbox.NetProxy, sb.AllowHosts(), sb.Mirrors())
	}
	got := line(config.MapEnv{"GOPROXY": "https://ci:hunter2@athens.corp:3000/go,direct", "npm_config_registry": "http://10.1.2.3:4873/",
		"PIP_INDEX_URL": "https://pypi.corp/simple", "UV_DEFAULT_INDEX": "https://pypi.corp/simple"})
	want := "proxy (public addresses; package registries also at private and special-purpose addresses: athens.corp:3000 from GOPROXY, " +
		"sum.golang.org:443 from GOSUMDB default, 10.1.2.3:4873 from npm_config_registry, pypi.corp:443 from PIP_INDEX_URL)"
	if got != want || strings.Contains(got, "hunter2") {
		t.Errorf("start line network:\n got %q\nwant %q", got, want)
	}
	if got := line(config.MapEnv{}); !strings.Contains(got, "proxy.golang.org:443 from GOPROXY default, sum.golang.org:443 from GOSUMDB default, "+
		"registry.npmjs.org:443 from npm_config_registry default, pypi.org:443 from PIP_INDEX_URL default, files.pythonhosted.org:443 from PIP_INDEX_URL default)") {
		t.Errorf("start line network without registry variables: %q", got)
	}
	if got := line(config.MapEnv{"GOPROXY": "https://athens.corp", "RALPH_SANDBOX_ALLOW_HOSTS": "github.com,*.corp"}); got != "proxy (only github.com,*.corp)" {
		t.Errorf("start line network with RALPH_SANDBOX_ALLOW_HOSTS: %q", got)
	}
	if got := networkText(sandbox.NetOff, "", nil); got != "off (no network)" {
		t.Errorf("off: %q", got)
	}
}
