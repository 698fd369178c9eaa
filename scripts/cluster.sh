#!/usr/bin/env bash
# scripts/cluster.sh - a real Temporal cluster on this machine, without Docker.
#
# PostgreSQL 15 (Debian packages) + Temporal server v1.29.1 (built from the Go
# module proxy, cached) with all four services in one process, the `default`
# namespace registered, every port on 127.0.0.1. Everything lives in one state
# directory that is removed on exit.
#
# USAGE
#   scripts/cluster.sh -- CMD [ARGS...]
#       Bring the cluster up, run CMD with the variables below exported, tear
#       everything down, exit with CMD's exit status.
#       e.g. scripts/cluster.sh -- go test ./integration/...
#   scripts/cluster.sh up
#       Bring it up, print the variables as `export` lines, run until
#       SIGINT/SIGTERM (Ctrl-C), then tear down.
#   scripts/cluster.sh build
#       Only build and cache the server binaries; prints their directory.
#   Subcommands for a running cluster, named by RALPH_CLUSTER_STATE (which is
#   exported to CMD):
#   scripts/cluster.sh start-server            start the server unless it runs;
#                                              wait until it serves; print its PID
#   scripts/cluster.sh stop-server [--kill]    SIGTERM (--kill: SIGKILL) the
#                                              server and wait until it is gone
#   scripts/cluster.sh restart-server [--kill] stop-server, then start-server
#   scripts/cluster.sh pid | status            current server PID | one-line status
#
# Teardown (trap EXIT INT TERM HUP) stops CMD's process group (the same signal
# first, SIGKILL after 10 s), the server and PostgreSQL, then deletes the state
# directory: no process, port or directory is left.
#
# EXPORTED TO CMD
#   TEMPORAL_ADDRESS               127.0.0.1:<frontend gRPC port>
#   TEMPORAL_NAMESPACE             default
#   RALPH_CLUSTER_HTTP_ADDRESS     127.0.0.1:<frontend HTTP API port>
#   RALPH_CLUSTER_METRICS_ADDRESS  127.0.0.1:<prometheus port> (/metrics)
#   RALPH_CLUSTER_POSTGRES_URL     postgres://temporal:temporal@127.0.0.1:<port>/temporal?sslmode=disable
#   RALPH_CLUSTER_STATE            the state directory
#   RALPH_CLUSTER_SCRIPT           absolute path of this script
#   RALPH_CLUSTER_SERVER_PID       PID of the server as first started
#   RALPH_CLUSTER_SERVER_PID_FILE  file that always holds the current server PID
#   RALPH_CLUSTER_SERVER_LOG       the server's log (stdout+stderr, appended across restarts)
#   RALPH_CLUSTER_RESTART_CMD      sh command: stop the server (SIGTERM) if it runs,
#                                  start it again, wait until it serves, print new PID
#   RALPH_CLUSTER_START_CMD        sh command: start the server if it is not running
#   RALPH_CLUSTER_STOP_CMD         sh command: SIGTERM the server, wait for exit
#                                  (SIGKILL after RALPH_CLUSTER_STOP_TIMEOUT)
#   RALPH_CLUSTER_KILL_CMD         sh command: SIGKILL the server, wait for exit
#   The same lines are in $RALPH_CLUSTER_STATE/cluster.env (`source` it).
#
# RESTART TESTS (Go). The server comes back with the very same config, ports,
# environment and database (workflows, task queues, namespace survive); only
# its PID changes. Signal it yourself, then start it again:
#   sh := func(env string) ([]byte, error) { return exec.Command("sh", "-c", os.Getenv(env)).Output() }
#   b, _ := os.ReadFile(os.Getenv("RALPH_CLUSTER_SERVER_PID_FILE")) // the current PID
#   pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
#   syscall.Kill(pid, syscall.SIGKILL)         // or syscall.SIGTERM
#   sh("RALPH_CLUSTER_STOP_CMD")               // waits until it is gone (no-op if it is)
#   out, err := sh("RALPH_CLUSTER_START_CMD")  // returns once it serves; out = "<new PID>\n"
# or let the script signal it: sh("RALPH_CLUSTER_RESTART_CMD") (SIGTERM + start),
# sh("RALPH_CLUSTER_KILL_CMD") + sh("RALPH_CLUSTER_START_CMD") (SIGKILL + start).
# START_CMD copes with a server that is still dying from a signal just sent.
# Do not poll with kill(pid, 0): the dead server is reparented to PID 1 and may
# stay a zombie for a while. "Serves" means: the frontend answers, the
# namespace is described and history answers DescribeWorkflowExecution
# (an SDK client/worker reconnects by itself). The server runs in its own
# session (setsid), so signalling it never touches the test's process group;
# the commands serialize on a lock in the state dir, so parallel tests are safe.
#
# ENVIRONMENT (inputs, all optional)
#   RALPH_CACHE                 cache root (default ~/.cache/ralph); binaries go in
#                               $RALPH_CACHE/temporal-server-v1.29.1/bin
#   RALPH_CLUSTER_DIR           state dir to create for `--`/`up` (must not exist or be
#                               empty; default: mktemp -d ${TMPDIR:-/tmp}/ralph-cluster.XXXXXX)
#   RALPH_CLUSTER_STATE         the running cluster the server subcommands act on
#   RALPH_CLUSTER_BASE_PORT     use ports BASE..BASE+10 (default: a free random block in 15000-32767)
#   RALPH_CLUSTER_NAMESPACE     namespace to register (default: default)
#   RALPH_CLUSTER_LOG_LEVEL     server log level (default: info)
#   RALPH_CLUSTER_LOG_DIR       copy server.log and postgres.log here at teardown
#   RALPH_CLUSTER_KEEP_STATE=1  stop the processes but keep the state dir
#   RALPH_CLUSTER_PG_DURABLE=1  keep PostgreSQL's fsync/synchronous_commit on
#                               (default off: a throwaway DB, faster tests)
#   RALPH_CLUSTER_READY_TIMEOUT seconds to wait for readiness (default 120)
#   RALPH_CLUSTER_STOP_TIMEOUT  seconds between SIGTERM and SIGKILL (default 20)
#   RALPH_CLUSTER_QUIET=1       only print errors
#   RALPH_PG_BIN                PostgreSQL bin dir (default /usr/lib/postgresql/15/bin;
#                               installed with apt-get when absent and running as root)
#
# PORTS (offsets from the base port, all bound to 127.0.0.1)
#   +0 frontend gRPC (TEMPORAL_ADDRESS)   +1 frontend HTTP API
#   +2 history gRPC   +3 matching gRPC    +4 worker gRPC
#   +5..+8 membership (frontend, history, matching, worker)
#   +9 PostgreSQL     +10 Prometheus metrics
#
# Config: deploy/cluster/temporal-postgres.yaml (env-templated server config)
# and deploy/cluster/dynamicconfig.yaml, copied into the state dir at start.
set -euo pipefail

# A script started in the background by a non-interactive shell (`cluster.sh &`)
# inherits SIGINT/SIGQUIT as ignored, and bash cannot trap a signal ignored at
# entry. Re-exec once with default handling so that SIGINT tears down too.
sigign=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$$/status" 2>/dev/null || true)
if [[ -z "${RALPH_CLUSTER_SIGRESET:-}" && "$sigign" =~ ^[0-9a-fA-F]+$ ]] &&
  ((0x$sigign & 0x3)) && env --default-signal=INT true 2>/dev/null; then
  RALPH_CLUSTER_SIGRESET=1 exec env --default-signal=HUP,INT,QUIT "$BASH" "$0" "$@"
fi
unset RALPH_CLUSTER_SIGRESET sigign

readonly TEMPORAL_VERSION=1.29.1
SCRIPT_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
readonly SCRIPT_PATH
REPO_ROOT="$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)"
readonly REPO_ROOT
readonly CONFIG_SRC_DIR="$REPO_ROOT/deploy/cluster"
readonly CACHE_ROOT="${RALPH_CACHE:-${HOME:-/root}/.cache/ralph}"
readonly BIN_DIR="$CACHE_ROOT/temporal-server-v$TEMPORAL_VERSION/bin"
readonly SERVER_BIN="$BIN_DIR/temporal-server"
readonly SQL_BIN="$BIN_DIR/temporal-sql-tool"
readonly PG_BIN="${RALPH_PG_BIN:-/usr/lib/postgresql/15/bin}"
readonly READY_TIMEOUT="${RALPH_CLUSTER_READY_TIMEOUT:-120}"
readonly STOP_TIMEOUT="${RALPH_CLUSTER_STOP_TIMEOUT:-20}"
readonly DB_USER=temporal DB_PASSWORD=temporal
readonly CONFIG_ENV=temporal-postgres # config/<env>.yaml

# Messages go to the original stderr even from code running under a redirection
# (a trap that fires while a step's output goes to a log file). Every
# long-lived child is started with {LOG_FD}>&- so that no daemon keeps the
# caller's stderr (a pipe a test may be reading to EOF) open.
exec {LOG_FD}>&2
log() { [[ "${RALPH_CLUSTER_QUIET:-}" == 1 ]] || printf 'cluster.sh: %s\n' "$*" >&"$LOG_FD"; }
die() {
  printf 'cluster.sh: error: %s\n' "$*" >&"$LOG_FD"
  exit 1
}
now() { printf '%s' "${EPOCHREALTIME/[.,]/}"; } # microseconds
secs_since() { # $1 = start from now(); prints seconds with one decimal
  local d=$(($(now) - $1))
  printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000))
}

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SCRIPT_PATH" >&2
  exit 2
}

# ---------------------------------------------------------------- helpers --

# is_alive PID: the process exists and is not a zombie.
is_alive() {
  local pid=$1 state
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  state=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# wait_gone TIMEOUT PID...: wait until none of the PIDs is alive.
wait_gone() {
  local timeout=$1 deadline p alive
  shift
  deadline=$((SECONDS + timeout))
  while :; do
    alive=0
    for p in "$@"; do is_alive "$p" && alive=1; done
    ((alive)) || return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

port_in_use() { # PORT: any TCP socket but TIME-WAIT has it as local port
  [[ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null | grep -v TIME-WAIT || true)" ]]
}

port_listening() { # PORT: a listener holds it (all that matters to SO_REUSEADDR)
  [[ -n "$(ss -Htln "( sport = :$1 )" 2>/dev/null || true)" ]]
}

as_pg() { # run a command as the postgres OS user (PostgreSQL refuses root)
  if ((EUID == 0)); then
    (cd / && runuser -u postgres -- "$@") {LOG_FD}>&-
  else
    "$@" {LOG_FD}>&-
  fi
}

http() { # METHOD PATH [BODY] -> prints "CODE BODY"
  local out
  local -a data=()
  [[ -n "${3:-}" ]] && data=(--data "$3")
  out=$(curl -sS -m 5 -o - -w '\n%{http_code}' -X "$1" \
    -H 'Content-Type: application/json' "${data[@]}" \
    "http://$HTTP_ADDRESS$2" 2>/dev/null) || {
    printf '000 '
    return 0
  }
  printf '%s %s' "${out##*$'\n'}" "${out%$'\n'*}"
}

# ------------------------------------------------------------- binaries ---

BUILD_TMP=""
ensure_binaries() {
  [[ -x "$SERVER_BIN" && -x "$SQL_BIN" ]] && return 0
  command -v go >/dev/null || die "go is not installed; needed to build Temporal server v$TEMPORAL_VERSION"
  mkdir -p "$BIN_DIR"
  local lock_fd
  exec {lock_fd}>"$CACHE_ROOT/.temporal-build.lock"
  log "waiting for the build lock $CACHE_ROOT/.temporal-build.lock"
  flock -w 1800 "$lock_fd" || die "could not get the build lock"
  if [[ -x "$SERVER_BIN" && -x "$SQL_BIN" ]]; then
    exec {lock_fd}>&-
    return 0
  fi
  local t0
  t0=$(now)
  BUILD_TMP=$(mktemp -d "$CACHE_ROOT/build.XXXXXX")
  log "building Temporal server v$TEMPORAL_VERSION and its SQL tool (a few minutes on empty Go caches)"
  # Run in its own process group and wait, so that a signal interrupts the
  # build at once (cleanup kills the group).
  (cd "$BUILD_TMP" && GOBIN="$BUILD_TMP" GOTMPDIR="$BUILD_TMP" GOFLAGS="" GO111MODULE=on GOWORK=off \
    exec setsid go install \
    "go.temporal.io/server/cmd/server@v$TEMPORAL_VERSION" \
    "go.temporal.io/server/cmd/tools/sql@v$TEMPORAL_VERSION") {LOG_FD}>&- &
  CHILD_PGID=$!
  wait "$CHILD_PGID" || die "go install of Temporal server v$TEMPORAL_VERSION failed"
  CHILD_PGID=""
  mv -f "$BUILD_TMP/sql" "$SQL_BIN"
  mv -f "$BUILD_TMP/server" "$SERVER_BIN"
  rm -rf "$BUILD_TMP"
  BUILD_TMP=""
  exec {lock_fd}>&-
  log "built in $(secs_since "$t0") s -> $BIN_DIR"
}

apt_install() { # PKG... (root only); runs apt-get update when the lists are stale
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&"$LOG_FD" 2>&1 && return 0
  apt-get update -q >&"$LOG_FD" 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&"$LOG_FD" 2>&1
}

ensure_postgres() {
  [[ -x "$PG_BIN/initdb" && -x "$PG_BIN/pg_ctl" ]] && return 0
  ((EUID == 0)) || die "$PG_BIN/initdb not found; install PostgreSQL 15 (apt-get install postgresql-15) or set RALPH_PG_BIN"
  apt_install postgresql-15 || apt_install postgresql || die "apt-get install postgresql-15 failed"
  [[ -x "$PG_BIN/initdb" ]] || die "$PG_BIN/initdb still missing after install"
}

ensure_tools() {
  local missing=() t
  local -a need=(curl ss setsid flock)
  ((EUID == 0)) && need+=(runuser)
  for t in "${need[@]}"; do command -v "$t" >/dev/null || missing+=("$t"); done
  ((${#missing[@]} == 0)) && return 0
  ((EUID == 0)) || die "missing tools: ${missing[*]}"
  apt_install curl iproute2 util-linux || die "apt-get install failed for: ${missing[*]}"
}

# ---------------------------------------------------------------- state ---

# The state dir holds:
#   cluster.conf   bash assignments read by the subcommands
#   cluster.env    `export` lines for the command (also printed by `up`)
#   server.env     KEY=VALUE environment of the server (docker env_file format)
#   config/        temporal-postgres.yaml + dynamicconfig.yaml (copies)
#   server.pid server.log server.lock  pg/{data,sock,postgres.log}
load_state() {
  STATE="${RALPH_CLUSTER_STATE:-}"
  [[ -n "$STATE" ]] || die "RALPH_CLUSTER_STATE is not set (it is exported to the command run by '$SCRIPT_PATH -- CMD')"
  [[ -r "$STATE/cluster.conf" ]] || die "$STATE/cluster.conf not found: no cluster there"
  # shellcheck source=/dev/null
  source "$STATE/cluster.conf"
}

choose_ports() {
  local base try p ok
  if [[ -n "${RALPH_CLUSTER_BASE_PORT:-}" ]]; then
    base=$RALPH_CLUSTER_BASE_PORT
    if ! [[ "$base" =~ ^[0-9]+$ ]] || ((base < 1024 || base + 10 > 65535)); then
      die "bad RALPH_CLUSTER_BASE_PORT=$base"
    fi
    for ((p = base; p <= base + 10; p++)); do
      port_in_use "$p" && die "port $p (RALPH_CLUSTER_BASE_PORT=$base) is in use"
    done
  else
    # Below the ephemeral range (32768+) so that outgoing connections do not
    # take our ports between the check and the bind.
    for ((try = 0; try < 100; try++)); do
      base=$((15000 + (RANDOM % 885) * 20))
      ok=1
      for ((p = base; p <= base + 10; p++)); do
        if port_in_use "$p"; then
          ok=0
          break
        fi
      done
      ((ok)) && break
    done
    ((ok)) || die "no free block of 11 ports found"
  fi
  BASE_PORT=$base
  FRONTEND_PORT=$base
  HTTP_PORT=$((base + 1))
  PG_PORT=$((base + 9))
  METRICS_PORT=$((base + 10))
  ADDRESS="127.0.0.1:$FRONTEND_PORT"
  HTTP_ADDRESS="127.0.0.1:$HTTP_PORT"
}

write_state() {
  {
    printf '%s=%q\n' STATE "$STATE" BASE_PORT "$BASE_PORT" FRONTEND_PORT "$FRONTEND_PORT" \
      HTTP_PORT "$HTTP_PORT" PG_PORT "$PG_PORT" METRICS_PORT "$METRICS_PORT" \
      ADDRESS "$ADDRESS" HTTP_ADDRESS "$HTTP_ADDRESS" NAMESPACE "$NAMESPACE" \
      STATE_SERVER_BIN "$SERVER_BIN"
  } >"$STATE/cluster.conf"
  {
    echo "DB=postgres12"
    echo "POSTGRES_SEEDS=127.0.0.1"
    echo "DB_PORT=$PG_PORT"
    echo "POSTGRES_USER=$DB_USER"
    echo "POSTGRES_PWD=$DB_PASSWORD"
    echo "DBNAME=temporal"
    echo "VISIBILITY_DBNAME=temporal_visibility"
    echo "NUM_HISTORY_SHARDS=4"
    echo "BIND_ON_IP=127.0.0.1"
    echo "TEMPORAL_BROADCAST_ADDRESS=127.0.0.1"
    echo "FRONTEND_GRPC_PORT=$FRONTEND_PORT"
    echo "FRONTEND_HTTP_PORT=$HTTP_PORT"
    echo "HISTORY_GRPC_PORT=$((BASE_PORT + 2))"
    echo "MATCHING_GRPC_PORT=$((BASE_PORT + 3))"
    echo "WORKER_GRPC_PORT=$((BASE_PORT + 4))"
    echo "FRONTEND_MEMBERSHIP_PORT=$((BASE_PORT + 5))"
    echo "HISTORY_MEMBERSHIP_PORT=$((BASE_PORT + 6))"
    echo "MATCHING_MEMBERSHIP_PORT=$((BASE_PORT + 7))"
    echo "WORKER_MEMBERSHIP_PORT=$((BASE_PORT + 8))"
    echo "PPROF_PORT=0"
    echo "PROMETHEUS_ENDPOINT=127.0.0.1:$METRICS_PORT"
    echo "LOG_LEVEL=${RALPH_CLUSTER_LOG_LEVEL:-info}"
    echo "DYNAMIC_CONFIG_FILE_PATH=$STATE/config/dynamicconfig.yaml"
    echo "DYNAMIC_CONFIG_POLL_INTERVAL=10s"
    echo "TEMPORAL_ROOT=$STATE"
    echo "TEMPORAL_CONFIG_DIR=config"
    echo "TEMPORAL_ENVIRONMENT=$CONFIG_ENV"
    echo "TEMPORAL_ALLOW_NO_AUTH=true"
  } >"$STATE/server.env"
  local q st
  q=$(printf '%q' "$SCRIPT_PATH")
  st=$(printf '%q' "$STATE")
  {
    export_line TEMPORAL_ADDRESS "$ADDRESS"
    export_line TEMPORAL_NAMESPACE "$NAMESPACE"
    export_line RALPH_CLUSTER_HTTP_ADDRESS "$HTTP_ADDRESS"
    export_line RALPH_CLUSTER_METRICS_ADDRESS "127.0.0.1:$METRICS_PORT"
    export_line RALPH_CLUSTER_POSTGRES_URL "postgres://$DB_USER:$DB_PASSWORD@127.0.0.1:$PG_PORT/temporal?sslmode=disable"
    export_line RALPH_CLUSTER_STATE "$STATE"
    export_line RALPH_CLUSTER_SCRIPT "$SCRIPT_PATH"
    export_line RALPH_CLUSTER_SERVER_PID "$SERVER_PID"
    export_line RALPH_CLUSTER_SERVER_PID_FILE "$STATE/server.pid"
    export_line RALPH_CLUSTER_SERVER_LOG "$STATE/server.log"
    export_line RALPH_CLUSTER_RESTART_CMD "RALPH_CLUSTER_STATE=$st $q restart-server"
    export_line RALPH_CLUSTER_START_CMD "RALPH_CLUSTER_STATE=$st $q start-server"
    export_line RALPH_CLUSTER_STOP_CMD "RALPH_CLUSTER_STATE=$st $q stop-server"
    export_line RALPH_CLUSTER_KILL_CMD "RALPH_CLUSTER_STATE=$st $q stop-server --kill"
  } >"$STATE/cluster.env"
}

export_line() { # NAME VALUE -> export NAME='VALUE' (single-quoted for sh)
  local sq="'" esc="'\\''"
  printf "export %s='%s'\n" "$1" "${2//$sq/$esc}"
}

# ------------------------------------------------------------- postgres ---

pg_start() {
  local t0
  t0=$(now)
  mkdir -p "$STATE/pg/sock"
  if ((EUID == 0)); then chown -R postgres: "$STATE/pg"; fi
  as_pg "$PG_BIN/initdb" -D "$STATE/pg/data" -U postgres -E UTF8 --locale=C \
    --auth-local=trust --auth-host=scram-sha-256 --no-sync >"$STATE/pg/initdb.log" 2>&1 ||
    { cat "$STATE/pg/initdb.log" >&"$LOG_FD"; die "initdb failed"; }
  local opts="-p $PG_PORT -k $STATE/pg/sock -c listen_addresses=127.0.0.1 -c max_connections=200"
  opts+=" -c shared_buffers=128MB -c log_min_messages=warning"
  if [[ "${RALPH_CLUSTER_PG_DURABLE:-}" != 1 ]]; then
    opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  as_pg "$PG_BIN/pg_ctl" -D "$STATE/pg/data" -l "$STATE/pg/postgres.log" -w -t 60 -o "$opts" start >/dev/null ||
    { cat "$STATE/pg/postgres.log" >&"$LOG_FD"; die "PostgreSQL did not start"; }
  "$PG_BIN/psql" -h "$STATE/pg/sock" -p "$PG_PORT" -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD'" >/dev/null ||
    die "could not create the $DB_USER role"
  log "PostgreSQL 15 on 127.0.0.1:$PG_PORT ($(secs_since "$t0") s)"
}

pg_stop() {
  [[ -f "$STATE/pg/data/postmaster.pid" ]] || return 0
  local pm
  pm=$(head -n1 "$STATE/pg/data/postmaster.pid" 2>/dev/null || true)
  is_alive "$pm" || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$STATE/pg/data" -m fast -w -t 15 stop >/dev/null 2>&1 ||
    as_pg "$PG_BIN/pg_ctl" -D "$STATE/pg/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
  if is_alive "$pm"; then
    local kids
    kids=$(pgrep -P "$pm" || true)
    # shellcheck disable=SC2086 # word splitting of the PID list is intended
    kill -KILL "$pm" $kids 2>/dev/null || true
    # shellcheck disable=SC2086
    wait_gone 10 "$pm" $kids || log "warning: PostgreSQL (pid $pm) did not exit"
  fi
}

schema_setup() {
  local t0 db schema
  t0=$(now)
  local -a sql=("$SQL_BIN" --plugin postgres12 --ep 127.0.0.1 -p "$PG_PORT" -u "$DB_USER" --pw "$DB_PASSWORD")
  for db in temporal temporal_visibility; do
    schema=temporal
    [[ "$db" == temporal_visibility ]] && schema=visibility
    {
      "${sql[@]}" --db "$db" create-database &&
        "${sql[@]}" --db "$db" setup-schema -v 0.0 &&
        "${sql[@]}" --db "$db" update-schema --schema-name "postgresql/v12/$schema"
    } >>"$STATE/schema.log" 2>&1 || { cat "$STATE/schema.log" >&"$LOG_FD"; die "schema setup of $db failed"; }
  done
  log "schemas temporal + temporal_visibility ready ($(secs_since "$t0") s)"
}

# --------------------------------------------------------------- server ---

current_server_pids() {
  # The live processes of this cluster's server: everything with `--root
  # $STATE` in its argv. That is the server, and also a launch still on its way
  # through `sh -c ... exec env ... exec temporal-server` (killing it there
  # stops the launch). Found by scanning /proc (builtins only, ~5 ms) rather
  # than trusting server.pid, so a server whose launcher was killed before the
  # PID file was written is found too.
  local d pid i
  local -a args
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
    for ((i = 0; i + 1 < ${#args[@]}; i++)); do
      if [[ "${args[i]}" == --root && "${args[i + 1]}" == "$STATE" ]]; then
        is_alive "$pid" && printf '%s\n' "$pid"
        break
      fi
    done
  done
}

server_launch() { # start the server process in its own session, record its PID
  local -a envs
  mapfile -t envs <"$STATE/server.env"
  rm -f "$STATE/server.pid" "$STATE/server.pid.new"
  printf '\n===== %s starting server =====\n' "$(date -Is)" >>"$STATE/server.log"
  # setsid -f: own session and process group, reparented away from us; the
  # inner sh records its own PID and then becomes the server (exec).
  # shellcheck disable=SC2016 # $$ and $@ are for the inner sh
  setsid -f sh -c 'cd / && echo $$ >"$0.new" && mv -f "$0.new" "$0" && exec "$@"' "$STATE/server.pid" \
    env -i PATH="/usr/bin:/bin" HOME="${HOME:-/root}" "${envs[@]}" \
    "$STATE_SERVER_BIN" --root "$STATE" --config config --env "$CONFIG_ENV" --allow-no-auth start \
    >>"$STATE/server.log" 2>&1 </dev/null {SERVER_LOCK_FD}>&- {LOG_FD}>&- # the server must not hold the lock
  local deadline=$((SECONDS + 10))
  until [[ -s "$STATE/server.pid" ]]; do
    ((SECONDS < deadline)) || die "server did not record its PID"
    sleep 0.05
  done
  SERVER_PID=$(cat "$STATE/server.pid")
}

# wait_ready [create-namespace]: frontend answers, namespace exists, history
# serves (DescribeWorkflowExecution of an unknown ID answers 404).
# Returns 0 when ready, 1 when the process died, dies on timeout.
wait_ready() {
  local create=${1:-} deadline=$((SECONDS + READY_TIMEOUT)) r="" code
  local step=frontend
  while :; do
    is_alive "$SERVER_PID" || return 1
    case $step in
    frontend)
      r=$(http GET /api/v1/cluster-info)
      [[ "${r%% *}" == 200 ]] && step=namespace && continue
      ;;
    namespace)
      if [[ -n "$create" ]]; then
        r=$(http POST /api/v1/namespaces \
          "{\"namespace\":\"$NAMESPACE\",\"workflowExecutionRetentionPeriod\":\"86400s\",\"description\":\"ralph cluster.sh\"}")
        code=${r%% *}
        [[ "$code" == 200 || "$code" == 409 ]] && create="" && step=describe && continue
      else
        step=describe && continue
      fi
      ;;
    describe)
      r=$(http GET "/api/v1/namespaces/$NAMESPACE")
      [[ "${r%% *}" == 200 ]] && step=history && continue
      ;;
    history)
      r=$(http GET "/api/v1/namespaces/$NAMESPACE/workflows/ralph-cluster-readiness-probe")
      [[ "${r%% *}" == 404 ]] && return 0
      ;;
    esac
    if ((SECONDS >= deadline)); then
      tail -n 40 "$STATE/server.log" >&"$LOG_FD"
      die "server (pid $SERVER_PID) not ready after ${READY_TIMEOUT}s (step $step, last answer: ${r:0:300}); log: $STATE/server.log"
    fi
    sleep 0.1
  done
}

# server_start [create-namespace]: start the server unless it runs, wait until
# it serves, set SERVER_PID.
server_start() {
  local t0 pids p deadline
  t0=$(now)
  pids=$(current_server_pids)
  if [[ -n "$pids" ]]; then
    SERVER_PID=$(head -n1 <<<"$pids")
    # It may be dying from a signal the caller has just sent: make sure it serves.
    if wait_ready "${1:-}"; then
      echo "$SERVER_PID" >"$STATE/server.pid"
      log "server already running (pid $SERVER_PID)"
      return 0
    fi
    # shellcheck disable=SC2086
    wait_gone "$STOP_TIMEOUT" $pids || die "server pid(s) $pids neither serve nor exit"
  fi
  for ((p = BASE_PORT; p <= BASE_PORT + 10; p++)); do
    [[ $p == "$PG_PORT" ]] && continue
    deadline=$((SECONDS + 10))
    while port_listening "$p"; do
      ((SECONDS < deadline)) || die "port $p is still in use"
      sleep 0.1
    done
  done
  server_launch
  if ! wait_ready "${1:-}"; then
    tail -n 40 "$STATE/server.log" >&"$LOG_FD"
    die "server (pid $SERVER_PID) exited during startup; log: $STATE/server.log"
  fi
  log "Temporal server v$TEMPORAL_VERSION ready on $ADDRESS (pid $SERVER_PID, $(secs_since "$t0") s)"
}

server_stop() { # [--term|--kill]
  local sig=TERM pids t0
  case ${1:---term} in
  --term | -15 | TERM) sig=TERM ;;
  --kill | -9 | KILL) sig=KILL ;;
  *) die "stop-server: unknown option $1 (use --term or --kill)" ;;
  esac
  t0=$(now)
  pids=$(current_server_pids)
  [[ -n "$pids" ]] || {
    log "server not running"
    return 0
  }
  # shellcheck disable=SC2086
  kill -"$sig" $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  if ! wait_gone "$STOP_TIMEOUT" $pids; then
    log "server did not exit ${STOP_TIMEOUT}s after SIG$sig; sending SIGKILL"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    wait_gone 10 $pids || log "warning: server pid(s) $pids still alive"
  fi
  log "server stopped with SIG$sig ($(secs_since "$t0") s)"
}

SERVER_LOCK_FD=""
with_server_lock() { # serialize start/stop of the server across processes
  exec {SERVER_LOCK_FD}>>"$STATE/server.lock"
  flock -w 300 "$SERVER_LOCK_FD" || die "could not lock $STATE/server.lock"
  "$@"
  exec {SERVER_LOCK_FD}>&-
  SERVER_LOCK_FD=""
}

# ------------------------------------------------------------ run / up ---

CHILD_PGID="" # process group being waited for (build or command)
CMD_PGID=""   # the command's process group, kept after it exits
OWN_STATE=""
CLEANED=""
SIGNALED=""
T_TEARDOWN=""

cleanup() {
  local rc=$?
  [[ -n "$CLEANED" ]] && return
  CLEANED=1
  trap '' INT TERM HUP
  set +e
  T_TEARDOWN=$(now)
  local g
  for g in $CHILD_PGID $CMD_PGID; do
    # the process group (the command and anything it left running)
    if kill -0 -- "-$g" 2>/dev/null; then
      kill -"${SIGNALED:-TERM}" -- "-$g" 2>/dev/null
      local deadline=$((SECONDS + 10))
      while kill -0 -- "-$g" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
      kill -KILL -- "-$g" 2>/dev/null
    fi
    wait "$g" 2>/dev/null
  done
  [[ -n "$BUILD_TMP" ]] && rm -rf "$BUILD_TMP"
  if [[ -n "$OWN_STATE" && -d "$STATE" ]]; then
    if [[ -f "$STATE/cluster.conf" ]]; then
      server_stop --term
      # a launch by a restart command that was killed mid-way may surface late
      sleep 0.2
      [[ -n "$(current_server_pids)" ]] && server_stop --kill
      [[ -n "$(current_server_pids)" ]] && log "warning: server still running after teardown"
    fi
    pg_stop
    if [[ -n "${RALPH_CLUSTER_LOG_DIR:-}" ]]; then
      mkdir -p "$RALPH_CLUSTER_LOG_DIR" &&
        cp -f "$STATE/server.log" "$RALPH_CLUSTER_LOG_DIR/" 2>/dev/null
      cp -f "$STATE/pg/postgres.log" "$RALPH_CLUSTER_LOG_DIR/" 2>/dev/null
    fi
    if [[ "${RALPH_CLUSTER_KEEP_STATE:-}" == 1 ]]; then
      log "state kept in $STATE"
    else
      rm -rf "$STATE"
    fi
    log "torn down in $(secs_since "$T_TEARDOWN") s"
  fi
  return "$rc"
}

on_signal() {
  SIGNALED=$1
  log "got SIG$1, tearing down"
  case $1 in
  INT) exit 130 ;;
  TERM) exit 143 ;;
  *) exit 129 ;;
  esac
}

cluster_up() { # sets up everything; leaves the server running
  local t0
  t0=$(now)
  ensure_tools
  ensure_postgres
  ensure_binaries
  [[ -f "$CONFIG_SRC_DIR/$CONFIG_ENV.yaml" && -f "$CONFIG_SRC_DIR/dynamicconfig.yaml" ]] ||
    die "config files missing in $CONFIG_SRC_DIR"

  NAMESPACE="${RALPH_CLUSTER_NAMESPACE:-default}"
  # Not RALPH_CLUSTER_STATE: that one is exported to the command and names a
  # running cluster; a nested `cluster.sh --` must make a new one.
  if [[ -n "${RALPH_CLUSTER_DIR:-}" ]]; then
    STATE=$RALPH_CLUSTER_DIR
    if [[ -e "$STATE" ]]; then
      [[ -d "$STATE" && -z "$(ls -A "$STATE")" ]] || die "RALPH_CLUSTER_DIR=$STATE exists and is not an empty directory"
    fi
    mkdir -p "$STATE"
    STATE=$(cd "$STATE" && pwd)
  else
    STATE=$(mktemp -d "${TMPDIR:-/tmp}/ralph-cluster.XXXXXX")
  fi
  OWN_STATE=1
  chmod 755 "$STATE" # the postgres user must reach $STATE/pg
  STATE_SERVER_BIN=$SERVER_BIN
  choose_ports
  SERVER_PID=""
  write_state
  mkdir -p "$STATE/config"
  cp "$CONFIG_SRC_DIR/$CONFIG_ENV.yaml" "$CONFIG_SRC_DIR/dynamicconfig.yaml" "$STATE/config/"
  log "state dir $STATE, ports $BASE_PORT-$((BASE_PORT + 10))"

  pg_start
  schema_setup
  with_server_lock server_start create-namespace
  write_state # now with the PID
  log "cluster up in $(secs_since "$t0") s: TEMPORAL_ADDRESS=$ADDRESS namespace=$NAMESPACE"
}

install_traps() {
  trap cleanup EXIT
  trap 'on_signal INT' INT
  trap 'on_signal TERM' TERM
  trap 'on_signal HUP' HUP
}

run_cmd() { # CMD...
  install_traps
  cluster_up
  # shellcheck source=/dev/null
  source "$STATE/cluster.env"
  # The command gets its own process group so that teardown can stop all of
  # it (go test and its test binaries); the script waits for it with `wait`,
  # which returns at once when a signal arrives.
  # bash starts background commands with SIGINT ignored; env resets it so the
  # forwarded Ctrl-C reaches the command.
  local -a sigreset=()
  env --default-signal=INT true 2>/dev/null && sigreset=(env "--default-signal=INT,QUIT")
  setsid "${sigreset[@]}" "$@" <&0 {LOG_FD}>&- &
  CHILD_PGID=$!
  CMD_PGID=$CHILD_PGID
  local rc=0
  wait "$CHILD_PGID" || rc=$?
  CHILD_PGID=""
  log "command exited with status $rc"
  exit "$rc"
}

# ----------------------------------------------------------------- main ---

main() {
  local cmd=${1:-}
  case $cmd in
  --)
    shift
    (($# > 0)) || usage
    run_cmd "$@"
    ;;
  up)
    shift
    # shellcheck disable=SC2016
    run_cmd sh -c 'cat "$RALPH_CLUSTER_STATE/cluster.env"; echo "# cluster.sh: running; Ctrl-C or SIGTERM to tear down" >&2; exec sleep infinity'
    ;;
  build)
    install_traps
    ensure_binaries
    echo "$BIN_DIR"
    ;;
  pid)
    load_state
    current_server_pids | head -n1
    ;;
  status)
    load_state
    local pids
    pids=$(current_server_pids | tr '\n' ' ')
    echo "address=$ADDRESS server_pids=${pids:-none} state=$STATE"
    ;;
  stop-server)
    shift
    load_state
    with_server_lock server_stop "$@"
    ;;
  start-server)
    load_state
    with_server_lock server_start
    echo "$SERVER_PID"
    ;;
  restart-server)
    shift
    load_state
    with_server_lock server_stop "$@"
    with_server_lock server_start
    echo "$SERVER_PID"
    ;;
  -h | --help | help | "") usage ;;
  *)
    printf 'cluster.sh: unknown command %q\n' "$cmd" >&2
    usage
    ;;
  esac
}

main "$@"
