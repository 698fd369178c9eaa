package codecserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/codec"
)

// Defaults and exit codes of the binary.
const (
	DefaultListen = "127.0.0.1:8081"
	ExitOK        = 0
	ExitFailed    = 1
	ExitUsage     = 2
	// EnvTokenFile names the file holding the bearer token (also --token-file).
	EnvTokenFile      = "RALPH_CODEC_TOKEN_FILE"
	shutdownTimeout   = 5 * time.Second
	readHeaderTimeout = 10 * time.Second
)

// Config is the resolved command line.
type Config struct {
	Listen  string
	Origins []string
	KeyFile string
	Token   string
}

// ParseArgs resolves flags and env into a Config; every error names the flag
// or variable at fault.
func ParseArgs(args []string, env config.Env, usage io.Writer) (Config, error) {
	fs := flag.NewFlagSet("ralph-codec-server", flag.ContinueOnError)
	fs.SetOutput(usage)
	listen := fs.String("listen", DefaultListen, "host:port to serve /encode and /decode on")
	origins := fs.String("origins", "", "comma-separated browser origins allowed by CORS (the Temporal UI, e.g. http://localhost:8233)")
	keyFile := fs.String("encryption-key-file", "", "key file (overrides "+config.EnvEncryptionKeyFile+")")
	tokenFile := fs.String("token-file", "", "file holding a bearer token every /encode and /decode request must carry (overrides "+EnvTokenFile+"; required to listen on a non-loopback address)")
	insecure := fs.Bool("insecure-no-auth", false, "listen on a non-loopback address without a bearer token (anyone who reaches the port can decrypt payloads)")
	fs.Usage = func() {
		fmt.Fprintf(usage, "Usage: ralph-codec-server --listen ADDR --origins URL,...\n\nServes the Temporal codec server protocol for Ralph's encrypted payloads.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	cfg := Config{Listen: strings.TrimSpace(*listen), KeyFile: strings.TrimSpace(*keyFile)}
	if cfg.KeyFile == "" {
		cfg.KeyFile = strings.TrimSpace(config.Getenv(env, config.EnvEncryptionKeyFile))
	}
	if cfg.KeyFile == "" {
		return Config{}, fmt.Errorf("%s (or --encryption-key-file) is not set: the server needs the workers' key file", config.EnvEncryptionKeyFile)
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return Config{}, fmt.Errorf("--listen=%q: want host:port: %v", cfg.Listen, err)
	}
	var err error
	if cfg.Origins, err = parseOrigins(*origins); err != nil {
		return Config{}, err
	}
	if cfg.Token, err = readToken(*tokenFile, env); err != nil {
		return Config{}, err
	}
	if cfg.Token == "" && !*insecure && !loopback(cfg.Listen) {
		return Config{}, fmt.Errorf("--listen=%q is not a loopback address and no bearer token is set: anyone who reaches it could decrypt every payload; set --token-file or %s (or, knowingly, --insecure-no-auth)", cfg.Listen, EnvTokenFile)
	}
	return cfg, nil
}

// parseOrigins parses --origins: comma-separated browser origins, each
// scheme://host[:port] and nothing more.
func parseOrigins(list string) ([]string, error) {
	var origins []string
	for _, o := range strings.Split(list, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("--origins: %q is not an origin like http://localhost:8233", o)
		}
		origins = append(origins, u.Scheme+"://"+u.Host)
	}
	return origins, nil
}

// readToken reads the bearer token from the file --token-file (or
// EnvTokenFile) names; "" when neither names one.
func readToken(tokenFile string, env config.Env) (string, error) {
	tf := strings.TrimSpace(tokenFile)
	if tf == "" {
		tf = strings.TrimSpace(config.Getenv(env, EnvTokenFile))
	}
	if tf == "" {
		return "", nil
	}
	b, err := os.ReadFile(tf)
	if err != nil {
		return "", fmt.Errorf("--token-file / %s: %w", EnvTokenFile, err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--token-file / %s: %s is empty", EnvTokenFile, tf)
	}
	return token, nil
}

// loopback reports whether a listen address binds only the loopback
// interface: localhost or a loopback IP. An empty host, 0.0.0.0, :: and any
// other name may be reachable from elsewhere.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Main runs the server until ctx is done and returns the exit code.
func Main(ctx context.Context, args []string, env config.Env, stderr io.Writer) int {
	cfg, err := ParseArgs(args, env, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ralph-codec-server: %v\n", err)
		return ExitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if err := Serve(ctx, cfg, logger, nil); err != nil {
		logger.Error("codec server stopped with an error", "error", err)
		return ExitFailed
	}
	return ExitOK
}

// Serve listens on cfg.Listen and serves until ctx is done. ready, when not
// nil, receives the bound address once the server accepts connections.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ready chan<- string) error {
	c, err := codec.Load(cfg.KeyFile)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{Handler: NewHandler(c, Options{Origins: cfg.Origins, Token: cfg.Token}), ReadHeaderTimeout: readHeaderTimeout}
	// Key ids only: the key material and the token never reach a log.
	logger.Info("serving the Temporal codec protocol", "address", lis.Addr().String(), "encryptKeyId", c.Keys().EncryptID(),
		"keyIds", strings.Join(c.Keys().IDs(), ","), "origins", strings.Join(cfg.Origins, ","), "bearerToken", cfg.Token != "")
	if ready != nil {
		ready <- lis.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}
