package wire

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	openai "github.com/sashabaranov/go-openai"
)

// modelFailure is one failed model call, classified.
type modelFailure struct {
	transient bool
	status    int // HTTP status, 0 when no response arrived
	text      string
	code      string // the error object's code, when it is a string
	typ       string // the error object's type
}

// classify decides whether a failed model call is worth retrying: 408, 409,
// 425, 429 and 5xx, bodies that are not JSON, and network failures are
// transient; every other refusal (400, 401, 403, 404, 422, context
// overflow, an exhausted quota) is ordinary. status is the last HTTP status
// seen (0 if none).
func classify(err error, status int) modelFailure {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &reqErr):
		// First: a body whose "error" is not an OpenAI error object (Ollama
		// sends {"error": "text"}) arrives as a RequestError wrapping an
		// empty APIError; the body is what the provider said.
		f := modelFailure{status: reqErr.HTTPStatusCode, text: string(reqErr.Body)}
		if f.text == "" && reqErr.Err != nil {
			f.text = reqErr.Err.Error()
		}
		f.transient = transientStatus(f.status) && !permanent(f.text)
		return f
	case errors.As(err, &apiErr):
		code, _ := apiErr.Code.(string)
		f := modelFailure{status: apiErr.HTTPStatusCode, text: apiErr.Message, code: code, typ: apiErr.Type}
		if f.status == 0 {
			f.status = status
		}
		if code == "insufficient_quota" || apiErr.Type == "insufficient_quota" {
			// A 429 that waiting will not fix.
			return f
		}
		f.transient = transientStatus(f.status) && !permanent(f.text)
		return f
	case errors.Is(err, errNoChoices), errors.Is(err, errStreamIncomplete):
		return modelFailure{transient: true, status: status, text: err.Error()}
	case isBadBody(err):
		// A 2xx whose body is not a chat completion: a proxy's page or a
		// cut-off body.
		return modelFailure{transient: true, status: status, text: "response body is not a valid chat completion: " + err.Error()}
	case errors.Is(err, errModelIdle), isNetwork(err):
		return modelFailure{transient: true, status: status, text: err.Error()}
	default:
		return modelFailure{status: status, text: err.Error()}
	}
}

// quota: the key is out of quota (a 429 that waiting a minute will not
// fix), or the account out of balance (402: DeepSeek, OpenRouter, Mistral,
// Anthropic).
func (f modelFailure) quota() bool {
	return f.code == "insufficient_quota" || f.typ == "insufficient_quota" || f.status == http.StatusPaymentRequired
}

// permanentPhrases name server misconfigurations that a 5xx reports and
// that no retry or wait mends (llama.cpp started without --jinja refuses
// every request with tools).
var permanentPhrases = []string{"requires --jinja", "--jinja flag"}

func transientStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// permanent: the error text names a misconfiguration of the server.
func permanent(text string) bool {
	for _, p := range permanentPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

func isBadBody(err error) bool {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &syntaxErr) || errors.As(err, &typeErr)
}

// isNetwork: a connection refused, reset or dropped, a DNS failure, a body
// cut short. Configuration mistakes (a bad URL scheme, an untrusted
// certificate) are not network trouble and are not retried.
func isNetwork(err error) bool {
	var certErr *tls.CertificateVerificationError
	var authorityErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &authorityErr) || errors.As(err, &hostErr) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		msg := urlErr.Err.Error()
		return !strings.Contains(msg, "unsupported protocol scheme") && !strings.Contains(msg, "no Host in request URL")
	}
	return false
}

func (f modelFailure) describe(secret string) string {
	text := clip(Redact(f.text, secret))
	if f.status != 0 {
		return Redact(fmt.Sprintf("HTTP %d: %s", f.status, text), secret)
	}
	return text
}
