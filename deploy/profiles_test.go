package deploy

import (
	"encoding/json"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// keysMount is where every service that needs the encryption key file finds it.
const keysMount = "./keys:/etc/ralph/keys:ro"

// The Prometheus names of Ralph's metrics (app/metrics exports the
// activities' names under these; its tests pin the mapping).
func ralphSeries() []string {
	return []string{"ralph_rounds_total", "ralph_tokens_total", "ralph_verifications_total", "ralph_round_duration_seconds_bucket"}
}

func TestComposeEncryptionProfile(t *testing.T) {
	c := loadCompose(t)
	w := c.Services["ralph-worker"]
	if v, ok := w.Environment["RALPH_ENCRYPTION_KEY_FILE"]; !ok || v != "${RALPH_ENCRYPTION_KEY_FILE:-}" {
		t.Errorf("worker RALPH_ENCRYPTION_KEY_FILE = %q, want it from deploy/.env, empty (off) by default", v)
	}
	cs, ok := c.Services["ralph-codec-server"]
	if !ok {
		t.Fatal("service ralph-codec-server is missing")
	}
	if !slices.Equal(cs.Profiles, []string{"encryption"}) {
		t.Errorf("ralph-codec-server profiles = %v, want [encryption] (optional)", cs.Profiles)
	}
	if !slices.Contains(cs.Volumes, keysMount) || !strings.HasPrefix(cs.Environment["RALPH_ENCRYPTION_KEY_FILE"], "${RALPH_ENCRYPTION_KEY_FILE") {
		t.Errorf("ralph-codec-server must read the workers' key file: volumes %v env %v", cs.Volumes, cs.Environment)
	}
	entry := strings.Join(cs.Entrypoint, " ")
	if !strings.HasPrefix(entry, "/usr/local/bin/ralph-codec-server --listen ") {
		t.Errorf("ralph-codec-server entrypoint = %q", entry)
	}
	// The UI's origin is the one the browser calls the codec server from.
	ui := c.Services["temporal-ui"]
	if i := slices.Index(cs.Entrypoint, "--origins"); i < 0 || i+1 >= len(cs.Entrypoint) || cs.Entrypoint[i+1] != ui.Environment["TEMPORAL_CORS_ORIGINS"] {
		t.Errorf("codec server --origins does not allow the UI origin %q: %v", ui.Environment["TEMPORAL_CORS_ORIGINS"], cs.Entrypoint)
	}

	if _, ok := ui.Environment["TEMPORAL_CODEC_ENDPOINT"]; !ok {
		t.Error("temporal-ui lacks TEMPORAL_CODEC_ENDPOINT")
	}
	docker, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docker), "./cmd/ralph-codec-server") || !strings.Contains(string(docker), "/out/ralph-codec-server") {
		t.Error("the Dockerfile does not build and install ralph-codec-server")
	}
	if st, err := os.Stat("keys"); err != nil || !st.IsDir() {
		t.Errorf("deploy/keys must exist for the mount: %v", err)
	}
}

func TestComposeMetricsProfile(t *testing.T) {
	c := loadCompose(t)
	addr := c.Services["ralph-worker"].Environment["RALPH_METRICS_ADDRESS"]
	_, port, ok := strings.Cut(addr, ":")
	if !ok || !strings.HasPrefix(addr, "0.0.0.0:") {
		t.Fatalf("worker RALPH_METRICS_ADDRESS = %q, want 0.0.0.0:<port> for Prometheus to reach", addr)
	}
	for _, name := range []string{"prometheus", "grafana"} {
		if !slices.Equal(c.Services[name].Profiles, []string{"metrics"}) {
			t.Errorf("%s profiles = %v, want [metrics]", name, c.Services[name].Profiles)
		}
	}

	// Prometheus scrapes every worker replica on the worker's metrics port.
	var prom struct {
		ScrapeConfigs []struct {
			JobName     string `yaml:"job_name"`
			MetricsPath string `yaml:"metrics_path"`
			DNSSD       []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
		Global map[string]string `yaml:"global"`
	}
	decodeYAML(t, "prometheus/prometheus.yml", &prom)
	if len(prom.ScrapeConfigs) != 1 || len(prom.ScrapeConfigs[0].DNSSD) != 1 {
		t.Fatalf("prometheus scrape configs = %+v", prom.ScrapeConfigs)
	}
	sd := prom.ScrapeConfigs[0].DNSSD[0]
	if !slices.Equal(sd.Names, []string{"ralph-worker"}) || sd.Type != "A" || port != strconv.Itoa(sd.Port) {
		t.Errorf("prometheus discovers %+v, want every ralph-worker replica on port %s", sd, port)
	}
	if p := prom.ScrapeConfigs[0].MetricsPath; p != "" && p != "/metrics" {
		t.Errorf("metrics_path = %q", p)
	}
	if !slices.Contains(c.Services["prometheus"].Volumes, "./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro") {
		t.Errorf("prometheus volumes = %v", c.Services["prometheus"].Volumes)
	}

	// Grafana: one provisioned datasource and one dashboard, wired by uid and path.
	var dsFile struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name      string `yaml:"name"`
			UID       string `yaml:"uid"`
			Type      string `yaml:"type"`
			Access    string `yaml:"access"`
			URL       string `yaml:"url"`
			IsDefault bool   `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	decodeYAML(t, "grafana/provisioning/datasources/prometheus.yml", &dsFile)
	if len(dsFile.Datasources) != 1 || dsFile.Datasources[0].URL != "http://prometheus:9090" || dsFile.Datasources[0].Type != "prometheus" {
		t.Fatalf("datasources = %+v", dsFile.Datasources)
	}
	var provider struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name            string `yaml:"name"`
			Type            string `yaml:"type"`
			DisableDeletion bool   `yaml:"disableDeletion"`
			Options         struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	decodeYAML(t, "grafana/provisioning/dashboards/ralph.yml", &provider)
	g := c.Services["grafana"]
	if len(provider.Providers) != 1 || !slices.Contains(g.Volumes, "./grafana/dashboards:"+provider.Providers[0].Options.Path+":ro") ||
		!slices.Contains(g.Volumes, "./grafana/provisioning:/etc/grafana/provisioning:ro") {
		t.Fatalf("grafana mounts %v do not match the dashboard provider %+v", g.Volumes, provider)
	}
	entries, err := os.ReadDir("grafana/dashboards")
	if err != nil || len(entries) != 1 || path.Ext(entries[0].Name()) != ".json" {
		t.Fatalf("want exactly one dashboard file, got %v %v", entries, err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile("grafana/dashboards/" + entries[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	uses := map[string]string{}
	for _, p := range dash.Panels {
		if p.Datasource.UID != dsFile.Datasources[0].UID {
			t.Errorf("panel %q uses datasource %q, want the provisioned %q", p.Title, p.Datasource.UID, dsFile.Datasources[0].UID)
		}
		for _, tg := range p.Targets {
			for _, m := range ralphSeries() {
				if strings.Contains(tg.Expr, m) {
					uses[m] = p.Title
				}
			}
		}
	}
	for _, m := range ralphSeries() {
		if uses[m] == "" {
			t.Errorf("no dashboard panel graphs %s", m)
		}
	}
	if len(dash.Panels) != 4 {
		t.Errorf("dashboard has %d panels, want rounds, tokens, verification pass rate, round duration", len(dash.Panels))
	}
}

func decodeYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
}

func TestComposeTracingProfile(t *testing.T) {
	c := loadCompose(t)
	j, ok := c.Services["jaeger"]
	if !ok {
		t.Fatal("service jaeger is missing")
	}
	for name, svc := range c.Services {
		if slices.Contains(svc.Profiles, "tracing") != (name == "jaeger") {
			t.Errorf("%s profiles = %v: only jaeger is in the tracing profile", name, svc.Profiles)
		}
	}
	if !slices.Equal(j.Profiles, []string{"tracing"}) || !strings.HasPrefix(j.Image, "jaegertracing/all-in-one:") {
		t.Errorf("jaeger: profiles %v image %q", j.Profiles, j.Image)
	}
	if j.Environment["COLLECTOR_OTLP_ENABLED"] != "true" {
		t.Errorf("jaeger COLLECTOR_OTLP_ENABLED = %q, want true (OTLP receivers on)", j.Environment["COLLECTOR_OTLP_ENABLED"])
	}
	published := map[string]bool{}
	for _, p := range j.Ports {
		mapping, _, _ := strings.Cut(p, " ")
		parts := strings.Split(mapping, ":")
		if len(parts) != 3 || parts[0] != "127.0.0.1" || parts[1] != parts[2] {
			t.Errorf("jaeger port %q: want 127.0.0.1:<port>:<port> (loopback only)", p)
			continue
		}
		published[parts[2]] = true
	}
	for _, port := range []string{"4317", "4318", "16686"} {
		if !published[port] {
			t.Errorf("jaeger does not publish %s (OTLP gRPC 4317, OTLP HTTP 4318, UI 16686): %v", port, j.Ports)
		}
	}

	// The workers read the standard variables from deploy/.env; off by default.
	for _, name := range []string{"ralph-worker", "ralph-worker-remote"} {
		env := c.Services[name].Environment
		if env["OTEL_EXPORTER_OTLP_ENDPOINT"] != "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" {
			t.Errorf("%s OTEL_EXPORTER_OTLP_ENDPOINT = %q, want it from deploy/.env, empty (off) by default", name, env["OTEL_EXPORTER_OTLP_ENDPOINT"])
		}
		if env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] != "${OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT:-false}" {
			t.Errorf("%s must not capture message content by default", name)
		}
	}
	// The endpoint .env.example suggests is jaeger's OTLP/HTTP port on the
	// compose network.
	example, err := os.ReadFile(".env.example")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(example), "OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318") || !published["4318"] {
		t.Error(".env.example does not point the workers at jaeger's OTLP/HTTP port")
	}
}

// The dashboard links rounds to their traces as far as the data allows: the
// metrics have no round or session labels, so the links open Jaeger's
// search for ralph.round spans and for one run by its workflow id.
func TestDashboardLinksToTraces(t *testing.T) {
	var dash struct {
		Templating struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
		Links []struct {
			Title string `json:"title"`
			URL   string `json:"url"`
		} `json:"links"`
	}
	data, err := os.ReadFile("grafana/dashboards/ralph.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	if len(dash.Templating.List) != 1 || dash.Templating.List[0].Name != "workflow_id" || dash.Templating.List[0].Type != "textbox" {
		t.Fatalf("templating = %+v, want one textbox workflow_id", dash.Templating.List)
	}
	var rounds, run bool
	for _, l := range dash.Links {
		if !strings.HasPrefix(l.URL, "http://localhost:16686/search?service=ralph-worker&") {
			t.Errorf("link %q = %q, want the tracing profile's Jaeger UI search", l.Title, l.URL)
		}
		rounds = rounds || strings.Contains(l.URL, "operation=ralph.round")
		run = run || strings.Contains(l.URL, "tags=%7B%22temporalWorkflowID%22%3A%22${workflow_id}%22%7D")
	}
	if !rounds || !run {
		t.Errorf("links %+v: want one to the ralph.round spans and one to the run named by ${workflow_id}", dash.Links)
	}
}
