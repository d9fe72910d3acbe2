"""The per-worker page cache (render/worker/page_cache.py) in real confined workers, through the
pool.

A warm page must be the cold page's pixels with this view's watermark, never another file's,
another version's or another account's, and the cache must stay within its bound.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from render.forensic import decode
from render.pool.fair_queue import FairQueueLimits
from render.pool.render_pool import RenderPool
from render.wire.model import DocumentSource, PixelBudget, WatermarkSpec
from render.worker.entry_points import render_page
from tests import pool_helpers as helpers
from tests import render_fixtures as fx
from tests.waiting import wait_until_async

pytestmark = pytest.mark.slow  # spawns its own worker pool (see docs/testing.md)

MiB = 1 << 20
BUDGET = PixelBudget(long_side=800)  # about 2.4 MB of kept rows a letter page


@pytest.fixture
async def pool() -> AsyncIterator[RenderPool]:
    # One worker: every task of an account lands on it, so its cache is the one observed.
    single = RenderPool(workers=1, queue_size=2, timeout_seconds=20, memory_limit_bytes=1 << 30)
    yield single
    await single.close()


async def _page(pool: RenderPool, source: DocumentSource, number: int, cache_bytes: int,
                mark: WatermarkSpec | None = None,
                document: fx.LocalDocument | None = None) -> tuple[bytes, int]:
    """(JPEG, broker reads the task made)."""
    broker = document or fx.brokered(source)
    jpeg = await pool.run(render_page, source, number, mark or fx.mark(), BUDGET, 80,
                          cache_bytes, account="acct-a", document=broker)
    return jpeg, len(broker.reads)


async def _state(pool: RenderPool, account: str = "acct-a") -> tuple[list[int], list[str]]:
    text = await pool.run(*helpers.task(helpers.page_cache_state), account=account)
    head, *kept = text.split("\n")
    return [int(n) for n in head.split()], kept


def _decoded(jpeg: bytes) -> Image.Image:
    return Image.open(io.BytesIO(jpeg))


def _same_pixels(first: bytes, second: bytes) -> bool:
    """Whether two JPEGs of a page without colour (greyscale or RGB) show the same pixels."""
    difference = ImageChops.difference(_decoded(first).convert("L"),
                                       _decoded(second).convert("L"))
    return max(difference.getextrema()) <= 1


async def test_a_warm_page_is_the_cold_pages_bytes_and_reads_nothing(
    pool: RenderPool, tmp_path: Path
) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(3), fx.PDF)
    uncached, _ = await _page(pool, source, 2, 0)
    cold, _ = await _page(pool, source, 2, 64 * MiB)
    (entries, *_), _ = await _state(pool)
    assert entries == 0  # a page rendered once is not kept (PageCache.admit)
    kept_now, _ = await _page(pool, source, 2, 64 * MiB)
    warm, warm_reads = await _page(pool, source, 2, 64 * MiB)
    # Same viewer, same text: the same JPEG, byte for byte, from PDFium or from the cache...
    assert warm == kept_now and cold == uncached
    # ...greyscale from the render that kept it on, since the page has no colour: the same
    # pixels (R = G = B, so JPEG's luma plane is the same data) in one channel.
    assert (_decoded(warm).mode, _decoded(cold).mode) == ("L", "RGB")
    assert _same_pixels(warm, cold)
    assert warm_reads == 0  # served from the worker's memory, not from the document
    (entries, _, hits, _), kept = await _state(pool)
    assert entries == 1 and hits == 1 and kept == [f"{source.cache_key} {source.version} 2"]
    other_viewer, reads = await _page(pool, source, 2, 64 * MiB, fx.mark(name="Bruno Keller"))
    assert reads == 0 and other_viewer != warm  # a warm page still carries its own viewer
    fx.blob_path(source).unlink()
    with pytest.raises(FileNotFoundError):  # deleted: refused although its pixels are kept
        await _page(pool, source, 2, 64 * MiB)


async def test_the_cache_never_serves_another_file_or_a_replaced_version(
    pool: RenderPool, tmp_path: Path
) -> None:
    text = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    grey = fx.encrypt_to_local(tmp_path, fx.solid_pdf(0.3), fx.PDF)
    text_cold, _ = await _page(pool, text, 1, 64 * MiB)
    grey_cold, _ = await _page(pool, grey, 1, 64 * MiB)
    assert text_cold != grey_cold
    kept_now = (await _page(pool, text, 1, 64 * MiB))[0]  # kept from now on
    assert _same_pixels(kept_now, text_cold)
    assert (await _page(pool, text, 1, 64 * MiB)) == (kept_now, 0)  # from the cache
    # The text file replaced by the grey content: same file id, a new blob name.
    replaced = dataclasses.replace(grey, cache_key=text.cache_key)
    served, reads = await _page(pool, replaced, 1, 64 * MiB, document=fx.brokered(grey))
    assert served == grey_cold and reads > 0  # rendered from the new blob, not the kept page


async def test_a_colour_page_is_kept_and_served_in_colour(
    pool: RenderPool, tmp_path: Path
) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.jpeg(), fx.JPEG)
    cold, _ = await _page(pool, source, 1, 64 * MiB)
    kept_now, _ = await _page(pool, source, 1, 64 * MiB)
    warm, reads = await _page(pool, source, 1, 64 * MiB)
    assert reads == 0 and warm == kept_now == cold  # RGBX kept: the colour JPEG, byte for byte
    assert _decoded(warm).mode == "RGB"
    (entries, nbytes, *_), _ = await _state(pool)
    width, height = _decoded(warm).size
    assert entries == 1 and nbytes > 3 * width * height // 2  # 4 bytes a pixel of the page


@pytest.mark.parametrize("kind", ["grey text", "colour photo"])
async def test_a_warm_marked_page_is_the_cold_pages_bytes(
    pool: RenderPool, tmp_path: Path, kind: str
) -> None:
    """A warm page gets the invisible mark while its kept rows are copied in, a cold one after
    PDFium or Pillow drew it: the same pixels either way, and the mark reads back."""
    if kind == "grey text":
        source, number = fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF), 2
    else:
        source, number = fx.encrypt_to_local(tmp_path, fx.jpeg(), fx.JPEG), 1
    marked = dataclasses.replace(fx.mark(), render_id=0x0A5A_1234_ABCD, mark_value=0x1357_9BDF_0246)
    uncached, _ = await _page(pool, source, number, 0, marked)
    cold, _ = await _page(pool, source, number, 64 * MiB, marked)
    kept_now, _ = await _page(pool, source, number, 64 * MiB, marked)
    warm, reads = await _page(pool, source, number, 64 * MiB, marked)
    assert reads == 0 and warm == kept_now and cold == uncached
    assert _same_pixels(warm, cold) if kind == "grey text" else warm == cold
    if kind == "grey text":  # (the photo is too busy at this size for the mark to read)
        assert decode(_decoded(warm)) == 0x1357_9BDF_0246  # the sealed value, as served
    unmarked, _ = await _page(pool, source, number, 64 * MiB)
    assert not _same_pixels(warm, unmarked)


async def test_another_accounts_worker_holds_none_of_its_pages(
    pool: RenderPool, tmp_path: Path
) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    for _ in range(2):
        await _page(pool, source, 1, 64 * MiB)
    (entries, *_), _ = await _state(pool, "acct-a")
    assert entries == 1
    (entries, nbytes, hits, misses), kept = await _state(pool, "acct-b")
    assert (entries, nbytes, hits, misses) == (0, 0, 0, 0) and kept == []


async def test_the_cache_stays_within_its_bound(pool: RenderPool, tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(4), fx.PDF)
    bound = 5 * MiB // 4  # two text pages of about 0.6 MB (grey: kept as L) fit, not three
    for number in (1, 1, 2, 2, 3, 3, 4, 4):
        await _page(pool, source, number, bound)
    (entries, nbytes, _, misses), kept = await _state(pool)
    assert entries == 2 and 0 < nbytes <= bound
    assert [line.split()[-1] for line in kept] == ["3", "4"]  # least recently used out first
    await _page(pool, source, 1, bound)
    (_, _, _, misses_after), kept = await _state(pool)
    assert misses_after == misses + 1  # page 1 was evicted: rendered again, and kept again
    assert [line.split()[-1] for line in kept] == ["4", "1"]


async def test_a_page_goes_to_the_worker_that_kept_it(tmp_path: Path) -> None:
    # Two workers, both allowed to one account: each page should stay on the worker that has it.
    pool = RenderPool(workers=2, queue_size=4, timeout_seconds=20, memory_limit_bytes=1 << 30,
                      fairness=FairQueueLimits(max_running_per_account=2))
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(2), fx.PDF)

    def render(number: int) -> asyncio.Future[bytes]:
        return pool.submit(render_page, source, number, fx.mark(), BUDGET, 80, 64 * MiB,
                           account="acct-a", document=fx.brokered(source),
                           affinity=(source.cache_key, number))

    try:
        await pool.wait_ready()
        await wait_until_async(lambda: pool.ready_workers() == 2, what="both workers ready")
        await asyncio.gather(render(1), render(2))  # at once: one page on each worker
        for _ in range(3):  # one at a time: either worker would be idle for either page
            for number in (1, 2):
                await render(number)
        states = [await pool.run(*helpers.task(helpers.page_cache_state), account="acct-a",
                                 affinity=(source.cache_key, number)) for number in (1, 2)]
    finally:
        await pool.close()
    for number, state in zip((1, 2), states, strict=True):
        head, *kept = state.split("\n")
        entries, _, hits, _ = (int(n) for n in head.split())
        # Each worker kept only its own page (at its second view) and served the last two
        # views of it from memory.
        assert kept == [f"{source.cache_key} {source.version} {number}"], states
        assert (entries, hits) == (1, 2)
