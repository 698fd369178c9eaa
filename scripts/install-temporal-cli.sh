#!/usr/bin/env bash
# Installs the Temporal CLI (which carries the dev server) from the Go module
# proxy when it is not on PATH. v1.5.1 is the newest version that
# `go install` can build (later ones carry replace directives).
set -euo pipefail
export PATH="$(go env GOPATH)/bin:$PATH"
if command -v temporal >/dev/null 2>&1; then
  exit 0
fi
echo "installing the Temporal CLI v1.5.1 (first build takes ~5 minutes)" >&2
go install github.com/temporalio/cli/cmd/temporal@v1.5.1
