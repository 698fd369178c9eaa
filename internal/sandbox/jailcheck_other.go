//go:build !linux

package sandbox

const (
	jailCheckArg   = "__ralph-sandbox-jail-check"
	jailFailPrefix = "jail check: "
)

func sessionKeyring() int { return 0 }
