"""A bench run in a tree whose render kernels were not built says so before it times anything
(`bench/__init__.py`): a bare clone blends pages with the Pillow fallback, about six times the
cost, and its page figures are the fallback's."""

from __future__ import annotations

import subprocess
import sys

from tests.vault_process import ROOT

# The compiled kernels hidden from the import, as in a tree where they were never built.
WITHOUT_KERNELS = """
import sys
class Unbuilt:
    def find_spec(self, name, path=None, target=None):
        if name in ("render.kernels._blend", "render.kernels._paper"):
            raise ImportError(name)
        return None
sys.meta_path.insert(0, Unbuilt())
import bench
"""


def _stderr_of(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stderr


def test_a_bench_without_the_kernels_warns_that_it_times_the_fallback() -> None:
    assert "render/kernels are not built here" in _stderr_of(WITHOUT_KERNELS)


def test_a_bench_with_the_kernels_says_nothing() -> None:
    assert "render/kernels" not in _stderr_of("import bench")
