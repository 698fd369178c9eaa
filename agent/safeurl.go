package agent

// SafeURL is a URL as it may be logged: credentials (userinfo), the query
// (some gateways carry keys there) and the fragment removed.
func SafeURL(raw string) string { return safeURL(raw) }
