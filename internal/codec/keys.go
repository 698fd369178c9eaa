// Package codec encrypts Temporal payloads with AES-256-GCM. A key file
// lists one key per line; the first key encrypts and every key decrypts, so
// a key is rotated by putting a new one first and keeping the old ones until
// no open history needs them.
package codec

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// maxKeyIDLen bounds a key id: it travels in every payload's metadata.
const maxKeyIDLen = 64

// Keyring holds the keys of a key file. Its String and GoString never show
// key material, so a Keyring that reaches a log line leaks nothing.
type Keyring struct {
	ids  []string // file order; ids[0] encrypts
	keys map[string][]byte
}

// EncryptID is the id of the key new payloads are encrypted under.
func (k *Keyring) EncryptID() string { return k.ids[0] }

// IDs lists the key ids in file order.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

func (k *Keyring) String() string   { return "codec.Keyring{ids: " + strings.Join(k.ids, ",") + "}" }
func (k *Keyring) GoString() string { return k.String() }

// LoadKeyFile reads and parses the key file at path.
func LoadKeyFile(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key file: %w", err)
	}
	defer f.Close()
	return ParseKeys(f, path)
}

// ParseKeys parses lines of "<key id> <base64 of 32 bytes>". Blank lines and
// lines starting with '#' are skipped. name is used in error messages, which
// name the line and the key id but never the key material.
func ParseKeys(r io.Reader, name string) (*Keyring, error) {
	k := &Keyring{keys: make(map[string][]byte)}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("encryption key file %s line %d: want \"<key id> <base64 of %d bytes>\", got %d field(s)", name, line, KeySize, len(fields))
		}
		id, encoded := fields[0], fields[1]
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("encryption key file %s line %d: %w", name, line, err)
		}
		if _, dup := k.keys[id]; dup {
			return nil, fmt.Errorf("encryption key file %s line %d: key id %q is listed twice", name, line, id)
		}
		key, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			// The decoder's error quotes an offset, never the text; still,
			// say only what is wrong.
			return nil, fmt.Errorf("encryption key file %s line %d: key %q is not standard base64 (generate one with: head -c %d /dev/urandom | base64)", name, line, id, KeySize)
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("encryption key file %s line %d: key %q is %d bytes, want %d (generate one with: head -c %d /dev/urandom | base64)", name, line, id, len(key), KeySize, KeySize)
		}
		if bytes.Equal(key, make([]byte, KeySize)) {
			return nil, fmt.Errorf("encryption key file %s line %d: key %q is all zero bytes", name, line, id)
		}
		k.ids = append(k.ids, id)
		k.keys[id] = key
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("encryption key file %s: read: %w", name, err)
	}
	if len(k.ids) == 0 {
		return nil, fmt.Errorf("encryption key file %s: no keys (want lines of \"<key id> <base64 of %d bytes>\")", name, KeySize)
	}
	return k, nil
}

// checkKeyID keeps ids short and printable: they are shown in errors and
// stored in every payload's metadata.
func checkKeyID(id string) error {
	if len(id) > maxKeyIDLen {
		return fmt.Errorf("key id is longer than %d bytes", maxKeyIDLen)
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return errors.New("key id must be printable ASCII without spaces")
		}
	}
	return nil
}
