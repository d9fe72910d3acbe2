"""A confined render worker imports nothing after its confinement, whatever task it runs.

It runs under a uid of its own, and where the checkout or the virtualenv is private (a 0700
home) that uid cannot read them: a module first imported during a task fails there only (a
lazily loaded `numpy.ma` did, seen once as a 422 in a clean-clone CI run). Here every kind of
task runs in one real worker, through every path (uploads of each format, cold and warm pages
with the mark, traces through every reading of the decoder), then the worker says what it
imported since it was confined (`render.worker.late_imports`), so such an import fails this test on
any layout.
"""

from __future__ import annotations

import dataclasses
import io
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image, ImageEnhance

from bench.leakmark_attacks import ATTACKS, SERVED_QUALITY, corpus_pages, marked
from bench.leakmark_wash import WASHES
from render.forensic import placement
from render.forensic.layout import keyed
from render.forensic_wire.evidence import Evidence
from render.pool.render_pool import RenderPool
from render.wire.model import PixelBudget, Unreadable
from render.worker.entry_points import (
    identify_office,
    read_placement,
    render_page,
    score_placement,
    trace_image,
    validate_document,
)
from tests import office_documents as od
from tests import pool_helpers as helpers
from tests import render_fixtures as fx

pytestmark = pytest.mark.slow  # spawns its own worker pool (see docs/testing.md)

MiB = 1 << 20
LAYOUT_KEY = bytes(range(32))  # a deployment's layout subkey: laid out and read in the worker


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    # One worker: every task lands on it, so its imports are the ones observed.
    single = RenderPool(workers=1, queue_size=2, timeout_seconds=60, memory_limit_bytes=2 << 30)
    yield single
    await single.close()


def _encoded(image: Image.Image, kind: str, quality: int = SERVED_QUALITY) -> bytes:
    out = io.BytesIO()
    image.save(out, kind, **({"quality": quality} if kind == "JPEG" else {}))
    return out.getvalue()


async def _late(pool: RenderPool) -> list[str]:
    late = await pool.run(*helpers.task(helpers.late_imports), account="acct")
    return [name for name in late.split("\n") if name]


async def test_no_task_imports_anything_after_confinement(pool: RenderPool,
                                                          tmp_path: Path) -> None:
    assert await _late(pool) == []
    sources = {
        "pdf": fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF),
        "jpeg": fx.encrypt_to_local(tmp_path, fx.sideways_jpeg(), fx.JPEG),
        "png": fx.encrypt_to_local(tmp_path, fx.palette_png(), fx.PNG),
        "grey16": fx.encrypt_to_local(tmp_path, fx.grey16_png(), fx.PNG),
    }
    for source in sources.values():
        await pool.run(validate_document, source, account="acct", document=fx.brokered(source))
    # An Office upload's index, read and scanned in the worker (render.office.formats).
    for office in (od.docx(["late"]), od.ods([[["late"]]])):
        source = fx.encrypt_to_local(tmp_path, office, "application/zip")
        assert await pool.run(identify_office, source, account="acct",
                              document=fx.brokered(source))
    # With the placement mark too (`trace.placement_mark`): the pattern's words moved.
    mark = dataclasses.replace(fx.mark(), render_id=0x0123_4567_89AB, mark_value=0x0BA9_8765_4321,
                               mark_layout=LAYOUT_KEY, placement_seed=bytes(range(16)))
    for source in (sources["pdf"], sources["jpeg"]):
        for _ in range(3):  # cold, cold and kept, warm
            await pool.run(render_page, source, 1, mark, PixelBudget(long_side=900), 80,
                           64 * MiB, account="acct", document=fx.brokered(source))
    page = corpus_pages(1)[0]
    rng = random.Random(3)
    # Marked, through the clipped-paper readings and the lattice's ink levels, as JPEG and PNG.
    leak = ATTACKS["brightness +20% + jpeg q50"](marked(page, 0x0BA9_8765_4321, LAYOUT_KEY),
                                                 page.page_height, rng)
    assert [await pool.run(trace_image, _encoded(leak, kind), LAYOUT_KEY, account="acct")
            for kind in ("JPEG", "PNG")] == [0x0BA9_8765_4321] * 2
    # Unmarked pages with the pattern (every reading runs, none finds a mark), and a photo.
    unmarked = [ImageEnhance.Brightness(page.image).enhance(1.2),
                ATTACKS["contrast +20% + jpeg q50"](page.image, page.page_height, rng),
                ATTACKS["screenshot"](page.image, page.page_height, rng), fx.photo()]
    assert [await pool.run(trace_image, _encoded(image, "JPEG"), LAYOUT_KEY, account="acct")
            for image in unmarked] == [None] * len(unmarked)
    with pytest.raises(Unreadable, match="the image is damaged"):
        await pool.run(trace_image, fx.truncated_jpeg(), LAYOUT_KEY, account="acct")
    # The placement mark's reading: a page with moved words, washed of its chips (read whole),
    # a page beside a surround and a photo (not read).
    placed = WASHES["observed chips, no key"](
        marked(page, 0x0BA9_8765_4321, LAYOUT_KEY, bytes(16)), page.page_height, keyed(None))
    evidence = await pool.run(read_placement, _encoded(placed, "PNG"), account="acct")
    assert evidence is not None
    # Scored in the worker, against the page's own seed and two others: as in this process.
    seeds = [bytes(16), bytes(range(16)), bytes(range(1, 17))]
    scored = await pool.run(score_placement, evidence, seeds, account="acct")
    here = placement.screened(Evidence.from_bytes(evidence), seeds)
    assert scored == here.astype("<f8").tobytes()
    assert int(here.argmax()) == 0
    assert [await pool.run(read_placement, _encoded(image, "JPEG"), account="acct")
            for image in unmarked[2:]] == [None, None]
    assert await _late(pool) == []
