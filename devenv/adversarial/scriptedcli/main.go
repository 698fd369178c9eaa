// Command scriptedcli stands in for a coding-agent CLI (Claude Code, Codex,
// opencode) in the adversarial suite: started by the real cli.Provider with
// the real CLI's arguments and environment, in the real sandbox, it does
// what a model's shell command inside that CLI can do. It runs, with sh,
// .scripted-cli/attempt.sh of its working directory (the workspace), or
// continuation.sh when the worker continues the session, passing its
// arguments on.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

func main() {
	role := "attempt.sh"
	// opencode and Claude Code continue with --continue, Codex with resume.
	if slices.Contains(os.Args[1:], "--continue") || slices.Contains(os.Args[1:], "resume") {
		role = "continuation.sh"
	}
	dir, err := os.Getwd()
	if err == nil {
		script := filepath.Join(dir, ".scripted-cli", role)
		err = syscall.Exec("/bin/sh", append([]string{"sh", script}, os.Args[1:]...), os.Environ())
	}
	fmt.Fprintln(os.Stderr, "scriptedcli:", err)
	os.Exit(2)
}
