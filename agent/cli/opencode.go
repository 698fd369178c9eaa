package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// opencode: `opencode run` headless with JSON events, its provider the
// gateway (an OpenAI-compatible one: streamed chat completions), the
// report tool an MCP server, every permission granted (the sandbox is the
// boundary), its data under the private home.
type opencode struct{}

func init() { register(opencode{}) }

func (opencode) Name() string   { return Opencode }
func (opencode) Binary() string { return "opencode" }
func (opencode) API() API       { return APIChat }
func (opencode) Tested() Range  { return Range{From: Version{1, 18, 0}, Below: Version{1, 19, 0}} }

func (opencode) Invocation(a Attempt) ([]string, []string, error) {
	config := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"permission": map[string]string{"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow"},
		"provider": map[string]any{"ralph": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Ralph gateway",
			"options": map[string]string{"baseURL": "{env:RALPH_GATEWAY_URL}", "apiKey": "{env:RALPH_GATEWAY_TOKEN}"},
			"models":  map[string]any{a.Model: map[string]any{"name": a.Model, "tool_call": true}},
		}},
		"model":       "ralph/" + a.Model,
		"small_model": "ralph/" + a.Model,
		"mcp":         map[string]any{"ralph": map[string]any{"type": "local", "command": a.ReportCommand, "enabled": true}},
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(a.Home, "opencode.json")
	if err := a.writeConfig(a.home, "opencode.json", data); err != nil {
		return nil, nil, fmt.Errorf("opencode config: %w", err)
	}
	argv := []string{a.Command, "run", "--format", "json", "--model", "ralph/" + a.Model, "--pure"}
	if a.Continue {
		argv = append(argv, "--continue")
	}
	env := []string{
		"OPENCODE_CONFIG=" + path,
		"RALPH_GATEWAY_URL=" + a.GatewayURL, "RALPH_GATEWAY_TOKEN=" + a.Token,
		"XDG_CONFIG_HOME=" + filepath.Join(a.Home, ".config"), "XDG_DATA_HOME=" + filepath.Join(a.Home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(a.Home, ".local", "state"), "XDG_CACHE_HOME=" + filepath.Join(a.Home, ".cache"),
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1",
	}
	return argv, env, nil
}
