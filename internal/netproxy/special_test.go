package netproxy

import (
	"net"
	"net/netip"
	"testing"
)

func TestSpecialPurposeAndEmbeddedIPv4(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.0.9": RuleSpecial, "192.0.2.2": RuleSpecial, "198.18.0.1": RuleSpecial, "198.19.255.1": RuleSpecial,
		"198.51.100.7": RuleSpecial, "203.0.113.5": RuleSpecial, "240.0.0.1": RuleSpecial, "2001:db8::1": RuleSpecial,
		"64:ff9b::c000:202": RuleSpecial, "2002:c000:0202::1": RuleSpecial, "::c000:202": RuleSpecial,
		"64:ff9b::7f00:1": RuleLoopback, "2002:0a00:0001::": RulePrivate, "::ffff:192.0.2.2": RuleSpecial,
		"64:ff9b::a9fe:a9fe": RuleLinkLocal, "8.8.8.8": "", "2606:4700::1111": "", "64:ff9b::808:808": "",
	} {
		if got := Classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestThisHostCoversEveryInterfaceAddress(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("interface addresses: %v %v", addrs, err)
	}
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.(*net.IPNet).IP)
		if !thisHost(ip) {
			t.Errorf("%s is not recognised as this host's", ip)
		}
		if ip.Is4() && !thisHost(netip.AddrFrom16(ip.As16())) {
			t.Errorf("::ffff:%s is not recognised as this host's", ip)
		}
	}
	if thisHost(netip.MustParseAddr("8.8.8.8")) {
		t.Errorf("8.8.8.8 counted as this host's")
	}
}
