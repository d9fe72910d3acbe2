"""Bench only (`bench.leakmark_run`): a vaultd started with this directory first on PYTHONPATH
serves pages without the leak-tracing mark (no invisible mark, no trace code drawn; with
VAULTD_BENCH_KEEP_TRACE_CODE=1 the code is drawn), everything else unchanged, so that the
mark's cost can be measured against the same server in the same run.
Python imports `sitecustomize` at start in every process, the render zygote included (its
forked workers inherit the patch). Never on a deployment's path: production has no switch."""

from __future__ import annotations

import dataclasses
import os

from render.watermark import viewer_mark
from render.wire.model import WatermarkSpec

_prepare = viewer_mark.prepare


# Set by `bench.leakmark_run --keep-code`: the trace code is drawn, only the invisible mark
# (the paper's chips and the letters' share) is left out: the invisible mark's cost alone.
_KEEP_CODE = os.environ.get("VAULTD_BENCH_KEEP_TRACE_CODE") == "1"


def _prepare_unmarked(mark: WatermarkSpec, width: int, strip: viewer_mark.Strip
                      ) -> viewer_mark.Overlay:
    if _KEEP_CODE:
        return dataclasses.replace(_prepare(mark, width, strip), mark_value=None)
    return _prepare(dataclasses.replace(mark, render_id=None), width, strip)


viewer_mark.prepare = _prepare_unmarked
