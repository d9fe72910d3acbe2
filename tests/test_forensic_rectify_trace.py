"""A photo framed on the page made by the frozen generator of the untuned families
(`bench.leakmark_untuned.filled`: a pinhole camera filled with the page, uneven light, a lens's
blur, sensor noise, resizes and a lossy save), read by the trace task a render worker runs
(`render.forensic.trace_task.trace_image`, from the image's bytes, in the bench deployment's
layout): the marked photo names its view, the same photo of the page served unmarked names
none (docs/leak-tracing.md, "Photos framed on the page")."""

from __future__ import annotations

import functools
import io
import random

import pytest

from bench.leakmark import LAYOUT_KEY, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from bench.leakmark_untuned import filled
from render.forensic.trace_task import trace_image
from tests.forensic_pages import text_cover

# The page's render, the camera's and the read: about 10 s of CPU, minutes on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.forensic]
RENDER_ID = 0x0B5C3A79D21
SEED = 2  # the generator's draws for this leak: yaw, pitch, roll, framing, light, saves


@functools.cache
def _leak(mark: bool) -> bytes:
    """The text cover served (JPEG q80), marked or not, as the generator photographs it at
    SEED, as PNG bytes (what a user would upload after converting a WebP leak)."""
    page = text_cover()
    served = jpeg(mark_page(page, RENDER_ID) if mark else page.image, SERVED_QUALITY)
    out = io.BytesIO()
    filled(served, random.Random(SEED)).save(out, "PNG", compress_level=1)
    return out.getvalue()


@pytest.mark.parametrize(("mark", "expected"), [(True, RENDER_ID), (False, None)],
                         ids=["marked", "unmarked"])
def test_the_trace_task_reads_a_photo_framed_on_the_page(mark: bool,
                                                         expected: int | None) -> None:
    assert trace_image(_leak(mark), LAYOUT_KEY) == expected
