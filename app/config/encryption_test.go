package config

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/ralph-temporal/ralph/internal/codec"
)

func keyFile(t *testing.T, id string) string {
	t.Helper()
	b := make([]byte, codec.KeySize)
	rand.Read(b)
	path := filepath.Join(t.TempDir(), "keys")
	if err := writeFile(path, id+" "+base64.StdEncoding.EncodeToString(b)+"\n"); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestClientOptionsEncryptWhenAKeyFileIsSet(t *testing.T) {
	plain, err := ClientOptions(MapEnv{}, Connection{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.DataConverter != nil || plain.FailureConverter != nil {
		t.Fatal("converters set without a key file")
	}
	opts, err := ClientOptions(MapEnv{}, Connection{EncryptionKeyFile: keyFile(t, "k1")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.DataConverter.ToPayload("objective text")
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[converter.MetadataEncoding]) != codec.Encoding || string(p.Metadata[codec.MetadataKeyID]) != "k1" {
		t.Fatalf("payload metadata %q", p.Metadata)
	}
	f := opts.FailureConverter.ErrorToFailure(io.ErrUnexpectedEOF)
	if strings.Contains(f.GetMessage(), "unexpected EOF") || f.GetEncodedAttributes() == nil {
		t.Fatalf("failure message stays plaintext: %q", f.GetMessage())
	}
}

func TestBadKeyFileNamesTheSetting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	writeFile(path, "k1 c2hvcnQ=\n")
	_, err := ClientOptions(MapEnv{}, Connection{EncryptionKeyFile: path})
	if err == nil || !strings.Contains(err.Error(), EnvEncryptionKeyFile) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("want an error naming %s and the line, got %v", EnvEncryptionKeyFile, err)
	}
	_, err = ClientOptions(MapEnv{}, Connection{EncryptionKeyFile: path + ".missing"})
	if err == nil || !strings.Contains(err.Error(), "keys.missing") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestStarterReadsTheKeyFile(t *testing.T) {
	s, err := LoadStarter(MapEnv{EnvEncryptionKeyFile: "/etc/ralph/keys"})
	if err != nil || s.Connection.EncryptionKeyFile != "/etc/ralph/keys" {
		t.Fatalf("env: %+v %v", s.Connection, err)
	}
	fs := flag.NewFlagSet("s", flag.ContinueOnError)
	f := NewStarterFlags(fs)
	if err := fs.Parse([]string{"--encryption-key-file", "/other"}); err != nil {
		t.Fatal(err)
	}
	s, err = f.Resolve(MapEnv{EnvEncryptionKeyFile: "/etc/ralph/keys"})
	if err != nil || s.Connection.EncryptionKeyFile != "/other" {
		t.Fatalf("flag: %+v %v", s.Connection, err)
	}
	w, err := LoadWorker(nil, MapEnv{EnvEncryptionKeyFile: "/w"}, io.Discard)
	if err != nil || w.Connection.EncryptionKeyFile != "/w" {
		t.Fatalf("worker connection lacks the key file: %+v, %v", w.Connection, err)
	}
}
