// Package deploy holds the docker-compose deployment. No Docker engine runs
// where the tests run, so this test keeps the file honest by reading it.
package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	deploycluster "github.com/ralph-temporal/ralph/deploy/cluster"

	"gopkg.in/yaml.v3"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
)

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Networks map[string]*struct {
		Internal bool `yaml:"internal"`
	} `yaml:"networks"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       map[string]string `yaml:"build"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Entrypoint      []string       `yaml:"entrypoint"`
	Healthcheck     map[string]any `yaml:"healthcheck"`
	Ports           []string       `yaml:"ports"`
	Restart         string         `yaml:"restart"`
	StopGracePeriod string         `yaml:"stop_grace_period"`
	Init            bool           `yaml:"init"`
	SecurityOpt     []string       `yaml:"security_opt"`
	Profiles        []string       `yaml:"profiles"`
	Networks        []string       `yaml:"networks"`
	NetworkMode     string         `yaml:"network_mode"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("parse docker-compose.yml: %v", err)
	}
	return c
}

// pinned matches image:tag where the tag is a version (v optional), never latest.
var pinned = regexp.MustCompile(`^[a-z0-9./-]+:v?[0-9]+(\.[0-9]+)+[A-Za-z0-9.-]*$`)

func TestComposeServicesAndPins(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"postgresql", "temporal-schema", "temporal", "temporal-namespace", "temporal-ui", "ralph-worker"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("service %q is missing", name)
		}
	}
	for name, svc := range c.Services {
		if svc.Build != nil {
			if _, err := os.Stat(filepath.Join(svc.Build["context"], svc.Build["dockerfile"])); err != nil {
				t.Errorf("service %s builds from a missing Dockerfile: %v", name, err)
			}
			continue
		}
		if !pinned.MatchString(svc.Image) {
			t.Errorf("service %s image %q is not pinned to a version", name, svc.Image)
		}
	}
}

func TestComposeDependencyOrder(t *testing.T) {
	c := loadCompose(t)
	want := map[string]map[string]string{
		"temporal-schema":    {"postgresql": "service_healthy"},
		"temporal":           {"temporal-schema": "service_completed_successfully"},
		"temporal-namespace": {"temporal": "service_healthy"},
		"temporal-ui":        {"temporal": "service_healthy"},
		"ralph-worker":       {"temporal-namespace": "service_completed_successfully"},
	}
	for svc, deps := range want {
		for dep, cond := range deps {
			got, ok := c.Services[svc].DependsOn[dep]
			if !ok || got.Condition != cond {
				t.Errorf("%s depends on %s with %q, want %q", svc, dep, got.Condition, cond)
			}
			if cond == "service_healthy" && c.Services[dep].Healthcheck == nil {
				t.Errorf("%s waits for %s to be healthy but %s has no healthcheck", svc, dep, dep)
			}
		}
	}
}

// The server runs the same config files that devenv/temporalserver tests.
func TestComposeMountsTheTestedServerConfig(t *testing.T) {
	c := loadCompose(t)
	for _, svc := range c.Services {
		for _, v := range svc.Volumes {
			src := strings.SplitN(v, ":", 2)[0]
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("volume %q mounts a missing file: %v", v, err)
				}
			}
		}
	}
	server := c.Services["temporal"]
	mounts := strings.Join(server.Volumes, " ")
	for _, f := range []string{"./cluster/temporal-postgres.yaml", "./cluster/dynamicconfig.yaml"} {
		if !strings.Contains(mounts, f) {
			t.Errorf("temporal does not mount %s", f)
		}
	}
	if !strings.Contains(strings.Join(server.Entrypoint, " "), "--env temporal-postgres") {
		t.Errorf("temporal entrypoint %v does not select the tested config", server.Entrypoint)
	}
	if server.Environment["DYNAMIC_CONFIG_FILE_PATH"] != "/etc/temporal/config/dynamicconfig.yaml" {
		t.Errorf("DYNAMIC_CONFIG_FILE_PATH = %q", server.Environment["DYNAMIC_CONFIG_FILE_PATH"])
	}
}

// A rebuilt worker replaces the old one (one build at a time), so it must
// become current and take the running runs: otherwise `docker compose up -d
// --build` strands old runs on a build with no pollers and new ones on a
// current version without workers.
func TestComposeUpgradeNeverStrandsARun(t *testing.T) {
	c := loadCompose(t)
	want := map[string]string{"RALPH_SET_CURRENT": "always", "RALPH_VERSIONING_BEHAVIOR": "auto-upgrade"}
	for _, name := range []string{"ralph-worker", "ralph-worker-remote"} {
		env := c.Services[name].Environment
		got := map[string]string{"RALPH_SET_CURRENT": env["RALPH_SET_CURRENT"], "RALPH_VERSIONING_BEHAVIOR": env["RALPH_VERSIONING_BEHAVIOR"]}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
		if v := env["RALPH_VERSIONING"]; v != "" && v != "on" {
			t.Errorf("%s: RALPH_VERSIONING=%q", name, v)
		}
	}
}

func TestComposeWorkerSettings(t *testing.T) {
	c := loadCompose(t)
	w := c.Services["ralph-worker"]
	for _, key := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "RALPH_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "RALPH_WORKSPACE_ROOT", "RALPH_SESSION_DIR"} {
		if w.Environment[key] == "" {
			t.Errorf("ralph-worker lacks %s", key)
		}
	}
	if w.Environment["TEMPORAL_ADDRESS"] != "temporal:7233" {
		t.Errorf("worker TEMPORAL_ADDRESS = %q", w.Environment["TEMPORAL_ADDRESS"])
	}
	if !strings.HasPrefix(w.Environment["RALPH_WORKSPACE_ROOT"], "/data/") || !strings.HasPrefix(w.Environment["RALPH_SESSION_DIR"], "/data/") {
		t.Errorf("workspaces and sessions must live on the shared volume: %v", w.Environment)
	}
	if len(w.Volumes) != 2 || w.Volumes[0] != "ralph-data:/data" || w.Volumes[1] != keysMount {
		t.Errorf("worker volumes = %v, want the shared ralph-data volume and the read-only keys", w.Volumes)
	}
	if _, ok := c.Volumes["ralph-data"]; !ok {
		t.Error("volume ralph-data is not declared")
	}
	example, err := os.ReadFile(".env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"RALPH_MODEL=", "OPENAI_API_KEY=", "OPENAI_BASE_URL="} {
		if !strings.Contains(string(example), key) {
			t.Errorf(".env.example lacks %s", key)
		}
	}
}

// The dynamic config every server runs (the dev server reads the same file
// through temporalserver.DynamicConfig): the latency settings, and the keys
// Temporal can scope scoped to Ralph's namespace, so a shared cluster's other
// namespaces keep their settings.
func TestDynamicConfigLatencyAndScope(t *testing.T) {
	var file map[string][]struct {
		Value       any               `yaml:"value"`
		Constraints map[string]string `yaml:"constraints"`
	}
	if err := yaml.Unmarshal([]byte(deploycluster.DynamicConfig), &file); err != nil {
		t.Fatalf("parse dynamicconfig.yaml: %v", err)
	}
	for key, entries := range file {
		scoped := strings.HasPrefix(key, "matching.") || strings.HasPrefix(key, "system.")
		if ns := entries[0].Constraints["namespace"]; scoped && ns != "default" || !scoped && len(entries[0].Constraints) > 0 {
			t.Errorf("%s has constraints %v: per-queue and per-namespace keys are scoped to namespace default, cluster-wide ones have none", key, entries[0].Constraints)
		}
	}
	dev := temporalserver.DynamicConfig()
	for _, want := range []string{"history.transferProcessorMaxPollRPS=1000", "matching.numTaskqueueReadPartitions=1", "system.enableActivityEagerExecution=true"} {
		if !slices.Contains(dev, want) {
			t.Errorf("the dev server's dynamic config %v lacks %s", dev, want)
		}
	}
	if len(dev) != len(file) {
		t.Errorf("the dev server takes %d values of the file's %d keys", len(dev), len(file))
	}
}

// The worker reaps what its commands leave (init) and can run bubblewrap
// inside the container: without these security options the sandbox probe
// fails, and the worker refuses to start in its default bwrap mode.
func TestComposeWorkerCanSandbox(t *testing.T) {
	c := loadCompose(t)
	w := c.Services["ralph-worker"]
	if !w.Init {
		t.Error("ralph-worker lacks init: true")
	}
	for _, opt := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} {
		if !slices.Contains(w.SecurityOpt, opt) {
			t.Errorf("ralph-worker security_opt lacks %s: %v", opt, w.SecurityOpt)
		}
	}
	if w.Environment["RALPH_SANDBOX"] != "${RALPH_SANDBOX:-bwrap}" {
		t.Errorf("RALPH_SANDBOX = %q, want bwrap unless the deployment says otherwise", w.Environment["RALPH_SANDBOX"])
	}
	for name, svc := range c.Services {
		// The remote workers run the model's commands too.
		if name != "ralph-worker" && name != "ralph-worker-remote" && (svc.Init || len(svc.SecurityOpt) > 0) {
			t.Errorf("%s loosened too: only the workers need the sandbox options", name)
		}
	}
}

// The image can do the job a round asks of it: the toolchains docs/operations.md
// advertises, bubblewrap, and a non-root user for unprivileged bubblewrap.
func TestDockerfileCarriesTheRoundToolchain(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	stages := strings.Split(df, "\nFROM ")
	runtime := stages[len(stages)-1]
	// The runtime stage starts from the Go image, which carries Go itself.
	if !strings.HasPrefix(runtime, "${GO_IMAGE}") || !strings.Contains(df, "ARG GO_IMAGE=golang:1.26-") {
		t.Errorf("the runtime stage does not start from the Go image:\n%s", runtime)
	}
	install := regexp.MustCompile(`apt-get install -y --no-install-recommends((?:[^\n]*\\\n)*[^\n]*)`).FindStringSubmatch(runtime)
	if install == nil {
		t.Fatal("the runtime stage installs no packages")
	}
	pkgs := strings.Fields(strings.NewReplacer("\\", " ", "&&", " ").Replace(install[1]))
	for _, p := range []string{"bubblewrap", "python3", "nodejs", "npm", "git", "make", "gcc", "bash"} {
		if !slices.Contains(pkgs, p) {
			t.Errorf("the runtime stage does not install %s (installs %v)", p, pkgs)
		}
	}
	// The worker is root; its commands run as RALPH_SANDBOX_UID (65534).
	if regexp.MustCompile(`(?m)^USER `).MatchString(runtime) || !strings.Contains(runtime, "RALPH_SANDBOX=bwrap") {
		t.Errorf("the worker must run as root (its commands as RALPH_SANDBOX_UID) with RALPH_SANDBOX=bwrap")
	}
}

// The opt-in agent CLIs (docs/agents.md): RALPH_AGENT_CLIS=1 installs the
// versions pinned in devenv/agentclis with scripts/install-agent-clis.sh,
// into a directory the sandbox uid (65534) can read and execute: not under
// a home, /tmp or the worker's data (the sandbox hides or replaces those),
// opened to every user, and on PATH.
func TestDockerfileInstallsTheAgentCLIsWhereTheSandboxCanRunThem(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := strings.Split(string(data), "\nFROM ")
	runtime := stages[len(stages)-1]
	for _, want := range []string{
		"\nARG RALPH_AGENT_CLIS=\n", // off unless asked for
		"\nCOPY devenv/agentclis/ /opt/ralph-src/devenv/agentclis/\n",
		"\nCOPY scripts/install-agent-clis.sh /opt/ralph-src/scripts/\n",
		"\nRUN if [ -n \"$RALPH_AGENT_CLIS\" ]; then /opt/ralph-src/scripts/install-agent-clis.sh; fi\n",
	} {
		if !strings.Contains(runtime, want) {
			t.Errorf("the runtime stage lacks %q", want)
		}
	}
	if strings.Contains(string(data), "RALPH_AGENTS_DIR") {
		t.Fatal("the Dockerfile moves the CLIs with RALPH_AGENTS_DIR: check the new place as below")
	}
	script, err := os.ReadFile("../scripts/install-agent-clis.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^dest="\$\{RALPH_AGENTS_DIR:-([^}]+)\}"$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("install-agent-clis.sh names no default directory")
	}
	dest := string(m[1])
	if dest != "/opt/ralph-agents" {
		t.Errorf("the CLIs go to %s, want /opt/ralph-agents (docs/agents.md)", dest)
	}
	for _, hidden := range []string{"/root", "/home", "/tmp", "/var/tmp", "/data"} {
		if dest == hidden || strings.HasPrefix(dest, hidden+"/") {
			t.Errorf("the CLIs go to %s, under %s, which the sandbox hides or replaces", dest, hidden)
		}
	}
	if !strings.Contains(string(script), `chmod -R a+rX "$dest"`) {
		t.Error("install-agent-clis.sh does not open the CLIs to every user (the sandbox uid 65534 runs them)")
	}
	if !strings.Contains(runtime, "\nENV PATH="+dest+"/node_modules/.bin:$PATH\n") {
		t.Errorf("the runtime stage does not put %s/node_modules/.bin on PATH", dest)
	}
}

// The git-remote profile: workers that share no storage, only a git server.
func TestComposeGitRemoteProfile(t *testing.T) {
	c := loadCompose(t)
	server, worker := c.Services["git-server"], c.Services["ralph-worker-remote"]
	for name, svc := range map[string]composeService{"git-server": server, "ralph-worker-remote": worker} {
		if !reflect.DeepEqual(svc.Profiles, []string{"git-remote"}) {
			t.Errorf("%s profiles = %v, want [git-remote]", name, svc.Profiles)
		}
	}
	for name, svc := range c.Services {
		if name != "git-server" && name != "ralph-worker-remote" && slices.Contains(svc.Profiles, "git-remote") {
			t.Errorf("%s is in the git-remote profile", name)
		}
	}
	if worker.Environment["RALPH_GIT"] != "remote" {
		t.Errorf("ralph-worker-remote RALPH_GIT = %q", worker.Environment["RALPH_GIT"])
	}
	remote := worker.Environment["RALPH_GIT_REMOTE"]
	m := regexp.MustCompile(`^\$\{RALPH_GIT_REMOTE:-git://git-server/([a-z.]+)\}$`).FindStringSubmatch(remote)
	if m == nil {
		t.Fatalf("RALPH_GIT_REMOTE = %q, want a default on git-server", remote)
	}
	entry := strings.Join(server.Entrypoint, " ")
	for _, want := range []string{"git init -q --bare /data/git/" + m[1], "--base-path=/data/git"} {
		if !strings.Contains(entry, want) {
			t.Errorf("git-server entrypoint %q lacks %q", entry, want)
		}
	}
	if len(worker.Volumes) != 0 {
		t.Errorf("ralph-worker-remote mounts %v; its replicas must share no storage", worker.Volumes)
	}
	if worker.DependsOn["git-server"].Condition != "service_healthy" || server.Healthcheck == nil {
		t.Error("ralph-worker-remote must wait for a healthy git-server")
	}
	if len(server.Volumes) != 1 || server.Volumes[0] != "git-data:/data" {
		t.Errorf("git-server volumes = %v", server.Volumes)
	}
	if _, ok := c.Volumes["git-data"]; !ok {
		t.Error("volume git-data is not declared")
	}
	for _, key := range []string{"TEMPORAL_ADDRESS", "RALPH_MODEL", "OPENAI_API_KEY", "RALPH_WORKSPACE_ROOT", "RALPH_SESSION_DIR"} {
		if worker.Environment[key] != c.Services["ralph-worker"].Environment[key] {
			t.Errorf("ralph-worker-remote %s = %q differs from ralph-worker's", key, worker.Environment[key])
		}
	}
}
