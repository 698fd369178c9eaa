//go:build !linux

package workerapp

// makeNonDumpable has no portable equivalent outside Linux; there the
// commands' environment allowlist is the remaining protection.
func makeNonDumpable() error { return nil }
