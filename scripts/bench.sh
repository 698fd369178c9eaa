#!/usr/bin/env bash
# `make bench`: Ralph's benchmarks (docs/benchmarks.md), run by cmd/ralphbench.
#   scripts/bench.sh [-only overhead,cancel] [-with-cluster] [...]   (-h lists every flag)
#   scripts/bench.sh -only section41    SPEC 41's benchmarks side by side, one report with its goals
# RALPH_BENCH_MD names the Markdown report file (default: one in $TMPDIR).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./cmd/ralphbench -repo . ${RALPH_BENCH_MD:+-md "$RALPH_BENCH_MD"} "$@"
