"""The invisible mark's darkening of the paper (`render.kernels.blend.darken`, and `expand_grey`
with a mask): the C loop and the fallback against Pillow's paste of black at the mark's opacity, the
oracle the pattern's blend is held to (tests/test_pattern_blend.py)."""

from __future__ import annotations

import random

import pytest
from PIL import Image

from render.forensic import STRENGTH
from render.kernels import _paper, blend_pillow

DARKEN = {"C": _paper.darken, "Pillow": blend_pillow.darken}
EXPAND = {"C": _paper.expand_grey, "Pillow": blend_pillow.expand_grey}
WIDTH, HEIGHT, PAD = 53, 37, 12  # odd sizes, and a stride with padding after each row


def _mask(seed: int, chip: int = 3, chips: int = 5) -> tuple[bytes, int, int]:
    rng = random.Random(seed)
    return bytes(rng.randint(0, 1) for _ in range(chips * chips)), chip, chips


def _oracle(rgbx: bytes, stride: int, area: tuple[int, int], mask: tuple[bytes, int, int],
            strength: int) -> bytes:
    """Black pasted by Pillow at opacity `strength` on every set chip of the area; X kept."""
    cells, chip, chips = mask
    image = Image.frombuffer("RGBX", (stride // 4, len(rgbx) // stride), rgbx, "raw", "RGBX",
                             stride, 1).copy()
    opacity = Image.new("L", image.size)
    for y in range(area[1]):
        for x in range(area[0]):
            if cells[(y // chip) % chips * chips + (x // chip) % chips]:
                opacity.putpixel((x, y), strength)
    darkened = image.copy()
    darkened.paste((0, 0, 0, 0), (0, 0, *image.size), opacity)
    red, green, blue, _ = darkened.split()
    return Image.merge("RGBX", (red, green, blue, image.getchannel(3))).tobytes()


@pytest.mark.parametrize("name", sorted(DARKEN))
@pytest.mark.parametrize("strength", [STRENGTH, 1, 4, 0])
@pytest.mark.parametrize("from_source", [False, True], ids=["in place", "from rows"])
def test_darkening_is_pillows_paste_of_black_on_the_set_chips(
    name: str, strength: int, from_source: bool
) -> None:
    rng = random.Random(strength)
    stride, area = WIDTH * 4 + PAD, (WIDTH - 4, HEIGHT - 3)
    page = rng.randbytes(stride * HEIGHT)
    mask = _mask(strength)
    canvas = bytearray(rng.randbytes(len(page))) if from_source else bytearray(page)
    untouched = bytes(canvas)
    DARKEN[name](canvas, stride, area, mask, strength, page if from_source else None)
    expected = _oracle(page, stride, area, mask, strength)
    for y in range(HEIGHT):
        row, old = slice(y * stride, y * stride + area[0] * 4), slice(y * stride + area[0] * 4,
                                                                      (y + 1) * stride)
        if y < area[1]:
            assert canvas[row] == expected[row]
        else:
            assert canvas[row] == untouched[row]  # below the area: never written
        assert canvas[old] == untouched[old]  # right of the area and the padding


@pytest.mark.parametrize("name", sorted(EXPAND))
def test_grey_rows_expand_darkened_as_the_darkening_does(name: str) -> None:
    rng = random.Random(11)
    stride, rows = WIDTH * 4 + PAD, HEIGHT - 2
    grey = rng.randbytes(WIDTH * rows)
    mask = _mask(5, chip=4, chips=3)
    canvas = bytearray(rng.randbytes(stride * HEIGHT))
    plain = bytearray(canvas)
    EXPAND[name](canvas, stride, grey, WIDTH, rows, mask, STRENGTH)
    EXPAND[name](plain, stride, grey, WIDTH, rows)
    assert canvas != plain
    assert canvas == bytearray(_oracle(bytes(plain), stride, (WIDTH, rows), mask, STRENGTH))


@pytest.mark.parametrize("name", sorted(DARKEN))
def test_bad_darkening_calls_are_refused_before_any_pixel_changes(name: str) -> None:
    darken = DARKEN[name]
    stride = WIDTH * 4
    canvas = bytearray(b"\x80" * stride * HEIGHT)
    mask = _mask(1)
    with pytest.raises(ValueError, match="the strength must be 0-4"):
        darken(canvas, stride, (WIDTH, HEIGHT), mask, 5)
    with pytest.raises(ValueError, match="the area does not fit the canvas"):
        darken(canvas, stride, (WIDTH, HEIGHT + 1), mask, STRENGTH)
    with pytest.raises(ValueError, match="the mask's cells do not match its size"):
        darken(canvas, stride, (WIDTH, HEIGHT), (b"\x01" * 24, 3, 5), STRENGTH)
    with pytest.raises(ValueError, match="the mask's cells do not match its size"):
        darken(canvas, stride, (WIDTH, HEIGHT), (b"\x01" * 25, 1 << 40, 5), STRENGTH)
    with pytest.raises(TypeError, match="the mask must be a tuple"):
        darken(canvas, stride, (WIDTH, HEIGHT), None, STRENGTH)
    with pytest.raises(ValueError, match="the source rows do not fit the canvas"):
        darken(canvas, stride, (WIDTH, HEIGHT), mask, STRENGTH, bytes(stride * HEIGHT - 1))
    if name == "C":  # the fallback reads a copy anyway; the C loop would read what it wrote
        with pytest.raises(ValueError, match="the source overlaps the canvas"):
            darken(canvas, stride, (WIDTH - 1, HEIGHT), mask, STRENGTH, memoryview(canvas)[4:])
    with pytest.raises(ValueError, match="the strength must be 0-4"):
        EXPAND[name](canvas, stride, bytes(WIDTH * HEIGHT), WIDTH, HEIGHT, mask, -1)
    assert canvas == bytearray(b"\x80" * stride * HEIGHT)
