package gitws

import (
	"net/url"
	"regexp"
	"strings"
)

// redactedMark replaces credentials cut from a URL.
const redactedMark = "REDACTED"

// urlLike finds URLs in free text (git's own messages may echo them).
var urlLike = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s'"]+`)

// RedactURL returns a remote URL fit for a message or a log: the userinfo
// and the query are replaced, so neither a token in the user part nor one in
// a query parameter is ever written anywhere.
func RedactURL(raw string) string {
	if u, ok := redactParsed(strings.TrimSpace(raw)); ok {
		return u
	}
	if at := strings.LastIndex(raw, "@"); at >= 0 && !strings.Contains(raw[:at], "/") {
		// scp-like "user@host:path": the user part may be a token.
		return redactedMark + raw[at:]
	}
	return urlLike.ReplaceAllStringFunc(raw, func(s string) string {
		if u, ok := redactParsed(s); ok {
			return u
		}
		return redactedMark
	})
}

// redactParsed redacts a string that parses as a URL with a host.
func redactParsed(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", false
	}
	if u.User != nil {
		u.User = url.User(redactedMark)
	}
	if u.RawQuery != "" {
		u.RawQuery = redactedMark
	}
	u.Fragment = ""
	return u.String(), true
}

// redactText removes the remote's credentials from any text: the remote as
// configured, and any URL in the text.
func redactText(s, remote string) string {
	if remote != "" {
		if r := RedactURL(remote); r != remote {
			s = strings.ReplaceAll(s, remote, r)
		}
	}
	return urlLike.ReplaceAllStringFunc(s, RedactURL)
}
