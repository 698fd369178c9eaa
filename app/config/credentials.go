package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/contrib/envconfig"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// credentialVars are the standard variables a Temporal credential comes from.
func credentialVars() []string {
	return []string{
		"TEMPORAL_API_KEY",
		"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_DATA",
		"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_CLIENT_KEY_DATA",
	}
}

// CredentialsError says that the Temporal server refused the client's
// credentials. Retrying cannot help, so the worker fails at start with it.
type CredentialsError struct {
	Address   string
	Namespace string
	// Sources names where the credentials came from (variable names, the
	// envconfig profile), never their values.
	Sources string
	Err     error
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("the Temporal server at %s refused the credentials for namespace %q (%s); they came from %s: check them, or that this identity may use the namespace",
		e.Address, e.Namespace, refusal(e.Err), e.Sources)
}

func (e *CredentialsError) Unwrap() error { return e.Err }

// refused reports whether err is the server refusing the caller's identity:
// gRPC Unauthenticated (no or a bad credential) or PermissionDenied (a
// credential that may not use this namespace).
func refused(err error) bool {
	if err == nil {
		return false
	}
	if errors.As(err, new(*serviceerror.PermissionDenied)) {
		return true
	}
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}

// refusal is the code and the server's message, without the SDK's wrapping.
func refusal(err error) string {
	var pd *serviceerror.PermissionDenied
	if errors.As(err, &pd) {
		return "PermissionDenied: " + pd.Message
	}
	if st, ok := status.FromError(err); ok {
		return st.Code().String() + ": " + st.Message()
	}
	return shortCause(err)
}

// CredentialSources names where this process's Temporal credentials come
// from: the credential variables that are set and the envconfig profile when
// its file exists. It never reads or returns a value.
func CredentialSources(env Env) string {
	if env == nil {
		env = OSEnv
	}
	var set []string
	for _, v := range credentialVars() {
		if _, ok := lookup(env, v); ok {
			set = append(set, v)
		}
	}
	file, _ := lookup(env, "TEMPORAL_CONFIG_FILE")
	if file == "" {
		file = envconfig.DefaultConfigFilePath()
	}
	profile, _ := lookup(env, "TEMPORAL_PROFILE")
	if profile == "" {
		profile = envconfig.DefaultConfigFileProfile
	}
	if _, err := os.Stat(file); err == nil {
		set = append(set, fmt.Sprintf("the envconfig profile %q of %s", profile, file))
	}
	if len(set) == 0 {
		return "nowhere: no TEMPORAL_API_KEY, TEMPORAL_TLS_CLIENT_CERT_* / TEMPORAL_TLS_CLIENT_KEY_* or envconfig profile is set, and this server requires one"
	}
	return strings.Join(set, ", ")
}
