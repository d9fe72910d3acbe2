#!/usr/bin/env bash
# Quick start: install (only when something changed), then run vaultd on the embedded database
# with data in ./vault-data. Extra arguments go to vaultd (e.g. --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
# scripts/setup.sh leaves a stamp of what it installed from; a start with nothing changed goes
# straight to vaultd, without pip or the package index.
if [ ! -x .venv/bin/vaultd ] || [ "$(cat .venv/.setup-stamp 2>/dev/null)" != "$(bash scripts/stamp.sh)" ]; then
  bash scripts/setup.sh
fi
exec .venv/bin/vaultd "$@"
