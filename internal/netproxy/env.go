package netproxy

import (
	"net/netip"
	"strconv"
	"strings"
)

// Port is where a command's proxy listens inside its network namespace
// (127.0.0.1 there is the sandbox's own loopback).
const Port = 3128

// loopbackNames stay direct: inside the sandbox loopback is the command's
// own (a server a test starts), unless the allowlist names one of them.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// Env are the variables that send a command's HTTP clients to its proxy.
// NO_PROXY lists the loopback names except those allow names (an internal
// mirror on the host's loopback): a listed destination must reach the
// proxy, and NO_PROXY cannot say "this port only" to every client. It
// always holds directLoopback's address, its first IPv4 loopback entry:
// the worker's own services inside the sandbox (an agent CLI's model
// gateway) listen there, and their clients must not go to the proxy.
func Env(allow *AllowList) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(Port)
	var direct []string
	for _, name := range loopbackNames {
		if !allow.namesLoopback(name) {
			direct = append(direct, name)
		}
	}
	if a := allow.directLoopback(); a != "127.0.0.1" {
		direct = append(direct, a)
	}
	env := []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u}
	noProxy := strings.Join(direct, ",")
	return append(env, "NO_PROXY="+noProxy, "no_proxy="+noProxy)
}

// namesLoopback reports whether an entry of the list is the loopback name
// (or address) name, with any port; "localhost" also covers 127.0.0.1
// and ::1 entries, which is where it leads.
func (l *AllowList) namesLoopback(name string) bool {
	if l == nil {
		return false
	}
	for _, e := range l.entries {
		switch {
		case e.host != "" && e.host == name:
			return true
		case e.addr.IsValid() && (e.addr.String() == name || name == "localhost" && e.addr.IsLoopback()):
			return true
		}
	}
	return false
}

// directLoopback is the sandbox's loopback address that NO_PROXY keeps
// direct: 127.0.0.1, or when the list names it, the first of 127.0.0.2,
// 127.0.0.3, ... that no entry names (the sandbox's lo answers on all of
// 127/8).
func (l *AllowList) directLoopback() string {
	a := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	for l.namesLoopback(a.String()) {
		a = a.Next()
	}
	return a.String()
}
