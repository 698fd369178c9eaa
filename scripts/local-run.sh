#!/usr/bin/env bash
# `make demo`: one Ralph loop on this machine (cmd/ralph-local does the work:
# dev server, worker, starter; Ctrl-C cancels the run and stops them all).
# The default objective runs verified by `bash greet_test.sh` with a git
# commit per round, and ends with the result and `git log --oneline`.
#   bash scripts/local-run.sh ["objective text"]
# `make demo-campaign` (--campaign) runs a three-task campaign instead, in
# RALPH_GIT=remote against a bare repository under .ralph.
# `make demo-plan` (--plan) runs a campaign from one objective: planners
# write its tasks in waves (docs/campaigns.md, Planning waves).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "local-run: install Go (https://go.dev/dl/) first" >&2; exit 1; }
# The worker's command sandbox runs in bubblewrap; the demo keeps a git
# commit per round (RALPH_GIT=local).
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v git >/dev/null || need+=(git)
if ((${#need[@]})) && [[ $EUID == 0 ]] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
mkdir -p bin
go build -o bin/ralph-local ./cmd/ralph-local
exec bin/ralph-local "$@"
