package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Stable payload metadata: histories already written depend on them.
const (
	// Encoding is the metadata "encoding" of an encrypted payload.
	Encoding = "binary/encrypted"
	// MetadataKeyID names the metadata entry holding the key id.
	MetadataKeyID = "encryption-key-id"
)

// Codec is a converter.PayloadCodec: Encode encrypts each payload (its
// metadata and data, marshalled) under the keyring's first key; Decode
// decrypts payloads whose encoding is Encoding and passes every other
// payload through unchanged, so plain input (temporal workflow start
// --input) still works.
type Codec struct {
	keys  *Keyring
	aeads map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New builds a Codec over keys.
func New(keys *Keyring) (*Codec, error) {
	c := &Codec{keys: keys, aeads: make(map[string]cipher.AEAD, len(keys.ids))}
	for _, id := range keys.ids {
		block, err := aes.NewCipher(keys.keys[id])
		if err != nil {
			return nil, fmt.Errorf("encryption key %q: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("encryption key %q: %w", id, err)
		}
		c.aeads[id] = aead
	}
	return c, nil
}

// Encode encrypts every payload under the first key. The key id is also the
// additional authenticated data, so a payload whose key id was edited fails
// to decrypt instead of decoding under another key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.EncryptID()
	aead := c.aeads[id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: marshal: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt payload: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetadataKeyID:              []byte(id),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(id)),
		}
	}
	return out, nil
}

// Decode decrypts encrypted payloads and passes the others through. A key id
// the keyring does not hold, or a payload that fails authentication, is an
// error naming the key id: never garbage.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, c.decodeFailure(id, "the key file does not have this key id; add the key to RALPH_ENCRYPTION_KEY_FILE")
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return nil, c.decodeFailure(id, fmt.Sprintf("ciphertext is too short (%d bytes)", len(data)))
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, c.decodeFailure(id, "authentication failed (the payload was altered, or the key listed under that id is not the one it was encrypted with)")
		}
		var decoded commonpb.Payload
		if err := proto.Unmarshal(plain, &decoded); err != nil {
			return nil, c.decodeFailure(id, "the decrypted payload does not unmarshal: "+err.Error())
		}
		out[i] = &decoded
	}
	return out, nil
}
