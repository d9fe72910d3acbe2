"""A photo framed on the page (docs/leak-tracing.md, "Photos framed on the page"): no page edge
in the frame, the perspective read off the page's own lines. A served page (the text cover,
marked in the bench's deployment layout, served as JPEG q80) projected by a known pinhole
camera (`bench.leakmark_untuned.Camera`): the vanishing line and the tile's vector are found
within a tolerance of the camera's, the mark is named, and the same photo unmarked names
none."""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from bench.leakmark_untuned import Camera
from render.forensic import decode, framed, perspective
from render.forensic.layout import TILE
from tests.forensic_pages import served_cover, text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

RENDER_ID = 0x0B5C3A79D21
# Tilted 12 and -9 degrees, turned by 6, seen from 1.3 times the page's width at a focal
# length of 0.9 times the frame's diagonal: the frame shows a part of the page, no edge.
POSES = {"tilted": (12.0, -9.0, 6.0), "tilted the other way": (-10.0, 13.0, -4.0)}
FRAME = (1200, 1600)


def _camera(page: Image.Image, pose: tuple[float, float, float]) -> Camera:
    yaw, pitch, roll = (math.radians(angle) for angle in pose)
    focal = 0.9 * math.hypot(*FRAME)
    # The page's width spans 1.4 frame widths, fronto-parallel: a filled frame.
    distance = focal * page.width / (1.4 * FRAME[0])
    return Camera(FRAME, focal, yaw, pitch, roll, (page.width * 0.5, page.height * 0.45),
                  distance)


@functools.cache
def _photo(pose_name: str, mark: bool) -> tuple[Image.Image, npt.NDArray[np.float64]]:
    """The photo (luminance, slightly blurred as a lens does) and the camera's homography
    (page pixels to photo pixels)."""
    page = text_cover()
    served = jpeg(mark_page(page, RENDER_ID) if mark else page.image, SERVED_QUALITY)
    camera = _camera(served, POSES[pose_name])
    inverse = np.linalg.inv(camera.homography())
    inverse /= inverse[2, 2]
    photo = served.convert("L").transform(
        FRAME, Image.Transform.PERSPECTIVE, tuple(float(v) for v in inverse.ravel()[:8]),
        Image.Resampling.BICUBIC)
    corners = np.array([[0, 0, 1], [FRAME[0], 0, 1], [FRAME[0], FRAME[1], 1],
                        [0, FRAME[1], 1]], float) @ inverse.T
    seen = corners[:, :2] / corners[:, 2:]
    assert (seen > 0).all() and (seen < served.size).all(), "a page edge in the frame"
    return photo, camera.homography()


def _true_horizon(size: tuple[int, int], homography: npt.NDArray[np.float64],
                  ) -> npt.NDArray[np.float64]:
    """v of the photo at `size`: the bottom row of its centred coordinates' map to the page
    (x -> x / (1 + v . x) after an affine map)."""
    scale = np.diag([size[0] / FRAME[0], size[1] / FRAME[1], 1.0])
    to_page = np.linalg.inv(perspective.centred(size) @ scale @ homography)
    horizon: npt.NDArray[np.float64] = to_page[2, :2] / to_page[2, 2]
    return horizon


@pytest.mark.parametrize("pose", POSES)
def test_the_vanishing_line_and_the_tile_are_found(pose: str) -> None:
    photo, homography = _photo(pose, True)
    work = framed._working_copy(photo)
    found = perspective.horizons(work)
    assert found is not None
    best = found.trials[0]
    truth = _true_horizon(work.size, homography)
    assert np.hypot(*(np.array(best.horizon) - truth)) < 0.01, (best.horizon, truth)
    # The tile's horizontal vector: the page's (TILE, 0) mapped into the flattened copy.
    assert best.lattice is not None
    scale = np.diag([work.width / FRAME[0], work.height / FRAME[1], 1.0])
    to_flat = best.matrix @ scale @ homography
    centre = np.linalg.inv(to_flat) @ np.array([best.image.width / 2, best.image.height / 2, 1])
    centre /= centre[2]

    def at(point: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        mapped = to_flat @ point
        result: npt.NDArray[np.float64] = mapped[:2] / mapped[2]
        return result

    expected = at(centre + np.array([TILE, 0.0, 0.0])) - at(centre)
    across = np.array(best.lattice.across)
    assert abs(np.hypot(*across) / np.hypot(*expected) - 1) < 0.02, (across, expected)
    assert abs(math.atan2(across[1], across[0]) - math.atan2(expected[1], expected[0])) < 0.01


@pytest.mark.parametrize("pose", POSES)
def test_a_photo_framed_on_the_page_names_its_view(pose: str) -> None:
    # Through the decoder: the text's block outline passes for a page's corners here, whose
    # reading finds nothing; the page's lines then read it.
    assert decode(_photo(pose, True)[0], LAYOUT) == RENDER_ID


@pytest.mark.parametrize("pose", POSES)
def test_the_same_photo_unmarked_names_none(pose: str) -> None:
    assert decode(_photo(pose, False)[0], LAYOUT) is None


def test_an_upright_page_shows_no_perspective() -> None:
    served = served_cover().convert("L")
    shown = served.resize((round(served.width * 0.7), round(served.height * 0.7)),
                          Image.Resampling.BICUBIC)
    assert perspective.horizons(framed._working_copy(shown)) is None
    assert framed.read_framed(shown, LAYOUT) == framed.Reading(None, False)
