#!/usr/bin/env bash
# The test chain in named steps (docs/testing.md). `scripts/test.sh STEP`:
#   install       what is missing (as root, apt-get): git, bubblewrap,
#                 PostgreSQL 15, python3/curl/util-linux, Node.js/npm, the
#                 Temporal CLI and server build, the pinned agent CLIs
#   lint          go vet, staticcheck, workflowcheck, complexity (gocyclo),
#                 deploy/kubernetes vet
#   unit          go test -race -short over every package that starts no
#                 server; needs only Go, git and bubblewrap
#   realstack     the packages that start a server or run the agent CLIs,
#                 and the tests `unit` skips with -short (runs install first)
#   cluster       the cluster subset on the PostgreSQL-backed cluster
#                 (runs install first)
#   kubernetes    deploy/kubernetes' own module: vet and test
#   all           `make test`: install, then every step above, nothing
#                 skipped
set -euo pipefail
cd "$(dirname "$0")/.."

# Packages that start a Temporal server or a cluster, run the agent CLIs, or
# act as the model against real bubblewrap with python3/curl/unshare; run
# one package at a time so two servers never share the cores.
realstack_pkgs=(./agent/cli/ ./devenv/adversarial/ ./devenv/temporalserver/ ./cmd/ralph-local/ ./devenv/integration/)
# Packages whose -short run skips a test that needs a server or the CLIs;
# realstack runs them whole.
mixed_pkgs=(./app/workerapp/ ./app/starterapp/)
# Real-stack tests at once on the one server. Measured on 2 cores in
# docs/testing.md; RALPH_TEST_PARALLEL overrides it.
# On the dev server three at once leave the CPU mostly idle (load average
# below 1 at two); the cluster pass, whose server is heavier, keeps two.
parallel="${RALPH_TEST_PARALLEL:-3}"
cluster_parallel="${RALPH_TEST_PARALLEL:-2}"

# What the cluster changes against the dev server, and only that (why it is
# enough: docs/testing.md#the-cluster-pass): the wire to a multi-service
# frontend, persistence in PostgreSQL across crashes and restarts, SQL
# visibility (search attributes, list), schedules, worker versioning and
# resets.
cluster_tests=(
  FreshSessionsShareOnlyWorkspaceAndReport Outcomes EncryptedHistory # wire, payloads
  ServerRestartMidRun WorkerCrashRoundFinishedByAnotherWorker CancelReachesQuiescence Churn # persistence, restarts
  RateLimitWaitIsDurableAndVisible PauseListResumeStop UpdatesWithTheTemporalCLI TemporalCLI ScheduledStart # visibility
  RollingUpgradeKeepsRunsPinned AutoUpgradeMovesARunningRun RewindAPinnedRunWhoseBuildIsGone RewindToRoundOne # versioning, reset
  Campaign # child workflows, signals to them, a killed worker mid-merge
  Waves # a planning campaign: planner activities, plans approved and replaced by update
)

step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

install() {
  step install
  local need=()
  command -v git >/dev/null || need+=(git)
  command -v bwrap >/dev/null || need+=(bubblewrap)
  # devenv/adversarial acts as a model would: python3, curl, and
  # util-linux's unshare and fallocate.
  command -v python3 >/dev/null || need+=(python3)
  command -v curl >/dev/null || need+=(curl)
  command -v unshare >/dev/null || need+=(util-linux)
  [[ -x /usr/lib/postgresql/15/bin/initdb ]] || need+=(postgresql-15)
  # The agent CLIs (scripts/install-agent-clis.sh) come from the npm registry.
  command -v npm >/dev/null || need+=(nodejs npm)
  if ((${#need[@]})); then
    echo "apt-get install ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
  # The Temporal CLI is cached after the first time (the server the
  # cluster runs: cluster_build).
  go run ./cmd/ralph-devserver -install-only
  # The agent CLIs pinned in devenv/agentclis, into /opt/ralph-agents.
  scripts/install-agent-clis.sh
}

lint() {
  lint_root
  (cd deploy/kubernetes && go vet ./...)
}

lint_root() {
  step lint
  go vet ./...
  go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
  go run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 -config scripts/workflowcheck.yaml ./workflows/...
  complexity
}

# complexity keeps functions small enough to read whole: no non-test
# function over cyclomatic complexity 25, at most 8 over 20 (gocyclo).
complexity() {
  local all over
  # Without -over, gocyclo lists every function and fails only on an error.
  all=$(go run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -ignore '_test\.go$' .)
  over=$(awk '$1 > 20' <<<"$all")
  [[ -z $over ]] || printf 'complexity over 20:\n%s\n' "$over"
  if awk '$1 > 25 { bad = 1 } END { exit !bad }' <<<"$over"; then
    echo "complexity: a function is over 25; split it by meaning" >&2
    return 1
  fi
  if (($(grep -c . <<<"$over") > 8)); then
    echo "complexity: more than 8 functions over 20; split one by meaning" >&2
    return 1
  fi
}

unit() {
  step unit
  local skip pkgs
  skip=$(printf '%s\n' "${realstack_pkgs[@]}" | sed 's|^\./||; s|/$||' | paste -sd'|')
  mapfile -t pkgs < <(go list ./... | grep -Ev "/($skip)\$")
  # -p 2: no package here starts a server, so two share the cores.
  go test -race -short -p 2 -count=1 "${pkgs[@]}"
}

realstack() {
  step realstack
  # -p 1: one server-starting package at a time; -parallel: the real-stack
  # tests that call t.Parallel() share the one server.
  go test -race -p 1 -parallel "$parallel" -count=1 -timeout 40m "${mixed_pkgs[@]}" "${realstack_pkgs[@]}"
}

# cluster_build builds and caches the PostgreSQL-backed cluster's server
# (minutes cold, nothing once cached; a lock makes concurrent builds one).
cluster_build() {
  step cluster_build
  go run ./cmd/ralph-cluster -build-only
}

cluster() {
  step cluster
  cluster_build
  local run
  run="^TestRealStack($(printf '%s\n' "${cluster_tests[@]}" | paste -sd'|'))\$"
  RALPH_TEST_CLUSTER=1 go test -count=1 -parallel "$cluster_parallel" -timeout 30m -run "$run" ./devenv/integration/
}

# deploy/kubernetes is a Go module of its own (kustomize, the Kubernetes API
# types and KEDA stay out of the worker's build): `go test ./...` at the root
# does not reach it.
kubernetes() {
  step kubernetes
  (cd deploy/kubernetes && go vet ./... && go test -count=1 ./...)
}

all() {
  # kube, kpid, build and bpid are global: the EXIT trap reads them after
  # all() returns.
  kube=$(mktemp)
  # The Kubernetes module's download and build (minutes, cold) run while the
  # installs wait on the network and the real-stack tests on timers; its
  # vet is part of it, so lint here checks the root module only.
  timed kubernetes >"$kube" 2>&1 &
  kpid=$!
  # The cluster's server build, cold the longest step, runs niced beside
  # everything up to the cluster pass: it takes the CPU the installs leave
  # while they wait on the network and the real-stack tests while they
  # wait on timers, and yields it to the tests whenever they want it.
  build=$(mktemp)
  nice -n 19 bash -c "$(declare -f step timed cluster_build); timed cluster_build" >"$build" 2>&1 &
  bpid=$!
  trap 'kill "$kpid" "$bpid" 2>/dev/null || true; rm -f "$kube" "$build"' EXIT
  timed install
  timed lint_root
  timed unit
  # The kubernetes module (mostly downloads) ends before the real-stack
  # steps, whose timeouts would otherwise measure its load.
  local rc=0
  wait "$kpid" || rc=$?
  cat "$kube"
  ((rc == 0)) || { echo "deploy/kubernetes failed (rc $rc)" >&2; exit "$rc"; }
  timed realstack
  wait "$bpid" || rc=$?
  cat "$build"
  ((rc == 0)) || { echo "the cluster's server build failed (rc $rc)" >&2; exit "$rc"; }
  timed cluster
}

timed() {
  local t=$SECONDS
  "$1"
  printf '== %s took %dm%02ds\n' "$1" $(((SECONDS - t) / 60)) $(((SECONDS - t) % 60))
}

case "${1:-all}" in
  install | lint | unit | kubernetes | all) timed "${1:-all}" ;;
  realstack | cluster) install && timed "$1" ;;
  *)
    echo "usage: scripts/test.sh [install|lint|unit|realstack|cluster|kubernetes|all]" >&2
    exit 2
    ;;
esac
