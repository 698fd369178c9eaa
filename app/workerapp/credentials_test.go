package workerapp

import (
	"bytes"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ralph-temporal/ralph/app/config"
)

// A worker whose Temporal credential is refused exits at start naming where
// the credential came from, instead of retrying as if the server were down.
func TestWorkerWithRefusedAPIKeyFailsAtStart(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		calls.Add(1)
		return status.Error(codes.Unauthenticated, "Request unauthorized.")
	}))
	go srv.Serve(lis)
	defer srv.Stop()

	dir := t.TempDir()
	const key = "tk-not-this-one"
	env := config.MapEnv{
		"TEMPORAL_ADDRESS": lis.Addr().String(), "TEMPORAL_API_KEY": key, "TEMPORAL_TLS": "false",
		"TEMPORAL_CONFIG_FILE": filepath.Join(dir, "none.toml"),
		"RALPH_WORKSPACE_ROOT": filepath.Join(dir, "ws"), "RALPH_SESSION_DIR": filepath.Join(dir, "s"),
		"RALPH_DEMO": "1", "RALPH_SANDBOX": "off",
		// Long enough that a retried dial would show as many calls.
		"RALPH_CONNECT_TIMEOUT_SECONDS": "600",
	}
	var stderr bytes.Buffer
	if code := Main(nil, env, &stderr); code != ExitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFailed, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"refused the credentials", "came from TEMPORAL_API_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, key) {
		t.Fatal("the Temporal API key was logged")
	}
	if strings.Contains(out, "waiting for the Temporal server") {
		t.Errorf("a refused credential was retried as an unreachable server:\n%s", out)
	}
	if n := calls.Load(); n > 3 {
		t.Errorf("the server was called %d times: the worker kept retrying", n)
	}
}
