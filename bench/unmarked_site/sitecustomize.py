"""Bench only (`bench.leakmark_run`): a vaultd started with this directory first on PYTHONPATH
serves pages without the leak-tracing mark (no invisible mark, no trace code drawn), everything
else unchanged, so that the mark's cost can be measured against the same server in the same run.
Python imports `sitecustomize` at start in every process, the render zygote included (its
forked workers inherit the patch). Never on a deployment's path: production has no switch."""

from __future__ import annotations

import dataclasses

from render import watermark
from render.model import WatermarkSpec

_prepare = watermark.prepare


def _prepare_unmarked(mark: WatermarkSpec, width: int, strip: watermark.Strip
                      ) -> watermark.Overlay:
    return _prepare(dataclasses.replace(mark, render_id=None), width, strip)


watermark.prepare = _prepare_unmarked
