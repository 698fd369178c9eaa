// Package netproxy is the worker's filtering HTTP proxy: the only way out of
// a sandboxed command's network namespace (docs/security.md#the-network). It serves plain
// HTTP and CONNECT, resolves names itself and checks every address it dials,
// so a name that resolves to a forbidden address is refused whatever it was
// called.
package netproxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Rules a destination is refused by; the 403 body and the transcript name them.
const (
	RuleLoopback    = "loopback"
	RulePrivate     = "private"
	RuleLinkLocal   = "link-local"
	RuleMulticast   = "multicast"
	RuleUnspecified = "unspecified"
	RuleNotAllowed  = "not in RALPH_SANDBOX_ALLOW_HOSTS"
	// RuleSpecial: an IANA special-purpose range (documentation,
	// benchmarking, reserved, protocol assignments).
	RuleSpecial = "special-purpose"
	// RuleThisHost: an address of one of the worker host's own interfaces.
	RuleThisHost = "this host"
)

// sharedAddressSpace is 100.64/10 (carrier-grade NAT), which netip does not
// count as private but which reaches internal services all the same.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// thisNetwork is 0/8: Linux routes 0.0.0.0 to the local host.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// Classify names the rule that forbids addr, or "" when it is a public
// unicast address. An IPv4 address embedded in IPv6 (mapped, compatible,
// NAT64, 6to4) is judged as that IPv4 address.
func Classify(addr netip.Addr) string {
	a := embeddedIPv4(addr)
	if rule := classifyBasic(a); rule != "" {
		return rule
	}
	for _, p := range specialPurpose {
		if p.Contains(a) {
			return RuleSpecial
		}
	}
	return ""
}

// classifyBasic applies the loopback, private, link-local, multicast and
// unspecified rules.
func classifyBasic(a netip.Addr) string {
	switch {
	case a.IsUnspecified() || (a.Is4() && thisNetwork.Contains(a)):
		return RuleUnspecified
	case a.IsLoopback():
		return RuleLoopback
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return RuleMulticast
	case a.IsLinkLocalUnicast():
		return RuleLinkLocal
	case a.IsPrivate() || (a.Is4() && sharedAddressSpace.Contains(a)):
		return RulePrivate
	case a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return RuleMulticast // broadcast: not one host
	}
	return ""
}

// entry is one RALPH_SANDBOX_ALLOW_HOSTS item.
type entry struct {
	host     string     // lower case, no trailing dot; "" for an address entry
	wildcard bool       // "*.domain": host is "domain", any subdomain matches
	addr     netip.Addr // valid for an address entry
	port     int        // 0: any port
}

// AllowList is a parsed RALPH_SANDBOX_ALLOW_HOSTS. A nil or empty list
// allows every public destination, and its mirrors (WithMirrors) also at a
// private or special-purpose address; a non-empty one allows only the
// listed destinations, and a listed one is allowed even when private or
// loopback.
type AllowList struct {
	entries []entry
	mirrors []Mirror
}

// ParseAllowList parses entries of the forms host, *.domain, host:port, ip,
// ip:port ([v6]:port for IPv6 with a port).
func ParseAllowList(items []string) (*AllowList, error) {
	l := &AllowList{}
	for _, raw := range items {
		item := strings.TrimSpace(raw)
		if item == "" {
			continue
		}
		e, err := parseEntry(item)
		if err != nil {
			return nil, fmt.Errorf("RALPH_SANDBOX_ALLOW_HOSTS entry %q: %v", raw, err)
		}
		l.entries = append(l.entries, e)
	}
	return l, nil
}

func parseEntry(item string) (entry, error) {
	bare := item
	if strings.HasPrefix(item, "[") && strings.HasSuffix(item, "]") {
		bare = item[1 : len(item)-1]
	}
	if a, err := netip.ParseAddr(bare); err == nil {
		return entry{addr: a.Unmap()}, nil
	}
	host, portText := item, ""
	if h, p, err := net.SplitHostPort(item); err == nil {
		host, portText = h, p
	} else if strings.Count(item, ":") == 1 || strings.HasPrefix(item, "[") {
		return entry{}, fmt.Errorf("must be host, *.domain, host:port, ip or ip:port: %v", err)
	}
	var e entry
	if portText != "" {
		p, err := strconv.Atoi(portText)
		if err != nil || p < 1 || p > 65535 {
			return entry{}, fmt.Errorf("port %q must be a number from 1 to 65535", portText)
		}
		e.port = p
	}
	if a, err := netip.ParseAddr(host); err == nil {
		e.addr = a.Unmap()
		return e, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.wildcard, host = true, rest
	}
	host = normHost(host)
	if !validHostName(host) {
		return entry{}, fmt.Errorf("%q is not a host name", host)
	}
	e.host = host
	return e, nil
}

// normHost lower-cases a name and drops the trailing dot of a fully
// qualified one, so "Example.COM." and "example.com" are one host.
func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')) {
				return false
			}
		}
	}
	return true
}

// Empty reports whether the list has no entries: it allows every public
// destination (and its mirrors).
func (l *AllowList) Empty() bool { return l == nil || len(l.entries) == 0 }

// String renders the list as it was configured (normalised).
func (l *AllowList) String() string {
	if l.Empty() {
		return ""
	}
	parts := make([]string, 0, len(l.entries))
	for _, e := range l.entries {
		var s string
		switch {
		case e.addr.IsValid() && e.port != 0:
			s = net.JoinHostPort(e.addr.String(), strconv.Itoa(e.port))
		case e.addr.IsValid():
			s = e.addr.String()
		default:
			s = e.host
			if e.wildcard {
				s = "*." + s
			}
			if e.port != 0 {
				s = net.JoinHostPort(s, strconv.Itoa(e.port))
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// nameAllowed reports whether a listed host entry covers host:port.
func (l *AllowList) nameAllowed(host string, port int) bool {
	if l == nil {
		return false
	}
	host = normHost(host)
	for _, e := range l.entries {
		if e.host == "" || (e.port != 0 && e.port != port) {
			continue
		}
		if host == e.host && !e.wildcard || e.wildcard && strings.HasSuffix(host, "."+e.host) {
			return true
		}
	}
	return false
}

// addrAllowed reports whether a listed address entry covers addr:port.
func (l *AllowList) addrAllowed(addr netip.Addr, port int) bool {
	if l == nil {
		return false
	}
	for _, e := range l.entries {
		if e.addr.IsValid() && e.addr == addr.Unmap() && (e.port == 0 || e.port == port) {
			return true
		}
	}
	return false
}

// Check decides one address the proxy is about to dial for a destination
// asked for as host:port. It returns "" when the address may be dialed, else
// the rule that refuses it. With a list, only listed destinations pass
// (named or by address), private ones included; without one, only public
// unicast addresses, and a mirror's exact host and port also at a private
// or special-purpose one (never at loopback, link-local or this host's).
func (l *AllowList) Check(host string, port int, addr netip.Addr) string {
	if !l.Empty() {
		if l.nameAllowed(host, port) || l.addrAllowed(addr, port) {
			return ""
		}
		return RuleNotAllowed
	}
	rule := Classify(addr)
	switch {
	case rule == "" && thisHost(addr):
		return RuleThisHost
	case (rule == RulePrivate || rule == RuleSpecial) && l.mirrored(host, port):
		if thisHost(addr) {
			return RuleThisHost
		}
		return ""
	}
	return rule
}
