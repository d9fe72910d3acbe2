"""The pattern's date words as the renderer draws them, upright: what a placement trace
compares with the date a leak's pattern prints (`render.forensic.placement_date`, which sits
below this package and is handed these)."""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from render.watermark import pattern, words

Floats = npt.NDArray[np.float32]
_PAD = 2


@functools.lru_cache(maxsize=4)
def date_templates(dates: tuple[str, ...], served_width: int) -> Floats:
    """Each date's word (bold, at the font size of a canvas `served_width` px wide), upright,
    centred and of unit norm, stacked: a worker is asked the same year of dates all day, so
    they are drawn once a day and canvas width."""
    size = pattern.font_size(served_width)
    masks = [np.asarray(words.mask(date, size, bold=True, pad=_PAD).image, dtype=np.float32)
             for date in dates]
    height = max(mask.shape[0] for mask in masks)
    width = max(mask.shape[1] for mask in masks)
    stacked = np.zeros((len(masks), height, width), dtype=np.float32)
    for k, mask in enumerate(masks):
        stacked[k, : mask.shape[0], : mask.shape[1]] = mask
        centred = stacked[k] - stacked[k].mean()
        stacked[k] = centred / max(float(np.sqrt((centred * centred).sum())), 1e-9)
    return stacked
