#!/usr/bin/env bash
# scripts/bench.sh - Ralph's benchmarks (BENCHMARKS.md): orchestration overhead
# per round against a bare activity loop, scale on one worker, cancellation
# latency, worker-crash recovery, prompt cost and history size.
#
# USAGE
#   scripts/bench.sh [ralphbench flags]            dev server only (~10 minutes)
#   scripts/cluster.sh -- scripts/bench.sh [flags] also the PostgreSQL-backed
#                                                  server, beside the dev server,
#                                                  in the overhead benchmark
#   scripts/bench.sh -only overhead,cancel         a subset; `-h` lists every flag
#
# It builds the worker and cmd/ralphbench, starts its own Temporal dev
# server (the temporal CLI, installed by scripts/install-temporal-cli.sh when
# absent: nothing else is installed), runs the real worker binary against the
# scripted OpenAI-compatible server, prints the result tables (Markdown) and
# writes them to $RALPH_BENCH_MD (default: a file in $TMPDIR, path printed).
# Benchmarks report; they never fail on slowness. The exit status is non-zero
# only when a benchmark could not run at all.
set -euo pipefail
cd "$(dirname "$0")/.."
GOPATH_BIN="$(go env GOPATH)/bin"
export PATH="$GOPATH_BIN:$PATH"

bash scripts/install-temporal-cli.sh

args=()
# scripts/cluster.sh exports TEMPORAL_ADDRESS together with RALPH_CLUSTER_STATE;
# a TEMPORAL_ADDRESS of the user's own (say, production) cluster is never
# benchmarked unless asked for with RALPH_BENCH_CLUSTER=1.
if [[ -n "${TEMPORAL_ADDRESS:-}" && (-n "${RALPH_CLUSTER_STATE:-}" || "${RALPH_BENCH_CLUSTER:-}" == 1) ]]; then
  args+=(-cluster "$TEMPORAL_ADDRESS" -cluster-namespace "${TEMPORAL_NAMESPACE:-default}")
fi
if [[ -n "${RALPH_BENCH_MD:-}" ]]; then
  args+=(-md "$RALPH_BENCH_MD")
fi

bin_dir=$(mktemp -d "${TMPDIR:-/tmp}/ralphbench-bin.XXXXXX")
trap 'rm -rf "$bin_dir"' EXIT
go build -o "$bin_dir/ralphbench" ./cmd/ralphbench
go build -o "$bin_dir/worker" ./worker
"$bin_dir/ralphbench" -repo . -worker-bin "$bin_dir/worker" "${args[@]}" "$@"
