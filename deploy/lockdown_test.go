package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The keys file the docs tell people to fill in is never committed.
func TestDeployEnvIsIgnored(t *testing.T) {
	out, err := exec.Command("git", "check-ignore", "-v", ".env").CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/.env is not ignored by git: %v %s", err, out)
	}
	example, err := os.ReadFile(".env.example")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^POSTGRES_PWD=(.*)$`).FindStringSubmatch(string(example)); m == nil || m[1] != "" {
		t.Errorf(".env.example must leave POSTGRES_PWD empty for each deployment to choose, got %q", m)
	}
}

// Every use of the database password requires it from deploy/.env: none
// has a default.
func TestComposeHasNoDefaultDatabasePassword(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	uses := regexp.MustCompile(`\$\{POSTGRES_PWD[^}]*\}`).FindAllString(string(data), -1)
	if len(uses) < 3 {
		t.Fatalf("POSTGRES_PWD used %d times, want PostgreSQL, the schema job and the server", len(uses))
	}
	for _, u := range uses {
		if !strings.HasPrefix(u, "${POSTGRES_PWD:?") {
			t.Errorf("%s has a default or may be empty; want ${POSTGRES_PWD:?...}", u)
		}
	}
	c := loadCompose(t)
	if pw := c.Services["postgresql"].Environment["POSTGRES_PASSWORD"]; !strings.HasPrefix(pw, "${POSTGRES_PWD:?") {
		t.Errorf("postgresql POSTGRES_PASSWORD = %q", pw)
	}
	if len(c.Services["postgresql"].Ports) != 0 {
		t.Errorf("postgresql publishes %v", c.Services["postgresql"].Ports)
	}
}

// The git daemon has no authentication, so whatever can reach it can push:
// it is on an internal network of its own with the remote workers only, it
// publishes no port, and those workers keep their commands off the host
// network.
func TestComposeGitServerReachesOnlyTheWorkersGitSteps(t *testing.T) {
	c := loadCompose(t)
	server := c.Services["git-server"]
	if len(server.Ports) != 0 || server.NetworkMode != "" {
		t.Errorf("git-server is reachable from outside: ports %v network_mode %q", server.Ports, server.NetworkMode)
	}
	if len(server.Networks) != 1 {
		t.Fatalf("git-server networks = %v, want exactly one internal network", server.Networks)
	}
	net := server.Networks[0]
	if n := c.Networks[net]; n == nil || !n.Internal {
		t.Fatalf("git-server's network %q is not declared internal", net)
	}
	for name, svc := range c.Services {
		if name != "git-server" && name != "ralph-worker-remote" && slices.Contains(svc.Networks, net) {
			t.Errorf("%s is on the git server's network %s", name, net)
		}
	}
	worker := c.Services["ralph-worker-remote"]
	if !slices.Contains(worker.Networks, net) {
		t.Errorf("ralph-worker-remote is not on %s", net)
	}
	if v := worker.Environment["RALPH_SANDBOX_NETWORK"]; v != "false" && v != "off" && v != "proxy" {
		t.Errorf("ralph-worker-remote RALPH_SANDBOX_NETWORK = %q: on the host network a command could push to git-server", v)
	}
	if worker.Environment["RALPH_SANDBOX"] != "bwrap" || !slices.Contains(worker.SecurityOpt, "seccomp=unconfined") {
		t.Errorf("ralph-worker-remote must run commands under bubblewrap (RALPH_SANDBOX=bwrap and the security options): %v %v", worker.Environment["RALPH_SANDBOX"], worker.SecurityOpt)
	}
}

// The codec server holds the keys. Without a token it may serve only the
// host's loopback and be on no compose network; with one it must read it.
func TestComposeCodecServerNeedsATokenOffLoopback(t *testing.T) {
	c := loadCompose(t)
	cs := c.Services["ralph-codec-server"]
	entry := strings.Join(cs.Entrypoint, " ")
	listen := ""
	if i := slices.Index(cs.Entrypoint, "--listen"); i >= 0 && i+1 < len(cs.Entrypoint) {
		listen = cs.Entrypoint[i+1]
	}
	if strings.Contains(entry, "--insecure-no-auth") {
		t.Fatalf("the codec server runs with --insecure-no-auth: %s", entry)
	}
	token := strings.Contains(entry, "--token-file") || cs.Environment["RALPH_CODEC_TOKEN_FILE"] != ""
	if token {
		return
	}
	if cs.NetworkMode != "host" || len(cs.Networks) != 0 || len(cs.Ports) != 0 {
		t.Errorf("a codec server without a token must be on no compose network: network_mode %q networks %v ports %v", cs.NetworkMode, cs.Networks, cs.Ports)
	}
	if !strings.HasPrefix(listen, "127.0.0.1:") && !strings.HasPrefix(listen, "localhost:") {
		t.Errorf("a codec server without a token must listen on loopback, got %q", listen)
	}
}
