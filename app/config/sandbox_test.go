package config

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

func TestSandboxNetworkSetting(t *testing.T) {
	w, err := LoadWorker(nil, MapEnv{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sb := w.Activities.Sandbox
	if sb.Network != sandbox.NetProxy || sb.TmpMB != 1024 || sb.MemoryMB != 4096 || sb.Pids != 1024 || len(sb.AllowHosts) != 0 || len(w.Warnings) != 0 {
		t.Fatalf("defaults: %+v warnings %v", sb, w.Warnings)
	}
	for _, c := range []struct{ value, mode string }{{"proxy", "proxy"}, {"off", "off"}, {"host", "host"}, {"true", "host"}, {"false", "off"}} {
		w, err := LoadWorker(nil, MapEnv{"RALPH_SANDBOX_NETWORK": c.value}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		if w.Activities.Sandbox.Network != c.mode {
			t.Errorf("%s read as %s, want %s", c.value, w.Activities.Sandbox.Network, c.mode)
		}
		warned := len(w.Warnings) == 1 && strings.Contains(w.Warnings[0], "RALPH_SANDBOX_NETWORK="+c.value+` is read as "`+c.mode+`"`) &&
			strings.Contains(w.Warnings[0], "proxy") && strings.Contains(w.Warnings[0], "off") && strings.Contains(w.Warnings[0], "host")
		if wantWarn := c.value != c.mode; warned != wantWarn {
			t.Errorf("%s: warnings %q", c.value, w.Warnings)
		}
	}
	w, err = LoadWorker([]string{"--sandbox-allow-hosts", "proxy.golang.org, *.npmjs.org,10.0.0.5:8080,"}, MapEnv{"RALPH_SANDBOX_TMP_MB": "64", "RALPH_SANDBOX_MEMORY_MB": "512", "RALPH_SANDBOX_PIDS": "99"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sb = w.Activities.Sandbox
	if !slices.Equal(sb.AllowHosts, []string{"proxy.golang.org", "*.npmjs.org", "10.0.0.5:8080"}) || sb.TmpMB != 64 || sb.MemoryMB != 512 || sb.Pids != 99 {
		t.Errorf("parsed: %+v", sb)
	}
	for env, want := range map[string]string{
		"RALPH_SANDBOX_NETWORK":     `RALPH_SANDBOX_NETWORK="open": must be one of proxy, off, host`,
		"RALPH_SANDBOX_ALLOW_HOSTS": `RALPH_SANDBOX_ALLOW_HOSTS: RALPH_SANDBOX_ALLOW_HOSTS entry "open": `,
		"RALPH_SANDBOX_TMP_MB":      "RALPH_SANDBOX_TMP_MB",
		"RALPH_SANDBOX_PIDS":        "RALPH_SANDBOX_PIDS",
	} {
		value := "open"
		if env == "RALPH_SANDBOX_ALLOW_HOSTS" {
			value = "good.example,open:99999"
			want = `RALPH_SANDBOX_ALLOW_HOSTS: RALPH_SANDBOX_ALLOW_HOSTS entry "open:99999": port "99999" must be a number from 1 to 65535`
		}
		if _, err := LoadWorker(nil, MapEnv{env: value}, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want %q", env, value, err, want)
		}
	}
}

// The package registries the environment names reach the sandbox's
// configuration; a value that names none is a start-up warning that names
// the variable and never the value.
func TestPackageMirrorsFromEnvironment(t *testing.T) {
	w, err := LoadWorker(nil, MapEnv{"GOPROXY": "https://athens.corp:3000|direct", "GOSUMDB": "off", "NPM_CONFIG_REGISTRY": "https://user:s3cret@",
		"PIP_INDEX_URL": "/srv/simple", "UV_INDEX_URL": "https://uv.corp"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range w.Activities.Sandbox.Mirrors {
		got = append(got, m.String()+" "+m.From)
	}
	if !slices.Equal(got, []string{"athens.corp:3000 GOPROXY", "uv.corp:443 UV_INDEX_URL"}) {
		t.Errorf("mirrors = %q", got)
	}
	if len(w.Warnings) != 2 || !strings.HasPrefix(w.Warnings[0], "NPM_CONFIG_REGISTRY: not an http(s) URL") ||
		!strings.HasPrefix(w.Warnings[1], "NPM_CONFIG_REGISTRY holds a credential") || strings.Contains(strings.Join(w.Warnings, "\n"), "s3cret") {
		t.Errorf("warnings = %q", w.Warnings)
	}
}

// Commands get the registry variables of the worker's environment; one whose
// value holds a password is withheld and named, never shown, in a warning,
// unless RALPH_COMMAND_ENV lists it.
func TestRegistryVariablesReachCommands(t *testing.T) {
	env := MapEnv{"GOPROXY": "https://goproxy.corp.internal", "GONOSUMDB": "*.corp.internal",
		"PIP_INDEX_URL": "https://ci:s3cret@pypi.corp.internal/simple"}
	w, err := LoadWorker(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := sandbox.CommandEnv(env.Environ(), w.Activities.Sandbox.CommandEnv, "", "")
	if !slices.Equal(got, []string{"GONOSUMDB=*.corp.internal", "GOPROXY=https://goproxy.corp.internal"}) {
		t.Errorf("command environment = %q", got)
	}
	if len(w.Warnings) != 1 || !strings.HasPrefix(w.Warnings[0], "PIP_INDEX_URL holds a credential") || strings.Contains(w.Warnings[0], "s3cret") {
		t.Errorf("warnings = %q", w.Warnings)
	}
	env["RALPH_COMMAND_ENV"] = "PIP_INDEX_URL"
	if w, err = LoadWorker(nil, env, io.Discard); err != nil || len(w.Warnings) != 0 {
		t.Fatalf("with RALPH_COMMAND_ENV=PIP_INDEX_URL: %v, warnings %q", err, w.Warnings)
	}
	if got := sandbox.CommandEnv(env.Environ(), w.Activities.Sandbox.CommandEnv, "", ""); !slices.Contains(got, "PIP_INDEX_URL="+env["PIP_INDEX_URL"]) {
		t.Errorf("with RALPH_COMMAND_ENV=PIP_INDEX_URL: %q", got)
	}
}
