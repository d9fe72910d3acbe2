"""vaultd's long-lived processes settle Python's collector before they serve: what was made
until then is frozen out of every later full pass (`vaultd.collector`; docs/performance-records.md,
"The collector's pauses"). The render workers' half is in `tests/test_render_pool.py`."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from vaultd import collector

ROOT = Path(__file__).resolve().parent.parent

# vaultd's start as `python -m vaultd.main` runs it, up to the moment it would serve: asyncio's
# run is the first thing after the start that the process does, so it reports the freeze then.
_UP_TO_SERVING = """
import asyncio, gc, sys
from vaultd import main
def serving(coroutine):
    coroutine.close()
    print(gc.get_freeze_count(), len(gc.get_objects()))
asyncio.run = serving
main.main(sys.argv[1:])
"""


def test_the_objects_made_before_serving_are_frozen_out_of_the_collectors_passes() -> None:
    kept = [object() for _ in range(1000)]
    try:
        collector.settle()
        assert gc.get_freeze_count() >= len(kept)
        assert [one for one in gc.get_objects(2) if one is kept] == []  # frozen: in no generation
    finally:
        gc.unfreeze()


def test_vaultd_freezes_its_imports_before_it_serves(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _UP_TO_SERVING, "--data-dir", str(tmp_path), "--port", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    frozen, left = (int(part) for part in done.stdout.split())
    # The imports alone are tens of thousands of objects; what a full pass still walks is the
    # little made since the freeze.
    assert frozen > 30_000, done.stdout
    assert left < frozen / 20, done.stdout
