#!/usr/bin/env bash
# Quick start: install, then run vaultd on the embedded database with data in ./vault-data.
# Extra arguments go to vaultd (e.g. --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/vaultd "$@"
