package config

import (
	"flag"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the settings table in docs/reference.md from the settings")

// settingsDoc is the page that holds the generated settings table, between
// these markers.
const (
	settingsDoc = "../../docs/reference.md"
	tableBegin  = "<!-- settings:begin (generated: go test ./app/config -run TestSettingsTableInDocs -update-docs) -->\n"
	tableEnd    = "<!-- settings:end -->"
)

func TestSettingsTableInDocs(t *testing.T) {
	testkit.GeneratedBlock(t, settingsDoc, tableBegin, tableEnd, SettingsTable(), *updateDocs,
		"go test ./app/config -run TestSettingsTableInDocs -update-docs")
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
