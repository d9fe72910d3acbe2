#!/usr/bin/env bash
# Install everything the tests need, lint and type-check, then run the tests. Extra arguments
# go to pytest (e.g. -m "not slow" --hypothesis-profile=fast-loop for the fast loop, see
# docs/testing.md). Without arguments
# (the landing run, as CI runs it: every test but the `long` tier of tests/suite_tiers.py) the
# container image is built and smoke-tested (scripts/container-test.sh) while pytest runs on
# four workers, then pytest runs the `alone` modules by themselves. `--long` runs the long
# tier the same way (on four workers, then its `alone` modules), without the container test.
# pytest's summary stays the last line; the exit code covers all three.
set -euo pipefail
cd "$(dirname "$0")/.."
# Bytecode caches kept: without them every test process compiles vaultd and the tests again and
# pytest rewrites its plugins' modules (Hypothesis whole) again, about half of a worker's
# collection (docs/testing.md, "Where the time goes"); __pycache__ is ignored by git.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh --test
lint() {
  .venv/bin/python -m ruff check . &&
    .venv/bin/python -m mypy   # settings and the checked packages: [tool.mypy] in pyproject.toml
}
container=0
status=0
if [ $# -eq 0 ] || { [ $# -eq 1 ] && [ "$1" = "--long" ]; }; then
  tier="not long"
  [ $# -eq 0 ] || tier="long"
  # Lint and types beside the tests too (a minute or two of one core on the slow host), their
  # output shown and their result counted once the run on four workers is over.
  lint_log=$(mktemp)
  lint >"$lint_log" 2>&1 &
  lint_pid=$!
  container_pid=""
  if [ "$tier" = "not long" ]; then
    # The container test beside the run on four workers (both mostly wait on processes they
    # started), its output kept and shown once it is done; it is over before the `alone` modules.
    container_log=$(mktemp)
    bash scripts/container-test.sh >"$container_log" 2>&1 &
    container_pid=$!
  fi
  # Four workers on two cores, a module to each at a time (module fixtures start once): the
  # tests mostly wait on the processes they drive, so the extra workers fill the cores' idle
  # time (docs/testing.md, "Workers"); then the modules that bound a time another worker's
  # load would move (marker `alone`), by themselves.
  .venv/bin/python -m pytest -n 4 --dist loadfile -m "$tier and not alone" || status=$?
  linted=0
  wait "$lint_pid" || linted=$?
  cat "$lint_log"
  rm -f "$lint_log"
  if [ -n "$container_pid" ]; then
    wait "$container_pid" || container=$?
    cat "$container_log"
    rm -f "$container_log"
  fi
  alone=0
  .venv/bin/python -m pytest -m "$tier and alone" || alone=$?
  if [ "$status" -ne 0 ]; then
    echo "the run on four workers failed (exit $status): see its summary above" >&2
  else
    status=$alone
  fi
else
  lint
  .venv/bin/python -m pytest "$@" || status=$?
fi
if [ "${linted:-0}" -ne 0 ]; then
  echo "ruff or mypy failed (exit $linted): see their output above" >&2
  [ "$status" -ne 0 ] || status=$linted
fi
if [ "$container" -ne 0 ]; then
  echo "scripts/container-test.sh failed (exit $container): see its output above" >&2
  [ "$status" -ne 0 ] || status=$container
fi
exit "$status"
