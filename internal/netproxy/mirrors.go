package netproxy

import (
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Mirror is a package registry the worker's own environment names
// (docs/security.md#package-registries). While RALPH_SANDBOX_ALLOW_HOSTS is
// unset, commands reach its exact host and port through the proxy even at a
// private or special-purpose address: a team's internal mirror usually
// lives at one, and here even the public Go module proxy resolved to one.
type Mirror struct {
	Host string // lower case, no trailing dot; an IP literal without brackets
	Port int
	// From is the variable that named it, or "GOPROXY default" and the like
	// for a toolchain's public default while its variable is unset.
	From string
}

// String is host:port, as the start line shows it.
func (m Mirror) String() string { return net.JoinHostPort(m.Host, strconv.Itoa(m.Port)) }

// registryVar is one variable that names package registries, and how its
// value lists them.
type registryVar struct {
	name  string
	split func(string) []string // the URLs in a value
	// def is the toolchain's public default while every variable of group
	// is unset; group defaults to name alone.
	def   []string
	group []string
}

// Toolchain defaults: what the tool itself uses when no variable says.
var (
	goProxyDefault = []string{"https://proxy.golang.org"}
	goSumDefault   = []string{"https://sum.golang.org"}
	npmDefault     = []string{"https://registry.npmjs.org"}
	pypiDefault    = []string{"https://pypi.org", "https://files.pythonhosted.org"}
)

// registryVars are the variables read, in the order mirrors are listed;
// CARGO_REGISTRIES_<NAME>_INDEX are read after them.
var registryVars = []registryVar{
	{name: "GOPROXY", split: goProxyURLs, def: goProxyDefault},
	{name: "GOSUMDB", split: goSumDBURLs, def: goSumDefault},
	{name: "npm_config_registry", split: one, def: npmDefault, group: []string{"npm_config_registry", "NPM_CONFIG_REGISTRY"}},
	{name: "NPM_CONFIG_REGISTRY", split: one},
	{name: "YARN_NPM_REGISTRY_SERVER", split: one},
	{name: "PIP_INDEX_URL", split: one, def: pypiDefault},
	{name: "PIP_EXTRA_INDEX_URL", split: strings.Fields},
	{name: "UV_DEFAULT_INDEX", split: one, def: pypiDefault, group: []string{"UV_DEFAULT_INDEX", "UV_INDEX_URL"}},
	{name: "UV_INDEX_URL", split: one},
	{name: "UV_INDEX", split: uvIndexURLs},
	{name: "UV_EXTRA_INDEX_URL", split: strings.Fields},
}

// Mirrors reads the registries environ (the worker's environment, as
// os.Environ) names, and the toolchains' public defaults for those left
// unset. Values that are not http(s) URLs (paths, file:, ssh:, direct,
// off) name nothing the proxy carries and are skipped; an http(s) value
// without a usable host is a problem, named by its variable only (a
// registry URL may hold a password). An empty variable counts as unset.
func Mirrors(environ []string) (mirrors []Mirror, problems []string) {
	env := map[string]string{}
	var cargo []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		env[k] = v
		if cargoIndexVar(k) {
			cargo = append(cargo, k)
		}
	}
	seen := map[string]bool{}
	add := func(from string, urls []string) {
		for _, raw := range urls {
			m, ok, bad := parseRegistryURL(raw)
			switch {
			case bad:
				problems = append(problems, from+": not an http(s) URL with a host name or address; no mirror taken from it")
			case ok && !seen[m.String()]:
				seen[m.String()] = true
				m.From = from
				mirrors = append(mirrors, m)
			}
		}
	}
	for _, v := range registryVars {
		if value, set := env[v.name]; set {
			add(v.name, v.split(value))
			continue
		}
		group := v.group
		if group == nil {
			group = []string{v.name}
		}
		if v.def != nil && !slices.ContainsFunc(group, func(n string) bool { _, set := env[n]; return set }) {
			add(v.name+" default", v.def)
		}
	}
	slices.Sort(cargo)
	for _, k := range cargo {
		add(k, []string{strings.TrimPrefix(env[k], "sparse+")})
	}
	return mirrors, problems
}

// RegistryVar reports whether name is one of the variables Mirrors reads;
// the sandbox passes these to commands so that they use the same registries.
func RegistryVar(name string) bool {
	return cargoIndexVar(name) || slices.ContainsFunc(registryVars, func(v registryVar) bool { return v.name == name })
}

// cargoIndexVar: CARGO_REGISTRIES_<NAME>_INDEX.
func cargoIndexVar(name string) bool {
	return strings.HasPrefix(name, "CARGO_REGISTRIES_") && strings.HasSuffix(name, "_INDEX")
}

func one(v string) []string { return []string{strings.TrimSpace(v)} }

// goProxyURLs reads GOPROXY as the go command does: entries separated by
// ',' or '|', "direct" and "off" end the list, and an entry with a dot or
// colon but no scheme is https.
func goProxyURLs(v string) []string {
	var out []string
	for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' }) {
		e = strings.TrimSpace(e)
		if e == "direct" || e == "off" {
			break
		}
		if strings.ContainsAny(e, ".:/") && !strings.Contains(e, ":/") && !filepath.IsAbs(e) {
			e = "https://" + e
		}
		out = append(out, e)
	}
	return out
}

// goSumDBURLs reads GOSUMDB: "off", "name", "name+key" or "name+key url";
// without a URL the database is https://name.
func goSumDBURLs(v string) []string {
	f := strings.Fields(v)
	switch {
	case len(f) == 0 || f[0] == "off":
		return nil
	case len(f) > 1:
		return []string{f[1]}
	}
	name, _, _ := strings.Cut(f[0], "+")
	return []string{"https://" + name}
}

// uvIndexURLs reads UV_INDEX: space-separated [name=]url entries.
func uvIndexURLs(v string) []string {
	var out []string
	for _, e := range strings.Fields(v) {
		if name, u, ok := strings.Cut(e, "="); ok && !strings.Contains(name, "://") {
			e = u
		}
		out = append(out, e)
	}
	return out
}

// parseRegistryURL reads one registry URL: ok with the mirror for an
// http(s) URL with a host, bad for an http(s) URL without a usable one,
// neither for anything the proxy does not carry.
func parseRegistryURL(raw string) (m Mirror, ok, bad bool) {
	scheme, _, found := strings.Cut(raw, "://")
	if !found || !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
		return Mirror{}, false, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return Mirror{}, false, true
	}
	port := 443
	if strings.EqualFold(u.Scheme, "http") {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return Mirror{}, false, true
		}
	}
	host := canonHost(u.Hostname())
	if _, err := netip.ParseAddr(host); err != nil && !validHostName(host) {
		return Mirror{}, false, true
	}
	return Mirror{Host: host, Port: port}, true, false
}

// canonHost is how a host compares: a name normalised, an address in its
// canonical form (an IPv4-mapped one as IPv4).
func canonHost(h string) string {
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return normHost(h)
}

// WithMirrors is l that also lets each mirror's exact host and port through
// at a private or special-purpose address, while l has no entries:
// RALPH_SANDBOX_ALLOW_HOSTS, when set, decides alone.
func (l *AllowList) WithMirrors(ms []Mirror) *AllowList {
	out := &AllowList{mirrors: slices.Clone(ms)}
	if l != nil {
		out.entries = l.entries
	}
	return out
}

// Mirrors are the registries the list lets through beyond public
// addresses: none when RALPH_SANDBOX_ALLOW_HOSTS has entries.
func (l *AllowList) Mirrors() []Mirror {
	if l == nil || len(l.entries) > 0 {
		return nil
	}
	return l.mirrors
}

// mirrored reports whether host:port, as the client asked for it, is a
// mirror's.
func (l *AllowList) mirrored(host string, port int) bool {
	host = canonHost(host)
	for _, m := range l.Mirrors() {
		if m.Host == host && m.Port == port {
			return true
		}
	}
	return false
}
