package netproxy

import "strconv"

// Port is where a command's proxy listens inside its network namespace
// (127.0.0.1 there is the sandbox's own loopback).
const Port = 3128

// Env are the variables that send a command's HTTP clients to its proxy.
// Loopback stays direct: inside the sandbox it is the command's own.
func Env() []string {
	u := "http://127.0.0.1:" + strconv.Itoa(Port)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1"}
}
