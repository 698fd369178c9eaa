package codecserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/codec"
)

const uiOrigin = "http://localhost:8233"

// writeKeyFile writes a key file with one fresh key and returns its path and
// the key's base64 text.
func writeKeyFile(t *testing.T) (string, string) {
	t.Helper()
	b := make([]byte, codec.KeySize)
	rand.Read(b)
	key := base64.StdEncoding.EncodeToString(b)
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("k1 "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, key
}

func newServer(t *testing.T, token string) (*httptest.Server, *codec.Codec) {
	t.Helper()
	path, _ := writeKeyFile(t)
	c, err := codec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(c, Options{Origins: []string{uiOrigin}, Token: token}))
	t.Cleanup(srv.Close)
	return srv, c
}

// remote is the SDK's own client of the codec server protocol, as the CLI uses it.
func remote(srv *httptest.Server, auth string) converter.PayloadCodec {
	return converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
		Endpoint: srv.URL + "/",
		ModifyRequest: func(r *http.Request) error {
			if auth != "" {
				r.Header.Set("Authorization", auth)
			}
			return nil
		},
	})
}

func TestEncodeDecodeOverHTTP(t *testing.T) {
	srv, c := newServer(t, "")
	plain, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"objective": "secret plan"})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := remote(srv, "").Encode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	if string(enc[0].Metadata[converter.MetadataEncoding]) != codec.Encoding || bytes.Contains(enc[0].Data, []byte("secret plan")) {
		t.Fatalf("/encode did not encrypt: %v", enc[0])
	}
	// What the worker wrote decodes through the server, and vice versa.
	local, err := c.Decode(enc)
	if err != nil || string(local[0].Data) != string(plain.Data) {
		t.Fatalf("local decode of the server's encoding: %v", err)
	}
	workerWritten, _ := c.Encode([]*commonpb.Payload{plain})
	dec, err := remote(srv, "").Decode(workerWritten)
	if err != nil || string(dec[0].Data) != string(plain.Data) {
		t.Fatalf("/decode: %v %v", dec, err)
	}
	// Unknown key ids come back as an error naming them.
	other, _ := writeKeyFile(t)
	oc, _ := codec.Load(other)
	foreign, _ := oc.Encode([]*commonpb.Payload{plain})
	foreign[0].Metadata[codec.MetadataKeyID] = []byte("retired-2024")
	if _, err := remote(srv, "").Decode(foreign); err == nil || !strings.Contains(err.Error(), "retired-2024") {
		t.Fatalf("unknown key id over HTTP: %v", err)
	}
}

func TestCORS(t *testing.T) {
	srv, _ := newServer(t, "tok")
	pre, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	pre.Header.Set("Origin", uiOrigin)
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace,authorization")
	resp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != uiOrigin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight from the UI: %d %v", resp.StatusCode, resp.Header)
	}
	bad, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	bad.Header.Set("Origin", "https://evil.example")
	resp, err = http.DefaultClient.Do(bad)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestBearerToken(t *testing.T) {
	srv, c := newServer(t, "s3cret-token")
	plain, _ := converter.GetDefaultDataConverter().ToPayload("x")
	enc, _ := c.Encode([]*commonpb.Payload{plain})
	for _, auth := range []string{"", "Bearer wrong", "s3cret-token", "Basic s3cret-token"} {
		if _, err := remote(srv, auth).Decode(enc); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("auth %q: want 401, got %v", auth, err)
		}
	}
	dec, err := remote(srv, "Bearer s3cret-token").Decode(enc)
	if err != nil || string(dec[0].Data) != `"x"` {
		t.Fatalf("right token refused: %v", err)
	}
}

func TestParseArgs(t *testing.T) {
	keys, _ := writeKeyFile(t)
	tok := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tok, []byte("abc\n"), 0o600)
	env := config.MapEnv{config.EnvEncryptionKeyFile: keys}
	cfg, err := ParseArgs([]string{"--listen", "127.0.0.1:0", "--origins", "http://localhost:8233/, https://ui.example.com", "--token-file", tok}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KeyFile != keys || cfg.Token != "abc" || strings.Join(cfg.Origins, " ") != "http://localhost:8233 https://ui.example.com" {
		t.Fatalf("config %+v", cfg)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct {
		args []string
		env  config.MapEnv
		want string
	}{
		{nil, config.MapEnv{}, config.EnvEncryptionKeyFile},
		{[]string{"--listen", "nohost"}, env, "--listen"},
		{[]string{"--origins", "localhost:8233"}, env, `--origins: "localhost:8233"`},
		{[]string{"--origins", "http://ui/path"}, env, "--origins"},
		{[]string{"--token-file", empty}, env, "is empty"},
		{nil, config.MapEnv{config.EnvEncryptionKeyFile: keys, EnvTokenFile: "/nonexistent/tok"}, EnvTokenFile},
		{[]string{"--listen", "0.0.0.0:8081"}, env, "not a loopback address and no bearer token"},
		{[]string{"--listen", ":8081"}, env, "--token-file or " + EnvTokenFile},
		{[]string{"--listen", "codec:8081"}, env, "--insecure-no-auth"},
		{[]string{"--listen", "[::]:8081"}, env, "not a loopback address"},
	} {
		if _, err := ParseArgs(tc.args, tc.env, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want an error naming %q, got %v", tc.args, tc.want, err)
		}
	}
}

// Off loopback a token is required, unless refused knowingly; on loopback
// none is needed.
func TestNonLoopbackNeedsAToken(t *testing.T) {
	keys, _ := writeKeyFile(t)
	tok := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tok, []byte("abc\n"), 0o600)
	env := config.MapEnv{config.EnvEncryptionKeyFile: keys}
	for _, args := range [][]string{
		{"--listen", "127.0.0.1:0"}, {"--listen", "localhost:8081"}, {"--listen", "[::1]:8081"},
		{"--listen", "0.0.0.0:8081", "--token-file", tok}, {"--listen", "0.0.0.0:8081", "--insecure-no-auth"},
	} {
		if _, err := ParseArgs(args, env, &bytes.Buffer{}); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	withEnvToken := config.MapEnv{config.EnvEncryptionKeyFile: keys, EnvTokenFile: tok}
	if cfg, err := ParseArgs([]string{"--listen", ":8081"}, withEnvToken, &bytes.Buffer{}); err != nil || cfg.Token != "abc" {
		t.Errorf("token from %s: %+v, %v", EnvTokenFile, cfg, err)
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--listen", "0.0.0.0:0"}, env, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "--token-file") {
		t.Errorf("Main off loopback without a token = %d, %q", code, stderr.String())
	}
}

func TestServeLogsNoKeyMaterial(t *testing.T) {
	keys, key := writeKeyFile(t)
	var log bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Listen: "127.0.0.1:0", KeyFile: keys, Token: "tok-value"}, slog.New(slog.NewTextHandler(&log, nil)), ready)
	}()
	addr := <-ready
	resp, err := http.Post("http://"+addr+"/decode", "application/json", strings.NewReader(`{"payloads":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "k1") || strings.Contains(log.String(), key) || strings.Contains(log.String(), "tok-value") {
		t.Fatalf("log: %s", log.String())
	}
}
