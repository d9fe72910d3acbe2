#!/usr/bin/env bash
# Installs axe-core (the accessibility engine the console's browser tests inject into each page,
# tests/console_browser.py) with npm into tests/axe/node_modules/, pinned by the package.json
# and package-lock.json beside it. Its own directory, as scripts/install-oidc-provider.sh does.
# Idempotent: does nothing when it is already there. Needs npm.
set -euo pipefail
cd "$(dirname "$0")/../tests/axe"

if [ -f node_modules/axe-core/axe.min.js ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-axe: npm is required (apt-get install nodejs npm)" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
