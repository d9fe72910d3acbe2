"""The day a leak was served, read off the visible pattern's own text (docs/leak-tracing.md,
"A year of views"): every copy of the pattern prints the view's time
(`render.watermark.viewer_mark.tile_lines`, "2026-03-21 13:28:53 CET (UTC+01:00)"), and a
wash of the marks leaves it, as it leaves the words the placement mark reads. A trace of a page
viewed all year scores that day's views first, not the year's.

The copies' average (`pattern_plane`, which the placement reading makes anyway) is a clean
picture of one copy. It is brought back to the served scale and turned upright (the pattern is
drawn at ANGLE), the date word found in it by its shape (the normalised correlation with the
mean of the candidate dates' words: they share their year, hyphens and most digits), and each
candidate date, drawn as the renderer draws it (`render.watermark.date_words`, handed in by
the worker's entry point: that package sits above this one), scored there: its normalised
correlation, the best over +-REACH px. What crosses back is one score per candidate date, in
the order asked; the server ranks them (`vaultd.services.tracing.days`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image

from render.forensic import fft

Floats = npt.NDArray[np.float32]
CROP = 900  # px at the served scale searched for the date word: more than a copy's span
REACH = 2  # px either way the candidates are scored around where the date word was found
_MIN_FOUND = 0.45  # the date word's shape found at least this well, else no date is read
# The pattern's, counter-clockwise (`render.watermark.pattern.ANGLE`: a package above).
_PATTERN_ANGLE = 30.0


def day_scores(model: Floats, scale: float, templates: Floats) -> Floats | None:
    """Each candidate date's score as the date the pattern prints, or None when no date word
    shows. `model`: the copies' average at every pixel of the leak (grey); `scale`: the
    leak's size against the served canvas's; `templates`: the dates' words, upright at the
    served size, centred and of unit norm (`render.watermark.date_words`)."""
    plane = upright(model, scale)
    count, height, width = templates.shape
    if count == 0 or plane.shape[0] < height + 2 * REACH or plane.shape[1] < width + 2 * REACH:
        return None
    found = _located(plane, templates.mean(axis=0))
    if found is None:
        return None
    top, left = found
    shifts = []
    for dy in range(-REACH, REACH + 1):
        for dx in range(-REACH, REACH + 1):
            y, x = top + dy, left + dx
            if 0 <= y <= plane.shape[0] - height and 0 <= x <= plane.shape[1] - width:
                shifts.append(_normalised(plane[y: y + height, x: x + width].ravel()))
    scores: Floats = (templates.reshape(count, -1) @ np.stack(shifts).T).max(axis=1)
    return scores.astype(np.float32)


def upright(model: Floats, scale: float) -> Floats:
    """The centre of the copies' average as ink (255 - grey), at the served scale, its text
    level: CROP px a side at most."""
    height, width = model.shape
    side = min(round(CROP * scale), height, width)
    top, left = (height - side) // 2, (width - side) // 2
    ink = Image.fromarray(np.clip(255.0 - model[top: top + side, left: left + side], 0, 255)
                          .astype(np.uint8))
    if abs(scale - 1.0) > 0.01:
        ink = ink.resize((round(side / scale),) * 2, Image.Resampling.BILINEAR)
    turned = ink.rotate(-_PATTERN_ANGLE, resample=Image.Resampling.BILINEAR)
    return np.asarray(turned, dtype=np.float32)


def _normalised(values: Floats) -> Floats:
    centred = values - values.mean()
    norm = float(np.sqrt((centred * centred).sum()))
    result: Floats = centred / norm if norm > 0 else centred
    return result


def _located(plane: Floats, template: Floats) -> tuple[int, int] | None:
    """Where `template` best matches `plane` (top, left), by the normalised correlation over
    every place it fits; None when nowhere matches _MIN_FOUND."""
    centred = template - template.mean()
    height, width = plane.shape
    rows, columns = height - template.shape[0] + 1, width - template.shape[1] + 1
    product = fft.irfft2(fft.rfft2(plane) * np.conj(fft.rfft2(centred, plane.shape)),
                         plane.shape)[:rows, :columns]
    total, energy = (_box_sums(power, template.shape) for power in (plane, plane * plane))
    spread = np.sqrt(np.maximum(energy - total * total / template.size, 1e-6))
    score = product / (spread * float(np.sqrt((centred * centred).sum())) + 1e-9)
    top, left = np.unravel_index(int(np.argmax(score)), score.shape)
    if score[top, left] < _MIN_FOUND:
        return None
    return int(top), int(left)


def _box_sums(plane: Floats, box: tuple[int, ...]) -> npt.NDArray[np.float64]:
    """The sum of `plane` over the box at every place it fits (a summed-area table)."""
    table = np.zeros((plane.shape[0] + 1, plane.shape[1] + 1))
    table[1:, 1:] = plane.astype(np.float64).cumsum(axis=0).cumsum(axis=1)
    height, width = box
    sums: npt.NDArray[np.float64] = (table[height:, width:] - table[:-height, width:]
                                     - table[height:, :-width] + table[:-height, :-width])
    return sums
