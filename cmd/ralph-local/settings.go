package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

// Settings of the local run (environment), with their defaults.
const (
	EnvObjective     = "OBJECTIVE"
	EnvWorkspace     = "RALPH_WORKSPACE"
	EnvTemporalPort  = "RALPH_TEMPORAL_PORT"
	EnvUIPort        = "RALPH_UI_PORT"
	EnvServerTimeout = "RALPH_SERVER_TIMEOUT_SECONDS"
	EnvWorkerTimeout = "RALPH_WORKER_TIMEOUT_SECONDS"

	defaultWorkspace     = "demo"
	defaultTemporalPort  = 7233
	defaultUIPort        = 8233
	defaultServerTimeout = 120 * time.Second
	defaultWorkerTimeout = 90 * time.Second
	// stateDir holds the dev server's database, the logs, the workspaces
	// and the transcripts, under the directory the command runs in.
	stateDir = ".ralph"
	// listLimit bounds the workspace files listed at the end.
	listLimit = 50
)

// The demo's default run: its objective names its own check, so the run is
// started with that verify command, and the worker keeps one git commit per
// round, so the result can be reviewed round by round.
const (
	envVerifyCommand = "RALPH_VERIFY_COMMAND"
	envGit           = gitws.SettingMode
	defaultVerify    = "bash greet_test.sh"
	defaultGitMode   = gitws.ModeLocal
)

const defaultObjective = "Write greet.sh, a bash script that prints 'Hello, <name>!' for the name given as its first argument (default: world), and greet_test.sh, a bash test of it; finish when 'bash greet_test.sh' passes."

// settings are one local run's choices.
type settings struct {
	objective string
	workspace string
	// verify is the run's verify command ("": the worker's default).
	verify        string
	port, uiPort  int
	serverTimeout time.Duration
	workerTimeout time.Duration
	demo          bool
	demoReason    string
	// campaign runs the campaign demo instead of one loop (--campaign);
	// plan the planning demo (--plan).
	campaign bool
	plan     bool
}

func parseSettings(args []string, env map[string]string) (settings, error) {
	var s settings
	if len(args) > 0 && args[0] == campaignFlag {
		if len(args) > 1 {
			return s, fmt.Errorf("%s takes no objective: the campaign demo's tasks are its own", campaignFlag)
		}
		s.campaign, args = true, nil
	}
	if len(args) > 0 && args[0] == planFlag {
		if len(args) > 1 {
			return s, fmt.Errorf("%s takes no objective: the planning demo's objective is its own", planFlag)
		}
		s.plan, args = true, nil
	}
	s.objective, s.workspace = strings.Join(args, " "), env[EnvWorkspace]
	if strings.TrimSpace(s.objective) == "" {
		s.objective = env[EnvObjective]
	}
	if strings.TrimSpace(s.objective) == "" {
		s.objective = defaultObjective
	}
	if s.objective == defaultObjective && env[envVerifyCommand] == "" {
		s.verify = defaultVerify
	}
	if s.workspace == "" {
		s.workspace = defaultWorkspace
	}
	var err error
	if s.port, err = intSetting(env, EnvTemporalPort, defaultTemporalPort, 65535); err != nil {
		return s, err
	}
	if s.uiPort, err = intSetting(env, EnvUIPort, defaultUIPort, 65535); err != nil {
		return s, err
	}
	if s.port == s.uiPort {
		return s, fmt.Errorf("%s and %s are both %d", EnvTemporalPort, EnvUIPort, s.port)
	}
	if s.serverTimeout, err = secondsSetting(env, EnvServerTimeout, defaultServerTimeout); err != nil {
		return s, err
	}
	if s.workerTimeout, err = secondsSetting(env, EnvWorkerTimeout, defaultWorkerTimeout); err != nil {
		return s, err
	}
	s.demo, s.demoReason, err = demoMode(env)
	return s, err
}

// demoMode: the scripted model unless a real one is configured, and why.
// RALPH_DEMO is read with the worker's own boolean rule.
func demoMode(env map[string]string) (bool, string, error) {
	if v := env[config.EnvDemo]; v != "" {
		on, err := config.ParseBool(config.EnvDemo, v)
		if err != nil {
			return false, "", err
		}
		if on {
			return true, config.EnvDemo + "=" + v + " is set", nil
		}
	}
	var missing []string
	for _, k := range []string{config.EnvAPIKey, config.EnvModel} {
		if env[k] == "" {
			missing = append(missing, k)
		}
	}
	switch len(missing) {
	case 0:
		return false, "", nil
	case 1:
		return true, missing[0] + " is not set", nil
	default:
		return true, missing[0] + " and " + missing[1] + " are not set", nil
	}
}

func intSetting(env map[string]string, key string, def, max int) (int, error) {
	v, ok := env[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := config.ParsePositiveInt(key, v)
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, fmt.Errorf("%s=%q: must be at most %d", key, v, max)
	}
	return n, nil
}

func secondsSetting(env map[string]string, key string, def time.Duration) (time.Duration, error) {
	n, err := intSetting(env, key, int(def/time.Second), 1<<31-1)
	return time.Duration(n) * time.Second, err
}
