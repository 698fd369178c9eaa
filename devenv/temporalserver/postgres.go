package temporalserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pgOSUser is the account PostgreSQL runs as when the cluster is started
// by root: PostgreSQL refuses to run as root, and Debian's package creates
// this user.
const pgOSUser = "postgres"

type postgresConfig struct {
	bin     string // PostgreSQL's bin directory
	dir     string // holds data/, sock/ and the password file
	port    int
	durable bool
	output  io.Writer
	timeout time.Duration
}

type postgres struct {
	cfg  postgresConfig
	proc *Process
}

// startPostgres initialises a fresh database cluster whose superuser is the
// Temporal login and starts the postmaster, listening on 127.0.0.1 only.
func startPostgres(ctx context.Context, cfg postgresConfig) (*postgres, error) {
	for _, tool := range []string{"initdb", "postgres"} {
		if !isExecutable(filepath.Join(cfg.bin, tool)) {
			return nil, fmt.Errorf("PostgreSQL's %s is not in %s: install PostgreSQL 15 (apt-get install postgresql-15) or set %s to its bin directory", tool, cfg.bin, EnvPGBin)
		}
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	data, sock, pwfile := filepath.Join(cfg.dir, "data"), filepath.Join(cfg.dir, "sock"), filepath.Join(cfg.dir, "pwfile")
	if err := os.MkdirAll(sock, 0o700); err != nil {
		return nil, fmt.Errorf("create PostgreSQL's directories: %w", err)
	}
	if err := os.WriteFile(pwfile, []byte(dbPassword+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write PostgreSQL's password file: %w", err)
	}
	if cred != nil {
		for _, p := range []string{cfg.dir, sock, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("hand %s to the %s user: %w", p, pgOSUser, err)
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(cfg.bin, "initdb"), "-D", data, "-U", dbUser, "--pwfile", pwfile,
		"-E", "UTF8", "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync")
	initdb.Dir = cfg.dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %w\n%s", data, err, out)
	}
	args := []string{"-D", data, "-p", strconv.Itoa(cfg.port), "-k", sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
		"-c", "shared_buffers=128MB", "-c", "log_min_messages=warning"}
	if !cfg.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(cfg.bin, "postgres"), args...)
	cmd.Dir = cfg.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	proc, err := StartProcess("PostgreSQL", cmd, cfg.output)
	if err != nil {
		return nil, err
	}
	pg := &postgres{cfg: cfg, proc: proc}
	if err := pg.waitReady(ctx, filepath.Join(data, "postmaster.pid")); err != nil {
		_ = pg.stop()
		return nil, err
	}
	return pg, nil
}

// pgCredential is the postgres user's when running as root, else nil (run
// as this user).
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(pgOSUser)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root and there is no %s user to run it as (apt-get install postgresql-15 creates it): %w", pgOSUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has a non-numeric uid %q or gid %q", pgOSUser, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// waitReady waits for the status line of postmaster.pid (its 8th line)
// to say "ready": PostgreSQL then accepts connections.
func (pg *postgres) waitReady(ctx context.Context, pidFile string) error {
	return waitReady(ctx, pg.proc, pg.cfg.timeout, func(context.Context) error {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return fmt.Errorf("PostgreSQL on port %d: %w", pg.cfg.port, err)
		}
		lines := strings.Split(string(bytes.TrimSpace(data)), "\n")
		if len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready" {
			return nil
		}
		return fmt.Errorf("PostgreSQL on port %d is starting", pg.cfg.port)
	})
}

// stop asks for a fast shutdown (SIGINT: roll back open transactions, then
// exit), then SIGKILL after StopGrace.
func (pg *postgres) stop() error {
	return pg.proc.Stop(syscall.SIGINT, StopGrace)
}
