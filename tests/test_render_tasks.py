"""The worker-side tasks, called in-process: real PDFium, real Pillow, real encrypted blobs."""

from __future__ import annotations

import io
import pickle
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageStat

from render.documents.brokered_reads import open_blob
from render.page import canvas
from render.page.rasterise import decode_image, render_pdf_page
from render.page.sizing import fit_scale
from render.watermark import fonts, pattern, viewer_mark, words
from render.wire.model import DocumentSource, PageOutOfRange, PixelBudget, Unreadable
from render.worker.doc_cache import CACHE, DocumentCache
from render.worker.tasks import render_page, validate_document
from tests import render_fixtures as fx
from tests.ocr import read_text
from vaultd.crypto.blob_format import BlobCorrupt

BUDGET = PixelBudget()
LETTER_PAGE = (1237, 1600)  # a US Letter page at the default budget


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    CACHE.clear()
    yield
    CACHE.clear()


def _render(source: DocumentSource, page: int = 1, **mark: str) -> Image.Image:
    image = Image.open(io.BytesIO(render_page(source, page, fx.mark(**mark), BUDGET)))
    assert image.format == "JPEG"
    return image.convert("RGB")


def _raster(source: DocumentSource, page: int = 1, budget: PixelBudget = BUDGET) -> Image.Image:
    with CACHE.lease(source) as cached:
        return render_pdf_page(cached.document, cached.stream, page, budget)


# --- validation ---------------------------------------------------------------------------------


def test_a_pdf_validates_with_its_page_count(tmp_path: Path) -> None:
    result = validate_document(fx.encrypt_to_local(tmp_path, fx.text_pdf(3), fx.PDF))
    assert (result.content_type, result.page_count) == (fx.PDF, 3)


@pytest.mark.parametrize(("make", "content_type"), [(fx.jpeg, fx.JPEG), (fx.png, fx.PNG)])
def test_an_image_validates_as_one_page(
    tmp_path: Path, make: Callable[[], bytes], content_type: str
) -> None:
    result = validate_document(fx.encrypt_to_local(tmp_path, make(), content_type))
    assert (result.content_type, result.page_count) == (content_type, 1)


@pytest.mark.parametrize(("make", "content_type", "message"), [
        (fx.corrupt_pdf, fx.PDF, "damaged"),
        (fx.encrypted_pdf, fx.PDF, "password-protected"),
        (fx.png_bomb, fx.PNG, "too large"),
        (fx.truncated_jpeg, fx.JPEG, "damaged"),
        (fx.png_bad_crc, fx.PNG, "damaged"),
        (fx.jpeg, fx.PNG, "damaged"),  # bytes that are not the declared type
])
def test_unreadable_documents_are_refused_with_a_safe_message(
    tmp_path: Path, make: Callable[[], bytes], content_type: str, message: str
) -> None:
    source = fx.encrypt_to_local(tmp_path, make(), content_type)
    with pytest.raises(Unreadable, match=message) as caught:
        validate_document(source)
    text = str(caught.value)
    assert str(tmp_path) not in text and fx.data_key(source).hex() not in text
    assert caught.value.__cause__ is None  # no parser output chained onto a client-facing error


def test_an_unreadable_document_also_fails_to_render(tmp_path: Path) -> None:
    with pytest.raises(Unreadable):
        render_page(fx.encrypt_to_local(tmp_path, fx.encrypted_pdf(), fx.PDF), 1, fx.mark(), BUDGET)


def test_task_exceptions_survive_pickling() -> None:
    for exc in (Unreadable("the PDF is damaged"), PageOutOfRange("page 9 is outside 1..3")):
        copy = pickle.loads(pickle.dumps(exc))
        assert type(copy) is type(exc) and str(copy) == str(exc)


def test_a_document_source_carries_no_key_and_no_storage_location(tmp_path: Path) -> None:
    # What a worker is sent: the key and the blob's place stay with the server's broker.
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    sent = pickle.dumps(source)
    assert fx.data_key(source) not in sent and str(tmp_path).encode() not in sent
    assert set(vars(source)) == {"content_type", "plaintext_size", "cache_key", "version"}


# --- sizing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "size"),
    [
        (fx.text_pdf, LETTER_PAGE),
        (fx.huge_page_pdf, (1600, 1600)),
        (fx.tiny_page_pdf, (1600, 1600)),
        (fx.rotated_pdf, (1600, 1237)),  # /Rotate 90 turns the portrait MediaBox landscape
    ],
)
def test_every_page_size_renders_to_the_budget(
    tmp_path: Path, make: Callable[[], bytes], size: tuple[int, int]
) -> None:
    source = fx.encrypt_to_local(tmp_path, make(), fx.PDF)
    assert _raster(source).size == size
    image = _render(source)
    assert image.width == max(size[0], 800) and size[1] < image.height < size[1] + 200


def test_the_pixel_cap_wins_over_the_long_side(tmp_path: Path) -> None:
    budget = PixelBudget(long_side=4000, max_pixels=1_000_000)
    raster = _raster(fx.encrypt_to_local(tmp_path, fx.huge_page_pdf(), fx.PDF), budget=budget)
    assert raster.width * raster.height <= 1_000_000
    assert raster.width == raster.height > 990


def test_a_large_image_is_scaled_down_to_the_budget(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.jpeg((3200, 2400)), fx.JPEG)
    with open_blob(source) as blob:
        assert decode_image(blob, fx.JPEG, BUDGET).size == (1600, 1200)


def _decoded(tmp_path: Path, data: bytes, content_type: str) -> Image.Image:
    with open_blob(fx.encrypt_to_local(tmp_path, data, content_type)) as blob:
        return decode_image(blob, content_type, BUDGET)


def test_an_exif_rotated_photo_is_shown_upright(tmp_path: Path) -> None:
    assert _decoded(tmp_path, fx.sideways_jpeg(), fx.JPEG).size == (1200, 1600)


def test_a_16_bit_grey_scan_keeps_its_tones(tmp_path: Path) -> None:
    image = _decoded(tmp_path, fx.grey16_png(), fx.PNG).convert("L")
    left = ImageStat.Stat(image.crop((0, 400, 40, 600))).mean[0]
    right = ImageStat.Stat(image.crop((1560, 400, 1600, 600))).mean[0]
    assert left < 30 and right > 225  # a ramp, not clipped to white


def test_transparency_is_flattened_onto_white(tmp_path: Path) -> None:
    image = _decoded(tmp_path, fx.palette_png(), fx.PNG)
    assert image.mode == "RGB"
    assert image.getpixel((100, 800)) == (255, 255, 255)
    assert image.getpixel((1500, 800)) == (0, 0, 0)


@pytest.mark.parametrize("size", [(0, 10), (-5, 10), (float("nan"), 10), (float("inf"), 1)])
def test_a_page_with_no_usable_size_is_unreadable(size: tuple[float, float]) -> None:
    with pytest.raises(Unreadable):
        fit_scale(*size, BUDGET)


def test_a_narrow_page_is_centred_on_a_canvas_wide_enough_for_the_strip(tmp_path: Path) -> None:
    image = _render(fx.encrypt_to_local(tmp_path, fx.text_pdf(1, (20, 2000)), fx.PDF))
    assert image.width == 800


# --- page numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", [0, -1, 4])
def test_a_pdf_page_outside_the_document_is_out_of_range(tmp_path: Path, page: int) -> None:
    with pytest.raises(PageOutOfRange):
        render_page(fx.encrypt_to_local(tmp_path, fx.text_pdf(3), fx.PDF), page, fx.mark(), BUDGET)


def test_an_image_has_only_page_one(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.png(), fx.PNG)
    assert _render(source, 1).height > 480
    with pytest.raises(PageOutOfRange):
        render_page(source, 2, fx.mark(), BUDGET)


# --- the watermark ------------------------------------------------------------------------------


def _page_area(image: Image.Image, size: tuple[int, int] = LETTER_PAGE) -> Image.Image:
    return image.crop((0, 0, *size))


def _fraction(image: Image.Image, predicate: Callable[[int], bool]) -> float:
    """Share of pixels whose grey level satisfies `predicate`."""
    histogram = image.convert("L").histogram()
    return sum(n for level, n in enumerate(histogram) if predicate(level)) / sum(histogram)


def test_two_viewers_get_different_pixels_across_the_page(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    alice = _page_area(_render(source))
    bob = _page_area(_render(source, name="Bob Stone", email="bob@example.org", ip="198.51.100.9"))
    diff = ImageChops.difference(alice, bob).convert("L")
    assert _fraction(diff, lambda v: v > 24) > 0.01
    # Spread over the whole page, not just one corner: every quarter differs.
    for box in ((0, 0, 618, 800), (618, 0, 1237, 800), (0, 800, 618, 1600), (618, 800, 1237, 1600)):
        assert _fraction(diff.crop(box), lambda v: v > 24) > 0.005


def test_the_pattern_shows_on_a_white_page_and_leaves_it_readable(tmp_path: Path) -> None:
    page = _page_area(_render(fx.encrypt_to_local(tmp_path, fx.solid_pdf(1), fx.PDF)))
    assert _fraction(page, lambda v: v < 215) > 0.02
    assert ImageStat.Stat(page.convert("L")).mean[0] > 220


def test_the_pattern_shows_on_a_black_page(tmp_path: Path) -> None:
    page = _page_area(_render(fx.encrypt_to_local(tmp_path, fx.solid_pdf(0), fx.PDF)))
    assert _fraction(page, lambda v: v > 40) > 0.02
    assert ImageStat.Stat(page.convert("L")).mean[0] < 40


def test_the_pattern_shows_on_a_photograph(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.jpeg((1600, 1200)), fx.JPEG)
    with open_blob(source) as blob:
        plain = decode_image(blob, fx.JPEG, BUDGET)
    marked = _page_area(_render(source), plain.size)
    assert _fraction(ImageChops.difference(plain, marked), lambda v: v > 24) > 0.02


def _ocr(image: Image.Image, tmp_path: Path) -> str:
    return read_text(image, tmp_path)


def test_the_bottom_strip_reads_back_by_ocr(tmp_path: Path) -> None:
    image = _render(fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF))
    text = _ocr(image.crop((0, LETTER_PAGE[1], image.width, image.height)), tmp_path)
    for expected in ("alice@example.com", "Alice Martin", "203.0.113.7", "Acme Legal",
                     "2026-11-22 14:05:09"):
        assert expected in text, text


def test_names_in_any_script_are_drawn_with_a_font_that_has_them() -> None:
    name = "Zoë Ångström Ελένη Жанна 王小明 さくら"
    paths = fonts.font_paths()
    assert len(paths) == 2, "no CJK font: apt-get install fonts-droid-fallback"
    for run, index in fonts.runs(name):
        for char in run.replace(" ", ""):
            assert fonts.has_glyph(paths[index], char), (char, paths[index])
    assert [run for run, index in fonts.runs(name) if index == 1] == ["王小明 さくら"]


def test_a_cjk_name_is_not_drawn_as_tofu() -> None:
    def drawn(text: str) -> bytes:
        image = Image.new("RGB", (200, 60), (255, 255, 255))
        fonts.draw_line(ImageDraw.Draw(image), (5, 45), text, 32)
        return image.tobytes()

    tofu = drawn("\U0010fffd")
    assert drawn("王") != tofu and drawn("Ж") != tofu
    assert drawn("王") != drawn("明")


def test_a_name_in_many_scripts_renders(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    assert _render(source, name="Zoë Ελένη Жанна 王小明").height > LETTER_PAGE[1]


def test_control_and_format_characters_are_stripped() -> None:
    cleaned = viewer_mark.clean("Mal\x00lory\x1b[31m \u202egnp.exe\nline\u200b two\t x", 100)
    assert cleaned == "Mallory[31m gnp.exe line two x"
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in cleaned)
    lines = viewer_mark.strip_lines(fx.mark(name="Eve\nViewer: someone@else.com"))
    assert len(lines) == 3 and all("\n" not in line for line in lines)


def test_over_long_values_are_cut() -> None:
    assert len(viewer_mark.clean("x" * 5000, 100)) == 100
    lines = viewer_mark.tile_lines(fx.mark(email="a" * 300 + "@example.com"))
    assert max(len(line) for line in lines) <= viewer_mark.TILE_LINE_CHARS


def test_a_very_long_email_wraps_inside_the_strip(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    short, long = _render(source), _render(source, email="a" * 240 + "@example.com")
    assert long.width == short.width and long.height > short.height


def test_a_new_second_redraws_only_the_time_in_the_pattern(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    pattern.word.cache_clear()
    viewer_mark.drawn_overlay.cache_clear()
    first = _render(source, when="2026-11-22 14:05:09 CET (UTC+01:00)")
    drawn = pattern.word.cache_info().misses
    second = _render(source, when="2026-11-22 14:05:10 CET (UTC+01:00)")
    assert pattern.word.cache_info().misses == drawn + 1  # the new seconds, "10", nothing else
    # Nothing of the first display is re-served: the strip and the pattern both changed.
    diff = ImageChops.difference(first, second).convert("L")
    assert diff.crop((0, LETTER_PAGE[1], first.width, first.height)).getbbox() is not None
    assert diff.crop((0, 0, *LETTER_PAGE)).getbbox() is not None


def test_an_overlay_is_reused_only_for_exactly_the_same_facts() -> None:
    # Pages asked for within one second share an overlay; any other fact draws a new one.
    plan = canvas.layout(LETTER_PAGE, fx.mark(), BUDGET)
    first = viewer_mark.prepare(fx.mark(), plan.width, plan.strip)
    assert viewer_mark.prepare(fx.mark(), plan.width, plan.strip) is first
    others = [fx.mark(when="2026-11-22 14:05:10 CET (UTC+01:00)"), fx.mark(ip="203.0.113.8"),
              fx.mark(name="Alice Marti"), fx.mark(email="alice@example.co"),
              fx.mark(brand="Acme Legal 2")]
    for other in others:
        layout = canvas.layout(LETTER_PAGE, other, BUDGET)
        drawn = viewer_mark.prepare(other, layout.width, layout.strip)
        assert drawn.strip.tobytes() != first.strip.tobytes()
        assert drawn.tile.pieces != first.tile.pieces


def test_a_clock_time_is_set_as_two_kept_pieces_that_read_as_one_word() -> None:
    placed = words.positions("at 14:05:09 CET", 30, True)
    assert [word for _, word in placed] == ["at", "14:05:", "09", "CET"]
    whole = words.positions("at 14:05:09 CET".replace("14:05:09", "14:05:09x"), 30, True)
    assert [word for _, word in whole] == ["at", "14:05:09x", "CET"]
    # The same place for the next word as if the time were one word (digits do not kern).
    assert placed[3][0] == pytest.approx(
        words.width("at", 30, True) + 2 * words.width(" ", 30, True)
        + fonts.text_width("14:05:09", 30, True), abs=1.0)


def test_a_right_to_left_line_is_laid_out_whole(tmp_path: Path) -> None:
    assert words.positions("Viewer: Noa Levi", 20) == [
        (0.0, "Viewer:"), (pytest.approx(words.width("Viewer: ", 20)), "Noa"),
        (pytest.approx(words.width("Viewer: Noa ", 20), abs=1.0), "Levi")]
    hebrew = "Viewer: נועה לוי"
    assert words.positions(hebrew, 20) == [(0.0, hebrew)]  # bidi reorders the whole line
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF)
    assert _render(source, name="נועה לוי").height > LETTER_PAGE[1]


def test_the_reused_canvas_carries_nothing_over_between_pages(tmp_path: Path) -> None:
    black = fx.encrypt_to_local(tmp_path, fx.solid_pdf(0), fx.PDF)
    narrow = fx.encrypt_to_local(tmp_path, fx.text_pdf(1, (20, 2000)), fx.PDF)
    _render(black)  # fills the worker's buffer with black
    image = _render(narrow)  # a smaller canvas: white margins, the strip, a thin page
    page = image.crop((0, 0, image.width, 1600))
    assert _fraction(page, lambda v: v < 40) < 0.01
    margins = (page.crop((0, 0, 380, 1600)), page.crop((420, 0, 800, 1600)))
    assert all(ImageStat.Stat(m.convert("L")).mean[0] > 220 for m in margins)


# --- the document cache -------------------------------------------------------------------------


def test_consecutive_pages_reuse_one_opened_document(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.text_pdf(3), fx.PDF)
    opened_before = CACHE.opens
    for page in (1, 2, 3, 2):
        render_page(source, page, fx.mark(), BUDGET)
    assert CACHE.opens - opened_before == 1 and source.cache_key in CACHE


def test_a_page_render_reads_only_part_of_a_large_pdf(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.heavy_pdf(), fx.PDF)
    render_page(source, 1, fx.mark(), BUDGET)
    with CACHE.lease(source) as cached:
        fetched = cached.blob.plaintext.bytes_fetched
    assert 0 < fetched < source.plaintext_size / 4


def test_a_damaged_chunk_fails_only_the_pages_that_read_it(tmp_path: Path) -> None:
    source = fx.encrypt_to_local(tmp_path, fx.heavy_pdf(), fx.PDF)
    blob = bytearray(fx.blob_path(source).read_bytes())
    blob[len(blob) // 2] ^= 1
    fx.blob_path(source).write_bytes(bytes(blob))
    failed = []
    for page in range(1, 13):
        try:
            render_page(source, page, fx.mark(), BUDGET)
        except BlobCorrupt:
            failed.append(page)
    # Surfaced as BlobCorrupt (storage damage), not as a half-drawn page or a bad upload; the
    # pages after it render from a freshly opened document.
    assert 1 <= len(failed) <= 3 and failed[-1] < 12


def test_the_cache_is_bounded_and_forgets_idle_documents(tmp_path: Path) -> None:
    now = [0.0]
    cache = DocumentCache(capacity=2, ttl_seconds=60, clock=lambda: now[0])
    first, second, third = (fx.encrypt_to_local(tmp_path, fx.text_pdf(1), fx.PDF) for _ in range(3))
    try:
        for source in (first, second, third):
            with cache.lease(source):
                pass
        assert first.cache_key not in cache and len(cache) == 2
        now[0] = 61.0
        with cache.lease(first):
            pass
        assert len(cache) == 1 and first.cache_key in cache
    finally:
        cache.clear()
