#!/usr/bin/env bash
# Installs oidc-provider (the OpenID Connect provider the OIDC sign-in tests start,
# tests/oidc_provider.py) with npm into tests/oidc_provider/node_modules/, pinned by the
# package.json and package-lock.json beside its script. Its own directory, not the repository's
# node_modules/: an npm install there without a package.json would prune what else it holds
# (Azurite). Idempotent: does nothing when it is already there. Needs Node 18 or newer.
set -euo pipefail
cd "$(dirname "$0")/../tests/oidc_provider"

if [ -f node_modules/oidc-provider/package.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-oidc-provider: npm is required (apt-get install nodejs npm, Node 18 or newer)" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
