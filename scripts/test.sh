#!/usr/bin/env bash
# Runs every test of the project on a fresh machine that has Go:
#   1. installs what the tests need when absent (Temporal CLI for the dev
#      server; PostgreSQL and the Temporal server for the cluster suite);
#   2. go vet, then go test -race over every package: unit tests, replay of
#      recorded histories and the real-stack suite against the dev server;
#   3. the real-stack suite again against a PostgreSQL-backed Temporal cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"

bash scripts/install-temporal-cli.sh

echo "== go vet"
go vet ./...

echo "== go test (unit, replay, dev-server integration)"
go test -race -count=1 -timeout 40m ./...

echo "== go test (integration against PostgreSQL-backed Temporal cluster)"
# The verbose log is kept whole; on success only the test lines are shown.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if bash scripts/cluster.sh -- env RALPH_TEST_CLUSTER=1 \
    go test -count=1 -v -timeout 30m -run 'TestRealStack' ./integration/ >"$log" 2>&1; then
  grep -E '^(integration suite|=== RUN|--- |    [a-z_]+\.go:|ok |PASS$)' "$log"
else
  status=$?
  tail -n 400 "$log"
  exit "$status"
fi
