// Package cluster carries the Temporal server config that every
// PostgreSQL-backed setup runs: internal/cluster (tests, cmd/ralph-cluster)
// writes these very bytes into its state directory, and docker compose
// mounts the files.
package cluster

import _ "embed"

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
