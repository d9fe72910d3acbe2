"""The watermark pattern's blends against Pillow's paste, the oracle: the C loop
(render/kernels/_blend.c) and the fallback used when it was not built
(render/kernels/blend_pillow.py).

Every test runs on both, so an install without a compiler draws the same pages."""

from __future__ import annotations

import random

import pytest
from PIL import Image

from render.kernels import _blend, _paper, blend, blend_pillow
from render.watermark import pattern
from render.watermark.pattern import MarkedPiece, Piece

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
    assert blend.darken is _paper.darken and blend.expand_grey is _paper.expand_grey


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


def _pillow_masked_paste(canvas: Image.Image, corners: list[tuple[int, int]],
                         pieces: list[Piece | MarkedPiece], area: tuple[int, int],
                         mask: tuple[bytes, int, int]) -> None:
    """The reference for a masked paste: pixel by pixel, the piece's `marked` opacity on the
    chips whose cell is set, its own elsewhere."""
    cells, chip, chips = mask
    page = canvas.crop((0, 0, *area))
    for left, top in corners:
        for piece in pieces:
            size = (piece.width, piece.height)
            alpha = Image.frombytes("RGBX", size, piece.alpha).getchannel(0)
            marked = alpha if not isinstance(piece, MarkedPiece) else Image.frombytes(
                "RGBX", size, piece.marked).getchannel(0)
            chosen, stronger = bytearray(alpha.tobytes()), marked.tobytes()
            for y in range(piece.height):
                for x in range(piece.width):
                    cx, cy = left + piece.dx + x, top + piece.dy + y
                    if cx >= 0 and cy >= 0 and cells[(cy // chip) % chips * chips
                                                     + (cx // chip) % chips]:
                        chosen[y * piece.width + x] = stronger[y * piece.width + x]
            page.paste(Image.frombytes("RGBX", size, piece.colour),
                       (left + piece.dx, top + piece.dy), Image.frombytes("L", size, chosen))
    canvas.paste(page, (0, 0))


@pytest.mark.parametrize("seed", range(4))
def test_a_masked_blend_uses_the_marked_opacity_on_the_set_chips_only(
    seed: int, paste: blend.Paste
) -> None:
    rng = random.Random(100 + seed)
    before = Image.frombytes("RGBX", (WIDTH, HEIGHT), rng.randbytes(WIDTH * HEIGHT * 4))
    corners = [(rng.randint(-40, WIDTH + 10), rng.randint(-40, HEIGHT + 10)) for _ in range(10)]
    pieces: list[Piece | MarkedPiece] = []
    for n in range(8):
        piece = _random_piece(rng)
        if n % 4:  # a quarter keep their one opacity (no marked plane)
            pieces.append(MarkedPiece(*piece, bytes(min(255, b + 40) for b in piece.alpha)))
        else:
            pieces.append(piece)
    mask = (bytes(rng.choice((0, 1)) for _ in range(9)), rng.choice((3, 4, 8)), 3)
    area = (WIDTH - 5, HEIGHT - 3)
    expected = before.copy()
    _pillow_masked_paste(expected, corners, pieces, area, mask)
    pixels = bytearray(before.tobytes())
    paste(pixels, WIDTH * 4, area, corners, pieces, mask)
    assert _rgb(pixels) == _rgb(expected.tobytes())
    # The mask made a difference, and without it the marked planes are ignored.
    plain = bytearray(before.tobytes())
    paste(plain, WIDTH * 4, area, corners, pieces)
    reference = before.copy()
    _pillow_paste(reference, corners, [Piece(*p[:6]) for p in pieces], area)
    assert _rgb(plain) == _rgb(reference.tobytes()) != _rgb(pixels)


@pytest.mark.parametrize(("mask", "error"), [
    ((bytes(8), 8, 3), ValueError),  # 8 cells for 3 x 3
    ((bytes(9), 0, 3), ValueError),  # chips of no size
    ((bytes(9), 8), TypeError),
    ("mask", TypeError),
])
def test_a_malformed_mask_is_refused_before_any_pixel_is_drawn(
    mask: object, error: type[Exception], paste: blend.Paste
) -> None:
    pixels = bytearray(b"\x80" * WIDTH * HEIGHT * 4)
    piece = MarkedPiece(0, 0, 2, 2, bytes(16), b"\xff" * 16, b"\xff" * 16)
    with pytest.raises(error):
        paste(pixels, WIDTH * 4, (WIDTH, HEIGHT), [(0, 0)], [piece], mask)
    assert pixels == bytearray(b"\x80" * WIDTH * HEIGHT * 4)


def test_a_pattern_tile_marks_only_its_letters_ink() -> None:
    """With the mark's chips, the letters are darker on the set chips and lighter on the
    others, by up to INK_MARK x 235 / 255 each way; white paper (under the halo) stays white."""
    tile = pattern.make_tile(["Confidential — Acme", "Ann Lee"], 24)
    size = (384, 384)
    corners = pattern.lattice(size, tile.block, tile.size)
    plain = bytearray(b"\xff" * size[0] * size[1] * 4)
    marked = bytearray(plain)
    blend.paste(plain, size[0] * 4, size, corners, tile.pieces)
    pattern.paste(marked, size[0] * 4, tile, size, (b"\x01\x00\x00\x01", 96, 2))
    before = Image.frombytes("RGBX", size, bytes(plain)).getchannel(0).tobytes()
    after = Image.frombytes("RGBX", size, bytes(marked)).getchannel(0).tobytes()
    darker: dict[str, list[int]] = {"set": [], "unset": []}
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        y, x = divmod(index, size[0])
        darker["set" if (y // 96 + x // 96) % 2 == 0 else "unset"].append(old - new)
        if old == 255:
            assert new == 255  # paper, or the halo on paper
    step = pattern.INK_MARK * 235 / 255
    assert min(darker["set"]) >= 0 and abs(max(darker["set"]) - step) <= 1
    assert max(darker["unset"]) <= 0 and abs(min(darker["unset"]) + step) <= 1


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


EXPAND = {"C": _paper.expand_grey, "Pillow": blend_pillow.expand_grey}


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
