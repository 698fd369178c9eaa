package codec

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"
)

// DecodeError says a payload could not be decrypted: its key id is not in
// the key file, or it fails authentication under the key listed for it.
// Retrying with the same key file cannot help.
type DecodeError struct {
	KeyID string
	// Held lists the key ids the key file has (never their keys).
	Held []string
	// Problem says what failed.
	Problem string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decrypt payload under key id %q: %s (the encryption key file holds %s)", e.KeyID, e.Problem, strings.Join(e.Held, ", "))
}

// IsDecodeError reports whether err (or what it wraps) is a *DecodeError.
func IsDecodeError(err error) bool {
	var d *DecodeError
	return errors.As(err, &d)
}

// decodeFailure wraps a DecodeError so that, inside a worker, it fails the
// workflow task (which the server retries, so adding the key and restarting
// the worker resumes the run) rather than the workflow execution.
func (c *Codec) decodeFailure(id, problem string) error {
	return converter.NewWorkflowTaskFailureError(&DecodeError{KeyID: id, Held: c.keys.IDs(), Problem: problem})
}
