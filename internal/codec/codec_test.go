package codec

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func mustCodec(t *testing.T, file string) *Codec {
	t.Helper()
	keys, err := ParseKeys(strings.NewReader(file), "keys")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const secret = "the proprietary objective: port billing to Rust"

func encodeValue(t *testing.T, c *Codec, v any) *commonpb.Payload {
	t.Helper()
	p, err := DataConverter(c).ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoundTripHidesPlaintext(t *testing.T) {
	t.Parallel()
	c := mustCodec(t, "a "+newKey(t)+"\n")
	p := encodeValue(t, c, map[string]string{"objective": secret})
	if got := string(p.Metadata[converter.MetadataEncoding]); got != Encoding {
		t.Fatalf("encoding = %q, want %q", got, Encoding)
	}
	if got := string(p.Metadata[MetadataKeyID]); got != "a" {
		t.Fatalf("key id = %q, want a", got)
	}
	if bytes.Contains(p.Data, []byte("proprietary")) {
		t.Fatal("ciphertext contains the plaintext")
	}
	var back map[string]string
	if err := DataConverter(c).FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if back["objective"] != secret {
		t.Fatalf("decoded %q", back["objective"])
	}
	// Two encodings of one value differ (fresh nonce each time).
	if q := encodeValue(t, c, map[string]string{"objective": secret}); bytes.Equal(p.Data, q.Data) {
		t.Fatal("two encryptions produced the same ciphertext")
	}
}

func TestRotationFirstKeyEncryptsEveryKeyDecrypts(t *testing.T) {
	t.Parallel()
	keyA, keyB := newKey(t), newKey(t)
	underA := encodeValue(t, mustCodec(t, "A "+keyA+"\n"), secret)

	rotated := mustCodec(t, "# new key first\nB "+keyB+"\n\nA "+keyA+"\n")
	var s string
	if err := DataConverter(rotated).FromPayload(underA, &s); err != nil {
		t.Fatalf("data under A after rotation: %v", err)
	}
	if s != secret {
		t.Fatalf("decoded %q", s)
	}
	if id := string(encodeValue(t, rotated, secret).Metadata[MetadataKeyID]); id != "B" {
		t.Fatalf("rotated file encrypts under %q, want B", id)
	}
}

func TestUnknownKeyIDFailsNamingIt(t *testing.T) {
	t.Parallel()
	underOld := encodeValue(t, mustCodec(t, "old-2025 "+newKey(t)+"\n"), secret)
	other := mustCodec(t, "new-2026 "+newKey(t)+"\n")
	var s string
	err := DataConverter(other).FromPayload(underOld, &s)
	if err == nil {
		t.Fatal("decoded a payload under an unknown key id")
	}
	if !strings.Contains(err.Error(), `"old-2025"`) || !strings.Contains(err.Error(), "new-2026") {
		t.Fatalf("error does not name the missing and the held key ids: %v", err)
	}
	var taskFailure *converter.WorkflowTaskFailureError
	if !IsDecodeError(err) || !errors.As(err, &taskFailure) {
		t.Fatalf("want a DecodeError that fails the workflow task (retried once the key is added), got %T", err)
	}
}

func TestWrongKeyUnderSameIDFails(t *testing.T) {
	t.Parallel()
	p := encodeValue(t, mustCodec(t, "k "+newKey(t)+"\n"), secret)
	_, err := mustCodec(t, "k "+newKey(t)+"\n").Decode([]*commonpb.Payload{p})
	if err == nil || !strings.Contains(err.Error(), `"k"`) || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("want an authentication error naming key k, got %v", err)
	}
}

func TestTamperedPayloadFails(t *testing.T) {
	t.Parallel()
	keyA, keyB := newKey(t), newKey(t)
	c := mustCodec(t, "A "+keyA+"\nB "+keyB+"\n")
	for name, tamper := range map[string]func(p *commonpb.Payload){
		"flipped ciphertext bit": func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 },
		"flipped nonce bit":      func(p *commonpb.Payload) { p.Data[0] ^= 1 },
		"truncated":              func(p *commonpb.Payload) { p.Data = p.Data[:10] },
		// Relabelling the key id must not make another key's check pass.
		"key id edited": func(p *commonpb.Payload) { p.Metadata[MetadataKeyID] = []byte("B") },
	} {
		t.Run(name, func(t *testing.T) {
			p := encodeValue(t, c, secret)
			tamper(p)
			if _, err := c.Decode([]*commonpb.Payload{p}); err == nil {
				t.Fatal("a tampered payload decoded")
			}
		})
	}
}

func TestUnencryptedPayloadsPassThrough(t *testing.T) {
	t.Parallel()
	c := mustCodec(t, "a "+newKey(t)+"\n")
	plain, err := converter.GetDefaultDataConverter().ToPayload(map[string]any{"objective": secret, "maxRounds": 3})
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := DataConverter(c).FromPayload(plain, &back); err != nil {
		t.Fatalf("plain JSON input (temporal workflow start --input): %v", err)
	}
	if back["objective"] != secret {
		t.Fatalf("decoded %v", back)
	}
	nilPayload, err := converter.GetDefaultDataConverter().ToPayload(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decode([]*commonpb.Payload{nilPayload})
	if err != nil || out[0] != nilPayload {
		t.Fatalf("binary/null payload did not pass through: %v", err)
	}
}

func TestKeyFileErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	good := newKey(t)
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, tc := range []struct {
		name, file, want string
	}{
		{"empty", "# only a comment\n\n", "no keys"},
		{"one field", "a " + good + "\nlonely\n", "line 2: want"},
		{"three fields", "a " + good + " extra\n", "line 1: want"},
		{"not base64", "\nb !!!notbase64!!!\n", `line 2: key "b" is not standard base64`},
		{"wrong size", "a " + good + "\n#\nc " + short + "\n", `line 3: key "c" is 16 bytes, want 32`},
		{"duplicate", "a " + good + "\na " + newKey(t) + "\n", `line 2: key id "a" is listed twice`},
		{"zero key", "z " + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n", `line 1: key "z" is all zero`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKeys(strings.NewReader(tc.file), "/etc/ralph/keys")
			if err == nil {
				t.Fatal("parsed a bad key file")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/etc/ralph/keys") {
				t.Fatalf("error %q does not contain %q and the file name", err, tc.want)
			}
			if strings.Contains(err.Error(), good) {
				t.Fatalf("error shows key material: %v", err)
			}
		})
	}
}

func TestKeyringNeverPrintsKeyMaterial(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	keys, err := ParseKeys(strings.NewReader("a "+key+"\n"), "k")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(key)
	c, _ := New(keys)
	for _, s := range []string{fmt.Sprint(keys), fmt.Sprintf("%v %+v %#v", keys, keys, keys), fmt.Sprintf("%v %+v", c, c)} {
		if strings.Contains(s, key) || strings.Contains(s, string(raw)) || strings.Contains(s, fmt.Sprint(raw)) {
			t.Fatalf("formatted keyring or codec shows key material: %s", s)
		}
	}
}
