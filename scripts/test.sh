#!/usr/bin/env bash
# Install everything the tests need, lint and type-check, then run the tests. Extra arguments
# go to pytest (e.g. -m "not slow" for the fast loop, see docs/testing.md). Without arguments
# (the whole suite, as CI runs it) the container image is built and smoke-tested first
# (scripts/container-test.sh); pytest's summary stays the last line, the exit code covers both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy   # settings and the checked packages: [tool.mypy] in pyproject.toml
container=0
if [ $# -eq 0 ]; then
  bash scripts/container-test.sh || container=$?
fi
status=0
.venv/bin/python -m pytest "$@" || status=$?
if [ "$container" -ne 0 ]; then
  echo "scripts/container-test.sh failed (exit $container): see its output above" >&2
  [ "$status" -ne 0 ] || status=$container
fi
exit "$status"
