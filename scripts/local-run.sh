#!/usr/bin/env bash
# `make demo`: runs a Ralph loop locally on a fresh machine that has only Go.
#
#   bash scripts/local-run.sh ["objective text"]     (or: make demo OBJECTIVE="...")
#
# It installs the Temporal CLI if absent, builds bin/worker, bin/starter and
# bin/ralph-devserver, starts a Temporal dev server that persists to
# .ralph/temporal.db (or reuses a server already answering on the port) and a
# worker in the background (logs in .ralph/logs/), then runs `bin/starter run`
# in the foreground and lists the workspace files at the end. On exit it stops
# the worker and the server it started, unless RALPH_KEEP_RUNNING=1, and exits
# with the starter's code (0 complete, 3 blocked, 4 budget-limited, 1 failed,
# 130 cancelled, 2 bad usage).
#
# Model: a real OpenAI-compatible model when OPENAI_API_KEY and RALPH_MODEL are
# set (OPENAI_BASE_URL optional), otherwise demo mode (the worker's scripted
# local model server; RALPH_DEMO=1 forces it).
#
# Environment: OBJECTIVE, RALPH_WORKSPACE (default demo), RALPH_TEMPORAL_PORT
# (7233), RALPH_UI_PORT (8233), RALPH_KEEP_RUNNING, RALPH_SERVER_TIMEOUT_SECONDS
# (120), RALPH_WORKER_TIMEOUT_SECONDS (90), and every worker setting
# (RALPH_MAX_ROUNDS, RALPH_TASK_QUEUE, ...; see `bin/worker --help`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf 'local-run: %s\n' "$*" >&2; }
die() { printf 'local-run: error: %s\n' "$*" >&2; exit 1; }

# The command sandbox: installed when this is root on Debian/Ubuntu, else named.
if ! command -v bwrap >/dev/null 2>&1 && ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
  say "installing bubblewrap (the command sandbox)"
  { apt-get install -y -qq bubblewrap || { apt-get update -qq && apt-get install -y -qq bubblewrap; }; } >/dev/null 2>&1 ||
    say "apt-get install bubblewrap failed"
fi
command -v bwrap >/dev/null 2>&1 ||
  say "bubblewrap (bwrap) is not installed: the worker will run commands unsandboxed (RALPH_SANDBOX=auto); install it with: apt-get install bubblewrap"

# show_tail LOG: the end of a log, indented, for error messages.
show_tail() {
  if [[ -s $1 ]]; then
    printf 'local-run: the last lines of %s:\n' "$1" >&2
    tail -n 30 "$1" | sed 's/^/    /' >&2
  else
    printf 'local-run: %s is empty\n' "$1" >&2
  fi
}

# alive PID: the process exists and is not a zombie.
alive() {
  [[ -n $1 ]] && kill -0 "$1" 2>/dev/null || return 1
  if [[ -r /proc/$1/stat ]]; then
    local stat
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [[ ${stat:0:1} != Z ]] || return 1
  fi
  return 0
}

# cmdline_has PID TEXT: the process's command line contains TEXT.
cmdline_has() {
  local cmd
  cmd="$(ps -o args= -p "$1" 2>/dev/null)" || return 1
  [[ $cmd == *"$2"* ]]
}

# stop_proc NAME PID GRACE: SIGTERM, then SIGKILL after GRACE seconds.
stop_proc() {
  local name=$1 pid=$2 grace=$3 i
  alive "$pid" || return 0
  say "stopping the $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 5; i++)); do
    alive "$pid" || break
    sleep 0.2
  done
  if alive "$pid"; then
    say "the $name (pid $pid) did not stop within ${grace}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  wait "$pid" 2>/dev/null || true
}

# ---------------------------------------------------------------- settings

is_port() { [[ $1 =~ ^[0-9]+$ ]] && (($1 > 0 && $1 < 65536)); }
port="${RALPH_TEMPORAL_PORT:-7233}"
ui_port="${RALPH_UI_PORT:-8233}"
is_port "$port" || die "RALPH_TEMPORAL_PORT=$port is not a TCP port"
is_port "$ui_port" || die "RALPH_UI_PORT=$ui_port is not a TCP port"
[[ $port != "$ui_port" ]] || die "RALPH_TEMPORAL_PORT and RALPH_UI_PORT are both $port"
server_timeout="${RALPH_SERVER_TIMEOUT_SECONDS:-120}"
worker_timeout="${RALPH_WORKER_TIMEOUT_SECONDS:-90}"
[[ $server_timeout =~ ^[1-9][0-9]*$ ]] || die "RALPH_SERVER_TIMEOUT_SECONDS=$server_timeout is not a positive integer"
[[ $worker_timeout =~ ^[1-9][0-9]*$ ]] || die "RALPH_WORKER_TIMEOUT_SECONDS=$worker_timeout is not a positive integer"
keep_running=0
case "${RALPH_KEEP_RUNNING:-}" in
  1 | true | TRUE | yes) keep_running=1 ;;
esac
workspace="${RALPH_WORKSPACE:-demo}"
task_queue="${RALPH_TASK_QUEUE:-ralph}"
export RALPH_WORKSPACE_ROOT="${RALPH_WORKSPACE_ROOT:-$ROOT/.ralph/workspaces}"
export RALPH_SESSION_DIR="${RALPH_SESSION_DIR:-$ROOT/.ralph/sessions}"

state_dir="$ROOT/.ralph"
log_dir="$state_dir/logs"
db_file="$state_dir/temporal.db"
server_log="$log_dir/temporal.log"
worker_log="$log_dir/worker.log"
server_pidfile="$state_dir/devserver.pid"
worker_pidfile="$state_dir/worker.pid"
addr="127.0.0.1:$port"
ui_url="http://127.0.0.1:$ui_port"

# This script talks to its own local server only: drop any TEMPORAL_* client
# settings (cloud address, API key, TLS, profile) from the environment.
while read -r var; do
  unset "$var"
done < <(compgen -e | grep '^TEMPORAL_' || true)
export TEMPORAL_ADDRESS="$addr" TEMPORAL_NAMESPACE=default

# Model mode.
demo_reason=""
case "${RALPH_DEMO:-}" in
  1 | true | TRUE | yes) demo_reason="RALPH_DEMO=${RALPH_DEMO} is set" ;;
esac
if [[ -z $demo_reason ]]; then
  missing=()
  [[ -n ${OPENAI_API_KEY:-} ]] || missing+=(OPENAI_API_KEY)
  [[ -n ${RALPH_MODEL:-} ]] || missing+=(RALPH_MODEL)
  if ((${#missing[@]} == 2)); then
    demo_reason="OPENAI_API_KEY and RALPH_MODEL are not set"
  elif ((${#missing[@]} == 1)); then
    demo_reason="${missing[0]} is not set"
  fi
fi

default_objective="Write greet.sh, a bash script that prints 'Hello, <name>!' for the name given as its first argument (default: world), and greet_test.sh, a bash test of it; finish when 'bash greet_test.sh' passes."
if (($# > 0)); then
  objective="$*"
elif [[ -n ${OBJECTIVE:-} ]]; then
  objective="$OBJECTIVE"
else
  objective="$default_objective"
fi

# ------------------------------------------------------------ cleanup, signals

server_pid=""      # the dev server this script stops on exit
worker_pid=""      # the worker this script stops on exit
starter_pid=""
relay_pid=""       # the process group relaying worker errors
server_started=0   # 1 when server_pid was started (or adopted) by this script

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  local rc=$?
  # Stopping takes a few seconds; a second Ctrl-C must not cut it short.
  trap '' INT TERM
  trap - EXIT
  if ((keep_running)); then
    local left=()
    if alive "$worker_pid"; then
      echo "$worker_pid" >"$worker_pidfile"
      left+=("$worker_pid")
    fi
    if ((server_started)) && alive "$server_pid"; then
      echo "$server_pid" >"$server_pidfile"
      left+=("$server_pid")
    fi
    if ((${#left[@]})); then
      say "RALPH_KEEP_RUNNING=1: left running:"
      alive "$worker_pid" && say "  worker, pid $worker_pid (log $worker_log)"
      ((server_started)) && alive "$server_pid" && say "  Temporal dev server, pid $server_pid, at $addr, UI $ui_url (log $server_log)"
      say "  stop them with: kill ${left[*]}   (or run this script again: it takes them over and stops them at its end)"
    fi
  else
    stop_proc worker "$worker_pid" 45
    rm -f "$worker_pidfile"
    if ((server_started)); then
      stop_proc "Temporal dev server" "$server_pid" 30
      rm -f "$server_pidfile"
    fi
  fi
  if [[ -n $relay_pid ]]; then
    kill -TERM -- "-$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------- Temporal CLI and binaries

command -v go >/dev/null 2>&1 || die "Go is not on PATH; install Go (https://go.dev/dl/) and run this again"
mkdir -p "$log_dir" "$RALPH_WORKSPACE_ROOT" bin

bash "$ROOT/scripts/install-temporal-cli.sh"
gobin="$(go env GOBIN)"
gopath_bin="$(go env GOPATH | cut -d: -f1)/bin"
export PATH="${gobin:+$gobin:}$gopath_bin:$PATH"
if [[ -n ${RALPH_TEMPORAL_BIN:-} ]]; then
  temporal_bin="$RALPH_TEMPORAL_BIN"
else
  temporal_bin="$(command -v temporal)" || die "the Temporal CLI is not on PATH after scripts/install-temporal-cli.sh"
fi

say "building bin/worker, bin/starter and bin/ralph-devserver"
go build -o bin/ ./worker ./starter ./internal/devserver/cmd/ralph-devserver

# ---------------------------------------------------------- Temporal server

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
server_healthy() { "$temporal_bin" operator cluster health --address "$addr" --command-timeout 5s 2>/dev/null | grep -q SERVING; }

# A previous RALPH_KEEP_RUNNING=1 run may have left a worker and a server:
# take the worker's place (its mode and settings may differ) and adopt the
# server, so this run stops it unless RALPH_KEEP_RUNNING=1 again.
if [[ -f $worker_pidfile ]]; then
  old="$(cat "$worker_pidfile" 2>/dev/null || true)"
  if [[ $old =~ ^[0-9]+$ ]] && alive "$old" && cmdline_has "$old" bin/worker; then
    say "replacing the worker a previous RALPH_KEEP_RUNNING=1 run left (pid $old)"
    stop_proc "previous worker" "$old" 45
  fi
  rm -f "$worker_pidfile"
fi
if [[ -f $server_pidfile ]]; then
  old="$(cat "$server_pidfile" 2>/dev/null || true)"
  if [[ $old =~ ^[0-9]+$ ]] && alive "$old" && cmdline_has "$old" ralph-devserver; then
    server_pid="$old"
    server_started=1
  fi
  rm -f "$server_pidfile"
fi

if port_open "$port"; then
  server_healthy || die "port $port is in use, but no Temporal server answers there; free it or pick another port with RALPH_TEMPORAL_PORT"
  if ((server_started)); then
    say "taking over the Temporal dev server a previous RALPH_KEEP_RUNNING=1 run left (pid $server_pid) at $addr"
  else
    server_pid=""
    say "reusing the Temporal server already answering at $addr (not started by this script, so it is left running; its UI, if any, may not be at $ui_url)"
  fi
else
  server_pid=""
  server_started=0
  if port_open "$ui_port"; then
    die "the UI port $ui_port is in use; free it or pick another with RALPH_UI_PORT"
  fi
  say "starting the Temporal dev server at $addr (UI $ui_url, state in ${db_file#"$ROOT"/}, log ${server_log#"$ROOT"/})"
  # Own process group (set -m): a Ctrl-C in the terminal reaches the starter,
  # which cancels the run; the server and worker must outlive it to let the
  # run close, and are stopped by cleanup.
  set -m
  bin/ralph-devserver --port "$port" --ui-port "$ui_port" --db-filename "$db_file" </dev/null >"$server_log" 2>&1 &
  server_pid=$!
  set +m
  server_started=1
  deadline=$((SECONDS + server_timeout))
  until grep -q '^TEMPORAL_ADDRESS=' "$server_log" 2>/dev/null; do
    if ! alive "$server_pid"; then
      show_tail "$server_log"
      die "the Temporal dev server exited before it became ready (see above; the full log is $server_log)"
    fi
    if ((SECONDS >= deadline)); then
      show_tail "$server_log"
      die "the Temporal dev server was not ready after ${server_timeout}s (RALPH_SERVER_TIMEOUT_SECONDS; log $server_log)"
    fi
    sleep 0.3
  done
  say "Temporal dev server is ready (pid $server_pid)"
fi

# ------------------------------------------------------------------ worker

# tcp_reachable HOST PORT: a TCP connection opens within 5 s.
# shellcheck disable=SC2016 # expanded by the inner bash
tcp_reachable() { timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }

worker_args=(--address "$addr" --namespace default)
if [[ -n $demo_reason ]]; then
  say "model mode: demo, because $demo_reason: rounds talk to the worker's scripted local OpenAI-compatible server (no key, no network; it builds greet.sh whatever the objective). For a real model set OPENAI_API_KEY and RALPH_MODEL (and OPENAI_BASE_URL for a non-OpenAI endpoint)."
  worker_args+=(--demo)
else
  say "model mode: real, because OPENAI_API_KEY and RALPH_MODEL are set: rounds call model '$RALPH_MODEL' at ${OPENAI_BASE_URL:-https://api.openai.com/v1}${OPENAI_BASE_URL:+ (OPENAI_BASE_URL)}"
  worker_args+=(--demo=false)
  # A quick look at the endpoint, so "pointed at nowhere" shows at once
  # rather than as rounds that retry. Only a warning: a proxy may reach it.
  base_url="${OPENAI_BASE_URL:-https://api.openai.com/v1}"
  hostport="${base_url#*://}"
  hostport="${hostport%%/*}"
  hostport="${hostport##*@}"
  host="${hostport%:*}"
  endpoint_port="${hostport##*:}"
  if [[ $host == "$hostport" ]]; then
    case "$base_url" in
      http://*) endpoint_port=80 ;;
      *) endpoint_port=443 ;;
    esac
  fi
  if [[ -z ${HTTPS_PROXY:-}${https_proxy:-}${HTTP_PROXY:-}${http_proxy:-} ]] &&
    [[ $host =~ ^[A-Za-z0-9.-]+$ && $endpoint_port =~ ^[0-9]+$ ]] &&
    command -v timeout >/dev/null 2>&1 && ! tcp_reachable "$host" "$endpoint_port"; then
    say "warning: nothing answers at $host:$endpoint_port (from OPENAI_BASE_URL=$base_url): every round will fail with model_unavailable and be retried until it does; the worker's errors are shown below as they happen (Ctrl-C cancels the run)"
  fi
fi

say "starting the worker (log ${worker_log#"$ROOT"/})"
set -m
bin/worker "${worker_args[@]}" </dev/null >"$worker_log" 2>&1 &
worker_pid=$!
set +m
deadline=$((SECONDS + worker_timeout))
until "$temporal_bin" task-queue describe --task-queue "$task_queue" --address "$addr" --namespace default -o json 2>/dev/null |
  grep -q "\"identity\": \"$worker_pid@"; do
  if ! alive "$worker_pid"; then
    show_tail "$worker_log"
    die "the worker exited at start (see above; the full log is $worker_log)"
  fi
  if ((SECONDS >= deadline)); then
    show_tail "$worker_log"
    die "the worker was not polling task queue $task_queue after ${worker_timeout}s (RALPH_WORKER_TIMEOUT_SECONDS; log $worker_log)"
  fi
  sleep 0.3
done
say "worker is polling task queue $task_queue (pid $worker_pid)"

# Relay the worker's errors (a round that failed: model unreachable, bad key,
# ...) to the terminal, so a stuck run says why; the full log stays in the file.
relay_worker_errors() {
  local line err
  tail -n +1 -F "$worker_log" 2>/dev/null | while IFS= read -r line; do
    case "$line" in
      *level=ERROR* | *'"level":"ERROR"'*) ;;
      *) continue ;;
    esac
    case "$line" in
      *'context canceled'*) continue ;; # a cancelled round, already reported
    esac
    err="$line"
    if [[ $line == *' Error="'* ]]; then
      err="${line#* Error=\"}"
      err="${err%\"*}"
      err="${err//\\\"/\"}"
    elif [[ $line == *'"Error":"'* ]]; then
      err="${line#*\"Error\":\"}"
      err="${err%%\",*}"
    fi
    ((${#err} <= 400)) || err="${err:0:400}…"
    printf 'local-run: worker error: %s\n' "$err" >&2
  done
}
set -m
relay_worker_errors &
relay_pid=$!
set +m

# ------------------------------------------------------------------- the run

ws_dir="$RALPH_WORKSPACE_ROOT/$workspace"
workflow_id="ralph-$workspace"
say "workspace: ${ws_dir}  (watch files appear: ls -la '$ws_dir')"
if ((server_started)); then
  say "Temporal UI: $ui_url/namespaces/default/workflows/$workflow_id"
else
  say "Temporal UI (if the reused server serves one there): $ui_url/namespaces/default/workflows/$workflow_id"
fi
say "objective: $objective"
say "one run per workspace at a time: a second run on workspace '$workspace' while $workflow_id is open is refused (RALPH_WORKSPACE picks another)"

if "$temporal_bin" workflow describe --workflow-id "$workflow_id" --address "$addr" --namespace default -o json 2>/dev/null |
  grep -q '"status": "WORKFLOW_EXECUTION_STATUS_RUNNING"'; then
  say "note: workflow $workflow_id, an earlier run on workspace '$workspace', is still open, so the starter will refuse this start (this run's worker works on it meanwhile). Follow it with 'bin/starter result $workflow_id' or stop it with 'bin/starter cancel $workflow_id' (both need the server and a worker: start this script with RALPH_KEEP_RUNNING=1 first), or pick another workspace with RALPH_WORKSPACE=<name>"
fi

# The starter runs as a background job so that this shell can forward a
# SIGTERM; a Ctrl-C in the terminal reaches the starter directly (same process
# group) and it cancels the run and waits for it to close.
trap ':' INT
trap 'if alive "$starter_pid"; then kill -TERM "$starter_pid" 2>/dev/null || true; fi' TERM
bin/starter run --address "$addr" --namespace default --workspace "$workspace" --objective "$objective" </dev/null &
starter_pid=$!
while :; do
  rc=0
  wait "$starter_pid" || rc=$?
  # A trapped signal interrupts wait (status > 128) while the starter runs on.
  if ((rc > 128)) && alive "$starter_pid"; then
    continue
  fi
  break
done
trap 'exit 130' INT
trap 'exit 143' TERM

if ((rc == 2)); then
  : # bad usage (for example an invalid RALPH_WORKSPACE): nothing to list
elif [[ -d $ws_dir ]]; then
  say "files in the workspace $ws_dir:"
  files="$(cd "$ws_dir" && find . -name .git -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort)"
  if [[ -n $files ]]; then
    printf '%s\n' "$files" | head -n 50 | sed 's/^/    /' >&2
    n="$(printf '%s\n' "$files" | wc -l | tr -d ' ')"
    ((n <= 50)) || say "    ... and $((n - 50)) more"
  else
    printf '    (none)\n' >&2
  fi
else
  say "the workspace $ws_dir was not created"
fi
case "$rc" in
  0) say "the run completed (exit 0)" ;;
  3) say "the run is blocked (exit 3); the result above names the blocker" ;;
  4) say "the run hit its round budget (exit 4); RALPH_MAX_ROUNDS raises it" ;;
  130) say "the run was cancelled (exit 130)" ;;
  *) say "the starter exited with $rc; the worker log is $worker_log" ;;
esac
if ((!server_started)); then
  :
elif ((keep_running)); then
  say "the run stays browsable in the Temporal UI at $ui_url"
else
  say "the run is stored in ${db_file#"$ROOT"/}; to browse it in the UI after this script stops the server, run again with RALPH_KEEP_RUNNING=1"
fi
exit "$rc"
