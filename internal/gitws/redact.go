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
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		// scp-like "user@host:path" and plain paths: keep what follows the
		// last '@' before the first ':' (the user part may be a token).
		if at := strings.LastIndex(raw, "@"); at >= 0 && !strings.Contains(raw[:at], "/") {
			return redactedMark + raw[at:]
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User(redactedMark)
	}
	if u.RawQuery != "" {
		u.RawQuery = redactedMark
	}
	u.Fragment = ""
	return u.String()
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
