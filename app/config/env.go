// Package config turns environment variables and command-line flags into the
// configuration of the Ralph binaries: the worker (activities.Config plus the
// worker's own settings) and the starter. Flags mirror environment variables
// and win over them; every number is a positive integer and a bad value is an
// error that names the variable or flag and the value.
package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.temporal.io/sdk/contrib/envconfig"
)

// Env is how configuration reads the environment. It is the same interface
// envconfig uses, so one value feeds both the Ralph settings and the standard
// TEMPORAL_* connection variables.
type Env = envconfig.EnvLookup

// OSEnv reads the process environment.
var OSEnv Env = envconfig.EnvLookupOS

// MapEnv is an Env backed by a map, for tests and embedding.
type MapEnv map[string]string

// LookupEnv implements Env.
func (m MapEnv) LookupEnv(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// Environ implements Env, in a stable order.
func (m MapEnv) Environ() []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// maxNumber bounds every numeric setting so that conversions (seconds to
// durations, attempts to int32) can never overflow.
const maxNumber = 1<<31 - 1

// ParsePositiveInt parses a positive integer setting. source names where the
// value came from (an env var like RALPH_MAX_ROUNDS or a flag like
// --max-rounds) and appears in the error together with the value.
func ParsePositiveInt(source, value string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < 1 || n > maxNumber {
		return 0, fmt.Errorf("%s=%q: must be a positive integer (1 to %d)", source, value, maxNumber)
	}
	return n, nil
}

// ParseBool parses a boolean setting (1, 0, true, false, yes, no, on, off).
func ParseBool(source, value string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, nil
	case "0", "false", "f", "no", "n", "off":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: must be a boolean (true/false, 1/0)", source, value)
}

// lookup returns a non-empty environment value. An empty variable counts as
// unset, so compose files can pass `${VAR:-}` through.
func lookup(env Env, key string) (string, bool) {
	if env == nil {
		env = OSEnv
	}
	v, ok := env.LookupEnv(key)
	if !ok || v == "" {
		return "", false
	}
	return v, true
}

// envOr is lookup with a default.
func envOr(env Env, key, def string) string {
	if v, ok := lookup(env, key); ok {
		return v
	}
	return def
}

// Getenv is os.Getenv through an Env.
func Getenv(env Env, key string) string {
	v, _ := lookup(env, key)
	return v
}
