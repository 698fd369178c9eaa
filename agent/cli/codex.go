package cli

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// codex: `codex exec --json` reading the prompt from stdin, its one model
// provider the gateway (Codex speaks only the Responses API), the report
// tool an MCP server, approvals never asked and its own sandbox off (it
// cannot start inside ours, which is the boundary), plugins off (they
// phone home). CODEX_HOME lies in the private home, not under $TMPDIR.
type codex struct{}

func init() { register(codex{}) }

func (codex) Name() string   { return Codex }
func (codex) Binary() string { return "codex" }
func (codex) API() API       { return APIResponses }
func (codex) Tested() Range  { return Range{From: Version{0, 171, 0}, Below: Version{0, 172, 0}} }

func (codex) Invocation(a Attempt) ([]string, []string, error) {
	dir := filepath.Join(a.Home, ".codex")
	args := make([]string, len(a.ReportCommand)-1)
	for i, s := range a.ReportCommand[1:] {
		args[i] = strconv.Quote(s)
	}
	config := strings.Join([]string{
		"model = " + strconv.Quote(a.Model),
		`model_provider = "ralph"`,
		`approval_policy = "never"`,
		`sandbox_mode = "danger-full-access"`,
		"check_for_update_on_startup = false",
		"[model_providers.ralph]",
		`name = "Ralph gateway"`,
		`env_key = "RALPH_GATEWAY_TOKEN"`,
		`wire_api = "responses"`,
		"stream_max_retries = 0",
		"request_max_retries = 0",
		"[mcp_servers.ralph]",
		"command = " + strconv.Quote(a.ReportCommand[0]),
		"args = [" + strings.Join(args, ", ") + "]",
		"",
	}, "\n")
	d, err := a.configDir(".codex")
	if err != nil {
		return nil, nil, fmt.Errorf("codex config: %w", err)
	}
	defer d.Close()
	if err := a.writeConfig(d, "config.toml", []byte(config)); err != nil {
		return nil, nil, fmt.Errorf("codex config: %w", err)
	}
	argv := []string{a.Command, "exec"}
	if a.Continue {
		argv = append(argv, "resume", "--last")
	}
	argv = append(argv, "--json", "--skip-git-repo-check", "--disable", "plugins",
		"--dangerously-bypass-approvals-and-sandbox",
		"-c", "model_providers.ralph.base_url="+strconv.Quote(a.GatewayURL), "-")
	env := []string{"CODEX_HOME=" + dir, "RALPH_GATEWAY_TOKEN=" + a.Token}
	return argv, env, nil
}
