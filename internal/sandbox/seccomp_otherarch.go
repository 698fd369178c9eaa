//go:build linux && !amd64 && !arm64

package sandbox

// No filter is built for other architectures: the start-up probe then
// refuses bwrap mode (auto falls back, naming it).
const (
	auditArch = 0
	x32Bit    = 0
)
