package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's configuration table from the settings")

// Markers around the generated table in README.md.
const (
	tableBegin = "<!-- settings:begin (generated: go test ./app/config -run TestREADMEConfigurationTable -update-readme) -->\n"
	tableEnd   = "<!-- settings:end -->"
)

func TestREADMEConfigurationTable(t *testing.T) {
	const path = "../../README.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start, end := strings.Index(text, tableBegin), strings.Index(text, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("README.md lacks the generated configuration table markers %q ... %q", tableBegin, tableEnd)
	}
	want := SettingsTable()
	got := text[start+len(tableBegin) : end]
	if got == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile(path, []byte(text[:start+len(tableBegin)]+want+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's configuration table differs from the settings; run\n  go test ./app/config -run TestREADMEConfigurationTable -update-readme\nwant:\n%s", want)
}

func TestEverySettingIsDocumentedOnce(t *testing.T) {
	seenEnv, seenFlag := map[string]bool{}, map[string]bool{}
	for _, s := range workerSettings() {
		if s.usage == "" {
			t.Errorf("setting %s/%s has no meaning", s.env, s.flag)
		}
		if s.env != "" && seenEnv[s.env] || s.flag != "" && seenFlag[s.flag] {
			t.Errorf("setting %s/%s is declared twice", s.env, s.flag)
		}
		seenEnv[s.env], seenFlag[s.flag] = true, true
	}
	for _, env := range []string{"RALPH_VERIFY_COMMAND", "RALPH_VERIFY_TIMEOUT_SECONDS", "RALPH_VERIFY_ATTEMPTS", "RALPH_CONTEXT_TOKENS",
		"RALPH_MAX_OUTPUT_TOKENS", "RALPH_ECHO_REASONING", "RALPH_SANDBOX", "RALPH_SANDBOX_NETWORK", "RALPH_SANDBOX_HIDE",
		"RALPH_SANDBOX_SHARE", "RALPH_COMMAND_ENV", "RALPH_MAX_RUN_TOKENS", "RALPH_MAX_RUN_MINUTES", "RALPH_MAX_IDLE_ROUNDS",
		"RALPH_SEARCH_ATTRIBUTES", "RALPH_GIT", "RALPH_GIT_REMOTE", "RALPH_GIT_AUTHOR", "RALPH_ENCRYPTION_KEY_FILE",
		"RALPH_METRICS_ADDRESS", "RALPH_ROUND_ATTEMPTS", "RALPH_MAX_COMMAND_TIMEOUT_SECONDS",
		"RALPH_MAX_WAIT_MINUTES", "RALPH_MAX_DEFERRALS", "RALPH_FALLBACK_MODELS"} {
		if !seenEnv[env] {
			t.Errorf("%s is not a setting", env)
		}
	}
	d := DefaultWorker()
	if d.Activities.Limits.RoundAttempts != 10 || d.Activities.Agent.ToolLimits.MaxCommandTimeout.Seconds() != 1800 {
		t.Errorf("defaults: round attempts %d, max command timeout %s", d.Activities.Limits.RoundAttempts, d.Activities.Agent.ToolLimits.MaxCommandTimeout)
	}
}
