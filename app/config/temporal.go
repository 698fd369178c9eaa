package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/ralph-temporal/ralph/internal/codec"
)

// ClientOptions loads the standard Temporal client configuration: the
// envconfig file profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE) overlaid by
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_* and
// TEMPORAL_GRPC_META_*, then the command-line overrides in conn.
func ClientOptions(env Env, conn Connection) (client.Options, error) {
	if env == nil {
		env = OSEnv
	}
	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: env})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client configuration (TEMPORAL_* env / config file): %w", err)
	}
	if conn.Address != "" {
		opts.HostPort = conn.Address
	}
	if conn.Namespace != "" {
		opts.Namespace = conn.Namespace
	}
	if opts.HostPort == "" {
		opts.HostPort = client.DefaultHostPort
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	if conn.EncryptionKeyFile != "" {
		if err := applyEncryption(&opts, conn.EncryptionKeyFile); err != nil {
			return client.Options{}, err
		}
	}
	return opts, nil
}

// applyEncryption makes every payload and every failure message the client
// writes encrypted under the key file's first key.
func applyEncryption(opts *client.Options, keyFile string) error {
	c, err := codec.Load(keyFile)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvEncryptionKeyFile, err)
	}
	opts.DataConverter = codec.DataConverter(c)
	opts.FailureConverter = codec.FailureConverter(opts.DataConverter)
	return nil
}

// Starter is the starter's own configuration; the connection comes from
// ClientOptions.
type Starter struct {
	TaskQueue      string
	MaxResultChars int
	Connection     Connection
	// Tracing comes from the standard OTEL_* variables.
	Tracing Tracing
}

// StarterFlags registers the starter's shared flags on fs: --task-queue,
// --max-result-chars, --address, --namespace. Call Resolve after fs.Parse.
type StarterFlags struct {
	fs             *flag.FlagSet
	taskQueue      flagValue
	maxResultChars flagValue
	address        string
	namespace      string
	keyFile        string
}

// NewStarterFlags registers the flags on fs.
func NewStarterFlags(fs *flag.FlagSet) *StarterFlags {
	f := &StarterFlags{fs: fs}
	fs.Var(&f.taskQueue, "task-queue", "task queue of the Ralph workers (env RALPH_TASK_QUEUE, default "+DefaultTaskQueue+")")
	fs.Var(&f.maxResultChars, "max-result-chars", fmt.Sprintf("max code points of the printed result text (env RALPH_MAX_RESULT_CHARS, default %d)", DefaultMaxResultChars))
	fs.StringVar(&f.address, "address", "", "Temporal frontend host:port (overrides TEMPORAL_ADDRESS; default "+client.DefaultHostPort+")")
	fs.StringVar(&f.namespace, "namespace", "", "Temporal namespace (overrides TEMPORAL_NAMESPACE; default "+client.DefaultNamespace+")")
	fs.StringVar(&f.keyFile, "encryption-key-file", "", "key file of the workers' payload encryption (overrides "+EnvEncryptionKeyFile+")")
	return f
}

// Resolve combines the parsed flags with env (flags win) into a Starter.
func (f *StarterFlags) Resolve(env Env) (Starter, error) {
	set := make(map[string]bool)
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	s := Starter{
		TaskQueue:      envOr(env, "RALPH_TASK_QUEUE", DefaultTaskQueue),
		MaxResultChars: DefaultMaxResultChars,
		Connection: Connection{Address: f.address, Namespace: f.namespace,
			EncryptionKeyFile: strings.TrimSpace(envOr(env, EnvEncryptionKeyFile, ""))},
	}
	if set["encryption-key-file"] {
		s.Connection.EncryptionKeyFile = strings.TrimSpace(f.keyFile)
	}
	if set["task-queue"] {
		s.TaskQueue = f.taskQueue.value
	}
	tr, err := LoadTracing(env, DefaultStarterService)
	if err != nil {
		return Starter{}, err
	}
	if err := tr.CheckEncryption(s.Connection.EncryptionKeyFile); err != nil {
		return Starter{}, err
	}
	s.Tracing = tr
	if s.TaskQueue == "" {
		return Starter{}, errors.New("--task-queue / RALPH_TASK_QUEUE: must not be empty")
	}
	source, value := "", ""
	if set["max-result-chars"] {
		source, value = "--max-result-chars", f.maxResultChars.value
	} else if v, ok := lookup(env, "RALPH_MAX_RESULT_CHARS"); ok {
		source, value = "RALPH_MAX_RESULT_CHARS", v
	}
	if source != "" {
		n, err := ParsePositiveInt(source, value)
		if err != nil {
			return Starter{}, err
		}
		s.MaxResultChars = n
	}
	return s, nil
}

// LoadStarter reads the starter configuration from env alone.
func LoadStarter(env Env) (Starter, error) {
	fs := flag.NewFlagSet("starter", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return NewStarterFlags(fs).Resolve(env)
}
