#!/usr/bin/env bash
# Installs the coding-agent CLIs pinned in devenv/agentclis (docs/agents.md)
# with `npm ci` into a directory the sandbox's unprivileged uid can read
# (default /opt/ralph-agents; not under a home or /tmp, which the sandbox
# hides or replaces). Does nothing when that lock file is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${RALPH_AGENTS_DIR:-/opt/ralph-agents}"
if cmp -s devenv/agentclis/package-lock.json "$dest/package-lock.json" && [[ -x "$dest/node_modules/.bin/claude" ]]; then
  echo "agent CLIs already installed in $dest"
  exit 0
fi
command -v npm >/dev/null || { echo "npm is required to install the agent CLIs (Node.js 20 or later)" >&2; exit 1; }
mkdir -p "$dest"
cp devenv/agentclis/package.json devenv/agentclis/package-lock.json "$dest/"
# npm ci refuses a lock without every platform's optional package
# (opencode's darwin/windows/musl builds, which a registry mirror may lack);
# npm install keeps the lock's exact versions of everything it installs.
(cd "$dest" && { npm ci --no-audit --no-fund --loglevel=error 2>/dev/null || npm install --no-audit --no-fund --loglevel=error; })
chmod -R a+rX "$dest"
for cli in claude codex opencode; do "$dest/node_modules/.bin/$cli" --version; done
