#!/usr/bin/env bash
# Install everything the tests need, lint and type-check, then run the tests. Extra arguments
# go to pytest (e.g. -m "not slow" for the fast loop, see docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy   # settings and the checked packages: [tool.mypy] in pyproject.toml
exec .venv/bin/python -m pytest "$@"
