package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// claude-code: `claude -p` reading the prompt from stdin with stream-json
// events, the gateway as its Anthropic endpoint, the report tool its only
// MCP server (--strict-mcp-config), permission checks skipped (it refuses
// that as root: the sandbox runs it as its unprivileged uid) and its
// non-essential traffic off.
type claudeCode struct{}

func init() { register(claudeCode{}) }

func (claudeCode) Name() string   { return ClaudeCode }
func (claudeCode) Binary() string { return "claude" }
func (claudeCode) API() API       { return APIMessages }
func (claudeCode) Tested() Range  { return Range{From: Version{2, 1, 0}, Below: Version{2, 2, 0}} }

func (claudeCode) Invocation(a Attempt) ([]string, []string, error) {
	dir := filepath.Join(a.Home, ".claude")
	d, err := a.configDir(".claude")
	if err != nil {
		return nil, nil, fmt.Errorf("claude config: %w", err)
	}
	defer d.Close()
	mcp, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ralph": map[string]any{"type": "stdio", "command": a.ReportCommand[0], "args": a.ReportCommand[1:]}}})
	if err != nil {
		return nil, nil, err
	}
	mcpPath := filepath.Join(dir, "ralph-mcp.json")
	if err := a.writeConfig(d, "ralph-mcp.json", mcp); err != nil {
		return nil, nil, fmt.Errorf("claude config: %w", err)
	}
	argv := []string{a.Command, "-p", "--output-format", "stream-json", "--verbose", "--model", a.Model,
		"--mcp-config", mcpPath, "--strict-mcp-config", "--dangerously-skip-permissions"}
	if a.Continue {
		argv = append(argv, "--continue")
	}
	env := []string{
		"CLAUDE_CONFIG_DIR=" + dir, "ANTHROPIC_BASE_URL=" + gatewayRoot(a.GatewayURL), "ANTHROPIC_API_KEY=" + a.Token,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1", "IS_SANDBOX=1",
		// The report tool in every request, not behind a tool search.
		"ENABLE_TOOL_SEARCH=false",
	}
	return argv, env, nil
}
