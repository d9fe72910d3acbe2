"""A crop of a photo of a page on a desk, saved as WebP (the `crop` family of
`bench.leakmark_untuned`, docs/leak-tracing.md, "Photos framed on the page"): the tile's
horizontal vector is also looked for by a scan of folds along the direction the pattern's rows
give it (`framed._scanned`), where the autocorrelation shows a harmonic's or the text's
lattice, and a fold whose sync chips pass but whose payload fails its CRC is folded again from
the weighted residual (WebP keeps the mark beside the text, where the silenced residual is 0).
The text cover photographed by the camera of the seed-41 crop that was missed (`crc-doc`,
747 x 925, WebP q63) and cut by its crop box; light, sensor and save drawn from SEED by the
generator's own functions: a 1,033 x 1,278 WebP at q57."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from PIL import Image

from bench.leakmark import LAYOUT
from bench.leakmark_untuned import Camera
from render.forensic import decode, framed, perspective, sync
from render.forensic.layout import TILE
from tests.forensic_pages import photographed_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop
RENDER_ID = 0x2A5C_3E17_9B4
CAMERA = Camera(frame=(1867, 2489), focal=2188.565120050893, yaw=-0.0472518513940455,
                pitch=-0.14440942114212096, roll=-0.08719490022355061, aim=(618.5, 855.5),
                distance=1822.9253553684698)
BOX = (228, 406, 1866, 2434)  # the missed crop's box in the frame (left, top, right, bottom)
SEED = 40


def _leak(mark: bool) -> Image.Image:
    return photographed_cover(CAMERA, SEED, RENDER_ID if mark else None, BOX)


@functools.cache
def _at_the_camera() -> tuple[perspective.Flattened, float, np.ndarray, float]:
    """The working copy flattened at the camera's own vanishing line, the pattern's rows'
    direction there, the camera's tile horizontal vector in it, and the tile's shortest
    length at the smallest scale searched (px)."""
    grey = _leak(True).convert("L")
    work = framed._working_copy(grey)
    factor = work.width / grey.width * grey.width / (BOX[2] - BOX[0])
    page_to_work = np.diag([factor, factor, 1.0]) @ np.array(
        [[1, 0, -BOX[0]], [0, 1, -BOX[1]], [0, 0, 1.0]]) @ CAMERA.homography()
    to_page = np.linalg.inv(page_to_work) @ np.linalg.inv(perspective.centred(work.size))
    flat = perspective.flattened(work, to_page[2, :2] / to_page[2, 2])
    page_to_flat = flat.matrix @ page_to_work
    ends = [page_to_flat @ np.array([600.0 + x, 800.0, 1.0]) for x in (0.0, TILE)]
    across = ends[1][:2] / ends[1][2] - ends[0][:2] / ends[0][2]
    line = perspective.rows_line(work)
    assert line is not None
    rows = perspective.rows_direction(flat.matrix, flat.image.size, line.rows)
    return flat, rows, across, TILE * sync.MIN_SCALE * work.width / grey.width


@pytest.mark.parametrize(("mark", "expected"), [(True, RENDER_ID), (False, None)],
                         ids=["marked", "unmarked"])
def test_the_crop_is_named_and_its_unmarked_twin_is_not(mark: bool,
                                                        expected: int | None) -> None:
    assert _leak(mark).size == (1033, 1278)
    assert decode(_leak(mark), LAYOUT) == expected


def test_a_scan_of_folds_finds_the_tile_along_the_rows() -> None:
    flat, rows, across, shortest = _at_the_camera()
    found = framed._scanned(flat.image, rows, shortest, [], LAYOUT)
    assert len(found) == 1
    assert abs(math.hypot(*found[0]) / math.hypot(*across) - 1) < 0.01
    turn = math.atan2(found[0][1], found[0][0]) - math.atan2(across[1], across[0])
    assert abs(math.degrees(turn)) < 0.5
    # A length already read (the lattice's) is not read again.
    assert framed._scanned(flat.image, rows, shortest, [found[0] * 1.01], LAYOUT) == []


def test_the_weighted_residual_reads_what_the_silenced_one_cannot(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At the trial `decode` reads it at (0.01 from the camera's vanishing line, its lattice
    the tile's): named, and not from the silenced residual alone (the commit before missed
    the crop with this very lattice)."""
    flat, _, across, shortest = _at_the_camera()
    grey = _leak(True).convert("L")
    seen = perspective.horizons(framed._working_copy(grey), False, shortest)
    assert seen is not None
    trial = min(seen.trials, key=lambda trial: math.dist(trial.horizon, flat.horizon))
    assert math.dist(trial.horizon, flat.horizon) < 0.02 and trial.lattice is not None
    assert abs(math.hypot(*trial.lattice.across) / math.hypot(*across) - 1) < 0.01
    rows = perspective.rows_direction(trial.matrix, trial.image.size, seen.rows)
    lattice = np.array(trial.lattice.across)
    found = framed._read(trial.image, lattice, rows, LAYOUT)
    assert found is not None and found[0] == RENDER_ID
    monkeypatch.setattr(sync, "weighted_residual", sync.residual)
    assert framed._read(trial.image, lattice, rows, LAYOUT) is None


def test_the_autocorrelation_shows_no_tile_at_the_camera() -> None:
    """Why the scan: at the camera's own vanishing line the residual's autocorrelation
    shows a lattice of half the tile's length, and in the wedge the pattern's rows give the
    tile (`perspective._WEDGE`) one of three times it."""
    flat, rows, across, shortest = _at_the_camera()
    along = rows - perspective.ROWS
    tile = math.hypot(*across)
    plain = perspective.tile_lattice(flat.image)
    wedged = perspective.tile_lattice(flat.image, along, shortest)
    assert plain is not None and wedged is not None
    assert abs(math.hypot(*plain.across) / tile - 0.5) < 0.03
    assert abs(math.hypot(*wedged.across) / tile - 3) < 0.1
    turn = math.atan2(wedged.across[1], wedged.across[0])
    assert abs(turn - along) <= perspective._WEDGE
    # No lattice of this page lies in a wedge turned 30 degrees from the rows' one.
    assert perspective.tile_lattice(flat.image, along + math.radians(30), shortest) is None
