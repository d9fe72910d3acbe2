#!/usr/bin/env bash
# Installs Azurite (the Azure Storage emulator the Azure backend's tests run against) with npm
# into node_modules/ at the repository root. Idempotent: does nothing when it is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x node_modules/.bin/azurite ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-azurite: npm is required (apt-get install nodejs npm, Node 18 or newer)" >&2
  exit 1
fi
# --prefix: npm would otherwise install beside the nearest package.json of a parent directory.
npm install --prefix "$PWD" --no-save --no-audit --no-fund --loglevel=error azurite@3
