"""The watermark pattern's blends against Pillow's paste, the oracle: the C loop
(render/_blend.c) and the fallback used when it was not built (render/blend_pillow.py).

Every test runs on both, so an install without a compiler draws the same pages."""

from __future__ import annotations

import random

import pytest
from PIL import Image

from render import _blend, blend, blend_pillow, pattern
from render.pattern import Piece

IMPLEMENTATIONS = {"C": _blend.paste, "Pillow": blend_pillow.paste}

WIDTH, HEIGHT = 97, 61  # odd sizes: no row happens to align with anything


def _random_piece(rng: random.Random) -> Piece:
    width, height = rng.randint(1, 30), rng.randint(1, 20)
    grey = rng.randbytes(width * height)
    opacity = bytes(rng.choice((0, 0, 255, rng.randint(1, 254))) for _ in range(width * height))
    return Piece(rng.randint(-15, 15), rng.randint(-15, 15), width, height,
                 b"".join(bytes((g, g, g, 255)) for g in grey),
                 b"".join(bytes((a, a, a, 0)) for a in opacity))


def _rgb(pixels: bytes | bytearray, size: tuple[int, int] = (WIDTH, HEIGHT)) -> bytes:
    # The X byte carries nothing (the JPEG encoder drops it); Pillow blends it, the C loop not.
    return Image.frombytes("RGBX", size, bytes(pixels)).convert("RGB").tobytes()


def _pillow_paste(canvas: Image.Image, corners: list[tuple[int, int]], pieces: list[Piece],
                  area: tuple[int, int]) -> None:
    """The reference: Pillow's masked paste, clipped to `area` by pasting onto a crop of it."""
    page = canvas.crop((0, 0, *area))
    for left, top in corners:
        for piece in pieces:
            size = (piece.width, piece.height)
            colour = Image.frombytes("RGBX", size, piece.colour)
            alpha = Image.frombytes("RGBX", size, piece.alpha).getchannel(0)
            page.paste(colour, (left + piece.dx, top + piece.dy), alpha)
    canvas.paste(page, (0, 0))


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def paste(request: pytest.FixtureRequest) -> blend.Paste:
    return IMPLEMENTATIONS[request.param]


def test_the_c_loop_is_used_when_it_was_built() -> None:
    assert blend.IMPLEMENTATION == "C" and blend.paste is _blend.paste


@pytest.mark.parametrize("seed", range(5))
def test_the_blend_matches_pillows_paste_and_stays_inside_the_area(
    seed: int, paste: blend.Paste
) -> None:
    rng = random.Random(seed)
    before = Image.frombytes("RGBX", (WIDTH, HEIGHT), rng.randbytes(WIDTH * HEIGHT * 4))
    # Corners off every edge, so pieces are clipped left, right, above and below the area.
    corners = [(rng.randint(-40, WIDTH + 10), rng.randint(-40, HEIGHT + 10)) for _ in range(12)]
    pieces = [_random_piece(rng) for _ in range(8)]
    area = (WIDTH - 7, HEIGHT - 9)
    expected = before.copy()
    _pillow_paste(expected, corners, pieces, area)
    pixels = bytearray(before.tobytes())
    paste(pixels, WIDTH * 4, area, corners, pieces)
    assert _rgb(pixels) == _rgb(expected.tobytes())
    assert _rgb(pixels) != _rgb(before.tobytes())  # something was drawn
    blended = Image.frombytes("RGBX", (WIDTH, HEIGHT), bytes(pixels))
    outside = [(0, area[1], WIDTH, HEIGHT), (area[0], 0, WIDTH, area[1])]
    assert all(blended.crop(box).tobytes() == before.crop(box).tobytes() for box in outside)


def test_a_tile_blends_over_a_page_like_pillow_did(paste: blend.Paste) -> None:
    tile = pattern.make_tile(["Confidential — Acme", "Ann Lee", "ann@example.com"], 24)
    size = (400, 300)
    page = Image.linear_gradient("L").resize(size).convert("RGBX")
    corners = pattern.lattice(size, tile.block, tile.size)
    expected = page.copy()
    _pillow_paste(expected, corners, tile.pieces, size)
    pixels = bytearray(page.tobytes())
    paste(pixels, size[0] * 4, size, corners, tile.pieces)
    assert _rgb(pixels, size) == _rgb(expected.tobytes(), size)
    assert _rgb(pixels, size) != _rgb(page.tobytes(), size)


@pytest.mark.parametrize("damage", ["short colour", "short alpha", "negative size", "not a tuple"])
def test_a_malformed_piece_is_refused_before_any_pixel_is_drawn(
    damage: str, paste: blend.Paste
) -> None:
    good = Piece(0, 0, 2, 2, bytes(16), b"\xff" * 16)
    bad = {
        "short colour": good._replace(colour=bytes(15)),
        "short alpha": good._replace(alpha=bytes(17)),
        "negative size": good._replace(width=-2, height=-2),
        "not a tuple": "piece",
    }[damage]
    pixels = bytearray(b"\x80" * WIDTH * HEIGHT * 4)
    with pytest.raises((ValueError, TypeError)):
        paste(pixels, WIDTH * 4, (WIDTH, HEIGHT), [(0, 0)], [good, bad])
    assert pixels == bytearray(b"\x80" * WIDTH * HEIGHT * 4)


@pytest.mark.parametrize(("canvas", "stride", "area"), [
    (bytearray(WIDTH * HEIGHT * 4), WIDTH * 4, (WIDTH, HEIGHT + 1)),  # taller than the buffer
    (bytearray(WIDTH * HEIGHT * 4), WIDTH * 4 - 1, (WIDTH, HEIGHT)),  # rows overlap
    (bytearray(WIDTH * HEIGHT * 4), WIDTH * 4, (-1, HEIGHT)),
])
def test_an_area_that_does_not_fit_the_canvas_is_refused(
    canvas: bytearray, stride: int, area: tuple[int, int], paste: blend.Paste
) -> None:
    with pytest.raises(ValueError, match="does not fit"):
        paste(canvas, stride, area, [(0, 0)], [])


def test_a_read_only_canvas_is_refused(paste: blend.Paste) -> None:
    with pytest.raises(TypeError):
        paste(bytes(WIDTH * HEIGHT * 4), WIDTH * 4, (WIDTH, HEIGHT), [], [])


@pytest.mark.parametrize("corner", [(0,), "xy", (0, "y")])
def test_a_malformed_corner_is_refused_before_any_pixel_is_drawn(
    corner: object, paste: blend.Paste
) -> None:
    pixels = bytearray(b"\x80" * WIDTH * HEIGHT * 4)
    piece = Piece(0, 0, 2, 2, bytes(16), b"\xff" * 16)
    with pytest.raises(TypeError):
        paste(pixels, WIDTH * 4, (WIDTH, HEIGHT), [(0, 0), corner], [piece])
    assert pixels == bytearray(b"\x80" * WIDTH * HEIGHT * 4)


EXPAND = {"C": _blend.expand_grey, "Pillow": blend_pillow.expand_grey}


@pytest.mark.parametrize("expand", EXPAND.values(), ids=list(EXPAND))
def test_grey_rows_expand_into_the_canvas_and_nothing_else(expand: blend.ExpandGrey) -> None:
    rng = random.Random(7)
    stride, rows = WIDTH * 4 + 12, HEIGHT - 5  # a padded stride; rows under them untouched
    grey = rng.randbytes(WIDTH * rows)
    canvas = bytearray(rng.randbytes(stride * HEIGHT))
    before = bytes(canvas)
    expand(canvas, stride, grey, WIDTH, rows)
    for y in range(HEIGHT):
        row = canvas[y * stride:(y + 1) * stride]
        old = before[y * stride:(y + 1) * stride]
        assert row[WIDTH * 4:] == old[WIDTH * 4:]  # the padding is never written
        if y >= rows:
            assert row == old
            continue
        expected = b"".join(bytes((g, g, g, 255)) for g in grey[y * WIDTH:(y + 1) * WIDTH])
        assert row[:WIDTH * 4] == expected


@pytest.mark.parametrize("expand", EXPAND.values(), ids=list(EXPAND))
def test_grey_rows_that_do_not_fit_are_refused(expand: blend.ExpandGrey) -> None:
    canvas = bytearray(WIDTH * 4 * HEIGHT)
    with pytest.raises(ValueError, match="the grey rows do not fit the canvas"):
        expand(canvas, WIDTH * 4, bytes(WIDTH * HEIGHT), WIDTH, HEIGHT + 1)
    with pytest.raises(ValueError, match="the grey rows do not fit the canvas"):
        expand(canvas, WIDTH * 4, bytes(WIDTH * HEIGHT - 1), WIDTH, HEIGHT)
    assert canvas == bytearray(WIDTH * 4 * HEIGHT)
