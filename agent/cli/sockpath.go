package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// maxSocketPath is what a unix socket address holds (sun_path, with room
// for the terminating byte).
const maxSocketPath = 100

// onUnixPath calls f with a name for path short enough for a socket
// address: path itself, or the name below /proc/self/fd of its directory
// held open (an attempt's home can lie deep).
func onUnixPath[T any](path string, f func(string) (T, error)) (T, error) {
	if len(path) < maxSocketPath {
		return f(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		var zero T
		return zero, err
	}
	defer dir.Close()
	return f(fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
}

func dialUnix(path string) (net.Conn, error) {
	return onUnixPath(path, func(p string) (net.Conn, error) { return net.Dial("unix", p) })
}

func listenUnixPath(path string) (net.Listener, error) {
	return onUnixPath(path, func(p string) (net.Listener, error) { return net.Listen("unix", p) })
}
