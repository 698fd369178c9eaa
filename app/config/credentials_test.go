package config

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// refusingServer is a real gRPC server that answers every call with code,
// like a Temporal frontend whose authorizer rejects the caller. It records
// the authorization header and the methods called.
type refusingServer struct {
	Addr string
	mu   sync.Mutex
	auth []string
	seen []string
}

func startRefusingServer(t *testing.T, code codes.Code) *refusingServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &refusingServer{Addr: lis.Addr().String()}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		md, _ := metadata.FromIncomingContext(stream.Context())
		s.mu.Lock()
		s.seen = append(s.seen, method)
		s.auth = append(s.auth, md.Get("authorization")...)
		s.mu.Unlock()
		return status.Error(code, "Request unauthorized.")
	}))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return s
}

func (s *refusingServer) calls() (methods, auth []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...), append([]string(nil), s.auth...)
}

func TestDialRefusedCredentialsNameTheirSource(t *testing.T) {
	for _, code := range []codes.Code{codes.Unauthenticated, codes.PermissionDenied} {
		t.Run(code.String(), func(t *testing.T) {
			srv := startRefusingServer(t, code)
			const key = "tk-wrong-key-0123456789"
			env := MapEnv{"TEMPORAL_ADDRESS": srv.Addr, "TEMPORAL_API_KEY": key, "TEMPORAL_TLS": "false", "TEMPORAL_CONFIG_FILE": t.TempDir() + "/none.toml"}
			opts, err := ClientOptions(env, Connection{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := Dial(ctx, opts, env)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded against a server that refuses every call")
			}
			var ce *CredentialsError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *CredentialsError, got %T: %v", err, err)
			}
			if errors.As(err, new(*UnreachableError)) {
				t.Fatal("a refused credential is reported as an unreachable server (the worker would retry it)")
			}
			msg := err.Error()
			for _, want := range []string{"refused the credentials", srv.Addr, code.String(), "came from TEMPORAL_API_KEY", `"default"`} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, key) {
				t.Fatalf("message shows the API key: %s", msg)
			}
			_, auth := srv.calls()
			if len(auth) == 0 || auth[0] != "Bearer "+key {
				t.Fatalf("the server did not receive the configured API key: %q", auth)
			}
		})
	}
}

func TestCredentialSources(t *testing.T) {
	dir := t.TempDir()
	none := CredentialSources(MapEnv{"TEMPORAL_CONFIG_FILE": dir + "/missing.toml"})
	if !strings.Contains(none, "nowhere") || !strings.Contains(none, "TEMPORAL_API_KEY") {
		t.Errorf("no credentials: %q", none)
	}
	file := dir + "/temporal.toml"
	if err := writeFile(file, "[profile.prod]\napi_key = \"x\"\n"); err != nil {
		t.Fatal(err)
	}
	got := CredentialSources(MapEnv{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod",
		"TEMPORAL_TLS_CLIENT_CERT_PATH": "/c.pem", "TEMPORAL_TLS_CLIENT_KEY_PATH": "/k.pem"})
	for _, want := range []string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", `profile "prod" of ` + file} {
		if !strings.Contains(got, want) {
			t.Errorf("sources %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "/c.pem") {
		t.Errorf("sources show a value: %q", got)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
