// Package cluster carries the Temporal server config that every
// PostgreSQL-backed setup runs: devenv/temporalserver (tests, cmd/ralph-cluster)
// writes these very bytes into its state directory, and docker compose
// mounts the files.
package cluster

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// ConfigEnv is the server's --env: the config file's name without .yaml.
const ConfigEnv = "temporal-postgres"

// Config file names inside the server's config directory.
const (
	ServerConfigFile  = ConfigEnv + ".yaml"
	DynamicConfigFile = "dynamicconfig.yaml"
)

// ServerConfig is temporal-postgres.yaml: an env-templated server config.
//
//go:embed temporal-postgres.yaml
var ServerConfig string

// DynamicConfig is dynamicconfig.yaml.
//
//go:embed dynamicconfig.yaml
var DynamicConfig string

// DevServerValues is DynamicConfig as the dev server takes it: one
// KEY=VALUE (value in JSON) per key, sorted. The dev server cannot read a
// dynamic-config file and applies flags to every namespace, so the
// constraints are dropped; everything else comes from the one file.
func DevServerValues() ([]string, error) {
	var file map[string][]struct {
		Value any `yaml:"value"`
	}
	if err := yaml.Unmarshal([]byte(DynamicConfig), &file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", DynamicConfigFile, err)
	}
	out := make([]string, 0, len(file))
	for key, entries := range file {
		if len(entries) != 1 {
			return nil, fmt.Errorf("%s: %s has %d values; the dev server takes one", DynamicConfigFile, key, len(entries))
		}
		value, err := json.Marshal(entries[0].Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", DynamicConfigFile, key, err)
		}
		out = append(out, key+"="+string(value))
	}
	slices.Sort(out)
	return out, nil
}
