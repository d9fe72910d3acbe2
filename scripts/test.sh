#!/usr/bin/env bash
# Install everything the tests need, lint and type-check, then run the tests. Extra arguments
# go to pytest (e.g. -m "not slow" for the fast loop, see docs/testing.md). Without arguments
# (the whole suite, as CI runs it) the container image is built and smoke-tested first
# (scripts/container-test.sh), and pytest runs twice: on two workers, then the `alone` modules.
# pytest's summary stays the last line; the exit code covers all three.
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
if [ $# -eq 0 ]; then
  # Two workers, a module to each at a time (module fixtures start once); then the modules that
  # bound a time another worker's load would move (marker `alone`), by themselves.
  .venv/bin/python -m pytest -n 2 --dist loadfile -m "not alone" || status=$?
  alone=0
  .venv/bin/python -m pytest -m alone || alone=$?
  if [ "$status" -ne 0 ]; then
    echo "the run on two workers failed (exit $status): see its summary above" >&2
  else
    status=$alone
  fi
else
  .venv/bin/python -m pytest "$@" || status=$?
fi
if [ "$container" -ne 0 ]; then
  echo "scripts/container-test.sh failed (exit $container): see its output above" >&2
  [ "$status" -ne 0 ] || status=$container
fi
exit "$status"
