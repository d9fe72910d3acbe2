"""Small screen-grabs saved as WebP (docs/leak-tracing.md, "Small leaks"): WebP smooths the mark
off flat paper and keeps it around the text, which the weighted residual reads
(`sync.weighted_residual`), and a small tile's candidate is brought to its scale by the screen
(`folding.finer`)."""

from __future__ import annotations

import importlib
import io
import math

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from render.forensic import chips, folding, sync
from render.forensic.layout import TILE
from tests.forensic_pages import text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

decoding = importlib.import_module("render.forensic.decode")  # the package exports `decode`

# The screen-grab of `bench.leakmark_untuned` (seed 47) that this reading names: the text
# cover resized three times (bilinear, box, bicubic) to 0.41 of its served width, then WebP q66.
GRAB_ID = 22439511556498
GRAB_RESIZES = ((0.8084256976334437, Image.Resampling.BILINEAR),
                (0.8569943079979189, Image.Resampling.BOX),
                (0.58737552700197, Image.Resampling.BICUBIC))


def _grab(served: Image.Image) -> Image.Image:
    image = served.convert("RGB")
    for factor, resampling in GRAB_RESIZES:
        image = image.resize((round(image.width * factor), round(image.height * factor)),
                             resampling)
    out = io.BytesIO()
    image.save(out, "WEBP", quality=66)
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


def _true_vector(leak: Image.Image) -> tuple[float, float]:
    return TILE * leak.width / text_cover().image.width, 0.0


def test_a_small_webp_screen_grab_is_named_and_its_unmarked_twin_is_not() -> None:
    leak = _grab(jpeg(mark_page(text_cover(), GRAB_ID), SERVED_QUALITY))
    assert leak.size == (503, 696)
    assert decoding.decode(leak, LAYOUT) == GRAB_ID
    assert decoding.decode(_grab(jpeg(text_cover().image, SERVED_QUALITY)), LAYOUT) is None


def test_the_weighted_residual_reads_the_mark_webp_left_around_the_text() -> None:
    # At the grab's true geometry the search's fold (the weighted residual) names the id; the
    # residual that silences the pixels near the text (`sync.residual`, which the search read
    # before) folds at chance there.
    leak = _grab(jpeg(mark_page(text_cover(), GRAB_ID), SERVED_QUALITY)).convert("L")
    vector = _true_vector(leak)
    found, score, _ = decoding._read(leak, vector, folding.kept(), LAYOUT)
    assert found is not None and found.render_id == GRAB_ID
    assert score >= decoding.SYNC_THRESHOLD
    radius = max(1.0, 8 * vector[0] / TILE / 2)
    silenced = chips.aligned(_folded(sync.residual(leak, radius), vector), LAYOUT)
    assert chips.sync_score(silenced, LAYOUT) < 4.5


def _folded(detail: np.ndarray, vector: tuple[float, float]) -> np.ndarray:
    """`detail` resampled into the mark's frame (upright: the grab is not turned) and summed
    over every tile, in floats."""
    scale = vector[0] / TILE
    height, width = detail.shape
    size = (math.ceil(width / scale) + TILE, math.ceil(height / scale) + TILE)
    upright = np.asarray(Image.fromarray(detail.astype(np.float32), mode="F").transform(
        size, Image.Transform.AFFINE, (scale, 0.0, 0.0, 0.0, scale, 0.0),
        Image.Resampling.BILINEAR, fillcolor=0), dtype=np.float32)
    rows, cols = upright.shape[0] // TILE, upright.shape[1] // TILE
    folded: np.ndarray = upright[: rows * TILE, : cols * TILE].reshape(
        rows, TILE, cols, TILE).sum(axis=(0, 2))
    return folded


def test_the_weighted_residual_quiets_edges_and_keeps_faint_paper() -> None:
    # Paper at 250 with a faint pattern of +-1 level, a black bar across it: on the paper the
    # residual keeps its sign and about its size over the floor; beside the bar it is quiet.
    rng = np.random.default_rng(5)
    values = 250.0 + rng.choice([-1.0, 1.0], (120, 120))
    values[50:60, :] = 0.0
    grey = Image.fromarray(values.astype(np.uint8), mode="L")
    weighted = sync.weighted_residual(grey, 1.5)
    plain = values - ndimage.gaussian_filter(values.astype(np.float32), 1.5, truncate=2.5)
    paper = (slice(10, 40), slice(10, 110))
    assert np.corrcoef(weighted[paper].ravel(), plain[paper].ravel())[0, 1] > 0.95
    assert np.abs(weighted[paper]).mean() > 0.2
    assert np.abs(weighted[47:63, 10:110]).max() < 0.5 * np.abs(weighted[paper]).max()
    levels = np.asarray(sync.residual_levels(grey, 1.5), dtype=np.int16)
    expected = np.clip(np.rint(weighted * sync.LEVELS) + 128, 0, 255)
    assert np.array_equal(levels, expected)


def test_a_small_tile_vector_a_percent_off_is_brought_to_its_scale() -> None:
    leak = _grab(jpeg(mark_page(text_cover(), GRAB_ID), SERVED_QUALITY)).convert("L")
    true = _true_vector(leak)
    for off in (0.991, 1.012):
        found = folding.finer(leak, (true[0] * off, 0.0), folding.kept(), LAYOUT)
        assert abs(found[0] / true[0] - 1) <= 0.004, (off, found)
        assert found[1] == 0.0


def test_a_large_tile_vector_is_left_as_it_is() -> None:
    leak = jpeg(mark_page(text_cover(), GRAB_ID), SERVED_QUALITY).convert("L")
    vector = (TILE * 0.9 * 1.01, 0.3)
    assert folding.finer(leak, vector, folding.kept(), LAYOUT) == vector
