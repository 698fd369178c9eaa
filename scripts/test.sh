#!/usr/bin/env bash
# `make test`: every test, on a fresh machine that has Go (as root, apt-get
# installs what is missing): static checks, go test -race ./... (unit,
# replay, the real-stack suite on the dev server), then the real-stack suite
# again on the PostgreSQL-backed cluster (devenv/temporalserver).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v git >/dev/null || need+=(git)
command -v bwrap >/dev/null || need+=(bubblewrap)
# The adversarial suite (devenv/adversarial) acts as a model would: python3,
# curl, and util-linux's unshare and fallocate.
command -v python3 >/dev/null || need+=(python3)
command -v curl >/dev/null || need+=(curl)
command -v unshare >/dev/null || need+=(util-linux)
[[ -x /usr/lib/postgresql/15/bin/initdb ]] || need+=(postgresql-15)
# The agent CLIs (scripts/install-agent-clis.sh) come from the npm registry.
command -v npm >/dev/null || need+=(nodejs npm)
if ((${#need[@]})); then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

echo "== Temporal CLI and server build (cached after the first time)"
go run ./cmd/ralph-devserver -install-only
go run ./cmd/ralph-cluster -build-only

echo "== the agent CLIs (pinned in devenv/agentclis) into /opt/ralph-agents"
scripts/install-agent-clis.sh

echo "== go vet, staticcheck, workflowcheck"
go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 -config scripts/workflowcheck.yaml ./workflows/...

echo "== deploy/kubernetes: the manifests' structure test (a Go module of its own: ./... skips it)"
(cd deploy/kubernetes && go vet ./... && go test -count=1 ./...)

echo "== go test -race (unit, replay, dev-server integration)"
# -p 1: one package at a time, so the real-stack suite never shares two
# cores with another package's dev server (timeouts would measure the load).
go test -race -p 1 -count=1 -timeout 40m ./...

echo "== go test (integration against the PostgreSQL-backed Temporal cluster)"
RALPH_TEST_CLUSTER=1 go test -count=1 -v -timeout 30m -run 'TestRealStack' ./devenv/integration/
