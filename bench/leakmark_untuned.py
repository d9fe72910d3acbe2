"""Leak families the reader was not tuned on (docs/leak-tracing.md, "Families the reader was
not tuned on").

    python -m bench.leakmark_untuned [--pages 6] [--leaks 2] [--unmarked 12] [--seed 41]
        [--families margin,filled,crop,screen-grab] [--read crop,screen-grab]

A generator of its own, written before any of the reader's tuning against it and frozen with
it (the settings below are the record; changing one makes a new generator, not a retuned
one). It shares nothing with `bench.leakmark_phone` but the served pages: the geometry is a
pinhole camera looking at the page (a printed sheet or a page on a display, no pixel grid)
from a yaw, a pitch and a roll, the framing chosen per family, then lighting, optics, a
sensor and a chain of saves. Seeded: a family's leaks repeat for a seed.

Families (`FAMILIES`):
- `margin`: the whole page in the frame on a desk, covering 45-85 % of the frame's width;
- `filled`: the camera filled with the page, no edge of it in the frame (the frame covers
  55-90 % of the page's width);
- `crop`: a `margin` photo cropped to 60-90 % of its width and height, anywhere, so that
  some of the page's edges are cut;
- `screen-grab`: no camera: the page rescaled by a chain of 1-3 resizes (0.5-0.95 each,
  random filters), optionally turned by up to 3 degrees, then saved as below.

Every family ends the same way: lighting (a linear gradient of 0-25 %, vignetting of 0-35 %,
a colour cast of 0.85-1.1 per channel, a glare spot on half the photos), optics (a Gaussian
blur of 0.4-1.4 px), a sensor (read noise 1-3 levels, shot noise), then a resize chain (1-2
resizes of 0.6-1.0, random filters) and a save: JPEG q50-85 with 4:2:0, 4:2:2 or 4:4:4
chroma, or WebP q50-85 (a third of the time, when Pillow has WebP; the trace takes JPEG or
PNG, so a WebP leak is what a user converts and uploads: its decoded pixels). `screen-grab`
skips the camera's lighting, optics and sensor.
"""

from __future__ import annotations

import argparse
import io
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter, features

from bench.leakmark import LAYOUT, mark_page
from bench.leakmark_attacks import SERVED_QUALITY, Page, corpus_pages, jpeg
from render.forensic import decode
from render.forensic_wire import trace_codes

_FILTERS = (Image.Resampling.BILINEAR, Image.Resampling.BICUBIC, Image.Resampling.LANCZOS,
            Image.Resampling.BOX)
_WEBP = features.check("webp")


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: its frame (width, height), focal length in pixels, and the page
    plane's pose: rotation (yaw, pitch, roll, radians) and where the page point under the
    optical axis is (page pixels) and how far (page pixels)."""

    frame: tuple[int, int]
    focal: float
    yaw: float
    pitch: float
    roll: float
    aim: tuple[float, float]
    distance: float

    def rotation(self) -> npt.NDArray[np.float64]:
        cy, sy = math.cos(self.yaw), math.sin(self.yaw)
        cp, sp = math.cos(self.pitch), math.sin(self.pitch)
        cr, sr = math.cos(self.roll), math.sin(self.roll)
        yaw = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
        pitch = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
        roll = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
        return np.asarray(roll @ pitch @ yaw, np.float64)

    def homography(self) -> npt.NDArray[np.float64]:
        """Page pixels (x, y, 1) to frame pixels: K [r1 r2 t], the page plane at z = 0."""
        rotation = self.rotation()
        k = np.array([[self.focal, 0, self.frame[0] / 2], [0, self.focal, self.frame[1] / 2],
                      [0, 0, 1]])
        # The aimed page point lands on the optical axis at `distance`.
        translation = np.array([0.0, 0.0, self.distance]) - rotation @ np.array(
            [self.aim[0], self.aim[1], 0.0])
        return np.asarray(k @ np.column_stack([rotation[:, 0], rotation[:, 1], translation]),
                          np.float64)

    def project(self, points: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        h = self.homography()
        lifted = np.column_stack([points, np.ones(len(points))]) @ h.T
        return np.asarray(lifted[:, :2] / lifted[:, 2:3], np.float64)


def _camera(page: Image.Image, rng: random.Random, page_share: float, filled: bool,
            ) -> Camera:
    """A camera with a random pose whose frame shows `page_share` of the page's width across
    its own width (filled: the frame inside the page; else the page inside the frame)."""
    long_side = rng.randint(2000, 3000)
    frame = (round(long_side * 3 / 4), long_side)
    focal = rng.uniform(0.7, 1.2) * math.hypot(*frame)
    yaw, pitch = (math.radians(rng.uniform(-15, 15)) for _ in range(2))
    roll = math.radians(rng.uniform(-10, 10))
    if filled:  # aimed anywhere that keeps the frame inside the page
        aim = (page.width * rng.uniform(0.35, 0.65), page.height * rng.uniform(0.3, 0.7))
    else:
        aim = (page.width / 2, page.height / 2)
    # Fronto-parallel, the page's width w at distance d spans focal * w / d frame pixels.
    width_on_frame = frame[0] * (1 / page_share if filled else page_share)
    distance = focal * page.width / width_on_frame
    camera = Camera(frame, focal, yaw, pitch, roll, aim, distance)
    corners = np.array([[0, 0], [page.width, 0], [page.width, page.height],
                        [0, page.height]], float)
    for _ in range(80):  # the framing the family asks for, whatever the pose did to it
        shown = camera.project(corners)
        inside = (shown.min(axis=0) >= 0).all() and (shown.max(axis=0) <= frame).all()
        covers = _frame_inside(camera, page.size)
        if (filled and covers) or (not filled and inside):
            return camera
        camera = Camera(frame, focal, yaw, pitch, roll, aim,
                        camera.distance * (0.97 if filled else 1.03))
    return camera


def _frame_inside(camera: Camera, size: tuple[int, int]) -> bool:
    """Whether every corner of the frame sees the page (no page edge in the frame)."""
    inverse = np.linalg.inv(camera.homography())
    w, h = camera.frame
    frame = np.array([[0, 0, 1], [w, 0, 1], [w, h, 1], [0, h, 1]], float) @ inverse.T
    points = frame[:, :2] / frame[:, 2:3]
    return bool((points.min(axis=0) >= 0).all() and (points[:, 0] <= size[0]).all()
                and (points[:, 1] <= size[1]).all())


def _desk(size: tuple[int, int], rng: random.Random) -> npt.NDArray[np.float32]:
    """A desk or a table under the page: a colour with a coarse grain."""
    colour = np.array([rng.uniform(40, 170) for _ in range(3)], np.float32)
    grain = np.random.default_rng(rng.getrandbits(32)).normal(0, 10, (size[1] // 24 + 1,
                                                                     size[0] // 24 + 1, 3))
    coarse = Image.fromarray(np.clip(128 + grain, 0, 255).astype(np.uint8), "RGB").resize(
        size, Image.Resampling.BICUBIC)
    return np.asarray(colour + np.asarray(coarse, np.float32) - 128, np.float32)


def photographed(page: Image.Image, camera: Camera, rng: random.Random,
                 ) -> npt.NDArray[np.float32]:
    """The page seen by `camera` on a desk: linear light, before lighting and the sensor."""
    inverse = np.linalg.inv(camera.homography())
    inverse /= inverse[2, 2]
    coefficients = tuple(float(v) for v in inverse.flatten()[:8])
    warped = page.convert("RGB").transform(camera.frame, Image.Transform.PERSPECTIVE,
                                           coefficients, Image.Resampling.BICUBIC)
    mask = Image.new("L", page.size, 255).transform(
        camera.frame, Image.Transform.PERSPECTIVE, coefficients, Image.Resampling.BILINEAR)
    alpha = np.asarray(mask, np.float32)[:, :, None] / 255
    return np.asarray(np.asarray(warped, np.float32) * alpha
                      + _desk(camera.frame, rng) * (1 - alpha), np.float32)


def lit(light: npt.NDArray[np.float32], rng: random.Random) -> npt.NDArray[np.float32]:
    """Uneven lighting: a linear gradient, vignetting, a colour cast, a glare spot (half)."""
    height, width = light.shape[:2]
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    ys, xs = ys / height - 0.5, xs / width - 0.5
    angle = rng.uniform(0, 2 * math.pi)
    gradient = 1 - rng.uniform(0, 0.25) * (0.5 + math.cos(angle) * xs + math.sin(angle) * ys)
    vignette = 1 - rng.uniform(0, 0.35) * (xs * xs + ys * ys) * 2
    cast = np.array([rng.uniform(0.85, 1.1) for _ in range(3)], np.float32)
    out = light * (gradient * vignette)[:, :, None] * cast
    if rng.random() < 0.5:
        gx, gy = rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4)
        spread = rng.uniform(0.04, 0.12)
        glare = rng.uniform(20, 70) * np.exp(-((xs - gx) ** 2 + (ys - gy) ** 2)
                                             / (2 * spread * spread))
        out += glare[:, :, None]
    return np.asarray(out, np.float32)


def sensed(light: npt.NDArray[np.float32], rng: random.Random) -> Image.Image:
    """The lens's blur, then read noise and shot noise, clipped to 8 bits."""
    image = Image.fromarray(np.clip(light, 0, 255).astype(np.uint8), "RGB")
    values = np.asarray(image.filter(ImageFilter.GaussianBlur(rng.uniform(0.4, 1.4))),
                        np.float32)
    noise = np.random.default_rng(rng.getrandbits(32))
    sigma = np.sqrt(rng.uniform(1, 3) ** 2 + rng.uniform(0.02, 0.08) * values)
    values = values + noise.standard_normal(values.shape, dtype=np.float32) * sigma
    return Image.fromarray(np.clip(np.rint(values), 0, 255).astype(np.uint8), "RGB")


def resized(image: Image.Image, rng: random.Random, steps: int, low: float,
            high: float) -> Image.Image:
    for _ in range(steps):
        factor = rng.uniform(low, high)
        image = image.resize((max(1, round(image.width * factor)),
                              max(1, round(image.height * factor))), rng.choice(_FILTERS))
    return image


def saved(image: Image.Image, rng: random.Random) -> Image.Image:
    """A resize chain of 1-2 steps, then JPEG (random chroma subsampling) or WebP."""
    image = resized(image, rng, rng.randint(1, 2), 0.6, 1.0)
    out = io.BytesIO()
    quality = rng.randint(50, 85)
    if _WEBP and rng.random() < 1 / 3:
        image.save(out, "WEBP", quality=quality)
    else:
        image.save(out, "JPEG", quality=quality, subsampling=rng.choice((0, 1, 2)))
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


def margin(page: Image.Image, rng: random.Random) -> Image.Image:
    camera = _camera(page, rng, rng.uniform(0.45, 0.85), filled=False)
    return saved(sensed(lit(photographed(page, camera, rng), rng), rng), rng)


def filled(page: Image.Image, rng: random.Random) -> Image.Image:
    camera = _camera(page, rng, rng.uniform(0.55, 0.9), filled=True)
    return saved(sensed(lit(photographed(page, camera, rng), rng), rng), rng)


def crop(page: Image.Image, rng: random.Random) -> Image.Image:
    camera = _camera(page, rng, rng.uniform(0.5, 0.85), filled=False)
    photo = sensed(lit(photographed(page, camera, rng), rng), rng)
    width, height = (round(side * rng.uniform(0.6, 0.9)) for side in photo.size)
    left, top = rng.randint(0, photo.width - width), rng.randint(0, photo.height - height)
    return saved(photo.crop((left, top, left + width, top + height)), rng)


def screen_grab(page: Image.Image, rng: random.Random) -> Image.Image:
    image = resized(page.convert("RGB"), rng, rng.randint(1, 3), 0.5, 0.95)
    if rng.random() < 0.5:
        image = image.rotate(rng.uniform(-3, 3), Image.Resampling.BICUBIC, expand=True,
                             fillcolor=(255, 255, 255))
    out = io.BytesIO()
    quality = rng.randint(50, 85)
    if _WEBP and rng.random() < 1 / 3:
        image.save(out, "WEBP", quality=quality)
    else:
        image.save(out, "JPEG", quality=quality, subsampling=rng.choice((0, 1, 2)))
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


FAMILIES: dict[str, Callable[[Image.Image, random.Random], Image.Image]] = {
    "margin": margin, "filled": filled, "crop": crop, "screen-grab": screen_grab}


@dataclass
class Tally:
    named: int = 0
    wrong: int = 0
    missed: int = 0
    false: int = 0
    unmarked: int = 0


def run(pages: list[Page], families: list[str], per_page: int, unmarked: int,
        rng: random.Random, read: Callable[[Image.Image], int | None],
        shown: set[str] | None = None) -> dict[str, Tally]:
    """Each family's leaks of every page (a new id each), then `unmarked` leaks of the pages
    served unmarked: named right, wrong, missed, false matches. `shown`: the families read
    (all when None); the others' leaks are still made, so every family read gets the leaks
    it gets in a run that reads them all."""
    tallies = {name: Tally() for name in families if shown is None or name in shown}
    for name in families:
        make = FAMILIES[name]
        for page in pages:
            for _ in range(per_page):
                render_id = trace_codes.new_render_id(rng.getrandbits)
                leak = make(jpeg(mark_page(page, render_id), SERVED_QUALITY), rng)
                if name not in tallies:
                    continue
                start = time.perf_counter()
                found = read(leak)
                tally = tallies[name]
                tally.named += found == render_id
                tally.wrong += found is not None and found != render_id
                tally.missed += found is None
                print(f"  {name} {page.name} {leak.width}x{leak.height}: "
                      f"{'named' if found == render_id else found}"
                      f" ({time.perf_counter() - start:.1f} s)", flush=True)
        for n in range(unmarked):
            page = pages[n % len(pages)]
            leak = make(jpeg(page.image, SERVED_QUALITY), rng)
            if name not in tallies:
                continue
            tallies[name].false += read(leak) is not None
            tallies[name].unmarked += 1
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--leaks", type=int, default=2, help="leaks a page and family")
    parser.add_argument("--unmarked", type=int, default=12, help="unmarked leaks a family")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--read", default=None,
                        help="only these families read (their leaks as in a full run)")
    args = parser.parse_args()
    families = args.families.split(",")
    pages = corpus_pages(args.pages)
    times: list[float] = []

    def read(image: Image.Image) -> int | None:
        start = time.perf_counter()
        found = decode(image, LAYOUT)
        times.append(time.perf_counter() - start)
        return found

    shown = set(args.read.split(",")) if args.read else None
    tallies = run(pages, families, args.leaks, args.unmarked, random.Random(args.seed), read,
                  shown)
    print("\n| Family | named | wrong | missed | false matches on unmarked |"
          "\n|---|---|---|---|---|")
    for name, tally in tallies.items():
        total = tally.named + tally.wrong + tally.missed
        print(f"| {name} | {tally.named}/{total} ({100 * tally.named / total:.0f} %) |"
              f" {tally.wrong} | {tally.missed} | {tally.false}/{tally.unmarked} |")
    print(f"decode: median {statistics.median(times):.2f} s, max {max(times):.2f} s")


if __name__ == "__main__":
    main()
