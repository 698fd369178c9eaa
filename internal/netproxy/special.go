package netproxy

import (
	"net"
	"net/netip"
)

// specialPurpose are the IANA special-purpose ranges no public service
// lives in (the IPv4 and IPv6 Special-Purpose Address Registries), beyond
// loopback, private, link-local, multicast and unspecified.
var specialPurpose = []netip.Prefix{
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHID, ...)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("5f00::/16"),       // segment routing SIDs
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated) that is not an IPv4 address
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	compatible = netip.MustParsePrefix("::/96")
)

// embeddedIPv4 is the IPv4 address an IPv6 address carries (mapped
// ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4
// 2002:aabb:ccdd::), or addr itself: the packet ends up there.
func embeddedIPv4(addr netip.Addr) netip.Addr {
	a := addr.Unmap()
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6]))
	case compatible.Contains(a) && !a.IsLoopback() && !a.IsUnspecified():
		return netip.AddrFrom4([4]byte(b[12:16]))
	}
	return a
}

// thisHost reports whether addr (or the IPv4 address it embeds) belongs to
// one of the worker host's interfaces: a service listening on all
// addresses must not be reached through a public-looking one. The list is
// read for every decision; interfaces come and go.
func thisHost(addr netip.Addr) bool {
	want := embeddedIPv4(addr)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: refuse
	}
	for _, ia := range addrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap().WithZone("") == want.WithZone("") {
			return true
		}
	}
	return false
}
