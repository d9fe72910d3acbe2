"""A photo framed on the page whose paper reaches every side of the frame (the `filled` family
of `bench.leakmark_untuned`, docs/leak-tracing-records.md, "A page whose outline is the frame"): the
page's outline found there (`rectify.page_corners`) is the frame's own border, a few px in,
where the vignetting and the text cross the paper's midpoint, and upright. Taken for a page
shown upright on a desktop (a screenshot), the photo was never read framed: the seed-73
`filled` leak of `fontconfig-user.pdf#1` (1,301 x 1,735, |v| 0.19) was missed so, though the
framed reading names it. The text cover photographed by that leak's camera, light, sensor and
save drawn from SEED by the generator's own functions: a 1,393 x 1,858 photo whose outline
lies 0.6 % of its long side from the frame's corners."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from bench.leakmark import LAYOUT
from bench.leakmark_attacks import SERVED_QUALITY, jpeg
from bench.leakmark_untuned import Camera
from render.forensic import decode, rectify
from tests.forensic_pages import photographed_cover, text_cover

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop
RENDER_ID = 0x2A5C_3E17_9B4
CAMERA = Camera(frame=(1934, 2579), focal=2864.903184409282, yaw=-0.15883018503246893,
                pitch=0.13986508972156178, roll=-0.05360684465426774,
                aim=(545.7845968652058, 786.9361535889776), distance=1164.2269542296488)
SEED = 0


def _leak(mark: bool) -> Image.Image:
    return photographed_cover(CAMERA, SEED, RENDER_ID if mark else None)


def test_the_outline_of_a_photo_filled_with_the_page_is_the_frame() -> None:
    grey = _leak(True).convert("L")
    assert grey.size == (1393, 1858)
    corners = rectify.page_corners(grey)
    assert corners is not None and not rectify.needs_rectifying(corners)  # upright
    assert rectify.along_frame(corners, grey.size)


def test_a_page_shown_on_a_surround_is_not_the_frame() -> None:
    """The served page upright on a dark desktop (a screenshot) keeps its own outline."""
    page = jpeg(text_cover().image, SERVED_QUALITY).convert("L")
    desktop = Image.new("L", (page.width + 240, page.height + 160), 40)
    desktop.paste(page, (120, 80))
    corners = rectify.page_corners(desktop)
    assert corners is not None and not rectify.needs_rectifying(corners)
    assert not rectify.along_frame(corners, desktop.size)
    assert np.allclose(corners[0], (120, 80), atol=3)


@pytest.mark.parametrize(("mark", "expected"), [(True, RENDER_ID), (False, None)],
                         ids=["marked", "unmarked"])
def test_the_photo_is_read_framed(mark: bool, expected: int | None) -> None:
    """Named (the commit before: None, the framed reading never tried); its unmarked twin
    names nothing."""
    assert decode(_leak(mark), LAYOUT) == expected
