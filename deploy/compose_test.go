// Package deploy holds the docker-compose deployment. No Docker engine runs
// where the tests run, so this test keeps the file honest by reading it.
package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ralph-temporal/ralph/internal/devserver"
)

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
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
	Profiles        []string       `yaml:"profiles"`
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

// The server runs the same config files that scripts/cluster.sh tests.
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

// The dev server takes its dynamic config as flags (it cannot read the file);
// the values must be the very ones the cluster and compose deploy.
func TestDevServerUsesTheDeployedDynamicConfig(t *testing.T) {
	data, err := os.ReadFile("cluster/dynamicconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file map[string][]struct {
		Value any `yaml:"value"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("parse dynamicconfig.yaml: %v", err)
	}
	want := map[string]string{}
	for key, entries := range file {
		if len(entries) != 1 {
			t.Fatalf("%s has %d entries, want one unconstrained value", key, len(entries))
		}
		value, err := json.Marshal(entries[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		want[key] = string(value)
	}
	got := map[string]string{}
	for _, kv := range devserver.DynamicConfig() {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("dev server value %q is not KEY=VALUE", kv)
		}
		got[key] = value
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dev server dynamic config %v differs from deploy/cluster/dynamicconfig.yaml %v", got, want)
	}
	if want["history.transferProcessorMaxPollRPS"] != "1000" || want["matching.numTaskqueueReadPartitions"] != "1" {
		t.Fatalf("latency settings missing: %v", want)
	}
}
