// Package codecserver is the ralph-codec-server binary: the SDK's codec
// server HTTP protocol (/encode, /decode) over the Ralph payload codec, for
// the Temporal UI (--ui-codec-endpoint) and CLI (--codec-endpoint), with CORS
// for the configured origins and an optional bearer token.
package codecserver

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// MaxBodyBytes bounds one request: a history page of payloads, not a dump.
const MaxBodyBytes = 16 << 20

// Options configure the handler.
type Options struct {
	// Origins are the browser origins (scheme://host[:port]) allowed to call
	// the server, such as the Temporal UI's. Requests without an Origin
	// header (the CLI, scripts) are not subject to it.
	Origins []string
	// Token, when set, must arrive as "Authorization: Bearer <Token>".
	Token string
}

// corsHeaders are what the Temporal UI sends to a codec server.
const (
	corsAllowHeaders = "Content-Type, X-Namespace, Authorization"
	corsAllowMethods = "POST, OPTIONS"
)

// NewHandler serves codec's /encode and /decode under any path prefix.
func NewHandler(codec converter.PayloadCodec, opts Options) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(codec)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			if !slices.Contains(opts.Origins, origin) {
				http.Error(w, "origin "+origin+" is not allowed (ralph-codec-server --origins)", http.StatusForbidden)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				// Preflights carry no credentials; answer them before the token check.
				h.Set("Access-Control-Allow-Methods", corsAllowMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if opts.Token != "" && !bearerMatches(r.Header.Get("Authorization"), opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ralph-codec-server"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		inner.ServeHTTP(w, r)
	})
}

// bearerMatches compares in constant time, so the token cannot be guessed
// byte by byte from response timings.
func bearerMatches(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}
