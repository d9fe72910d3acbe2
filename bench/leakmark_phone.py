"""The phone-photo family of `bench.leakmark`: a served page shown on a screen, photographed
(docs/leak-tracing.md, "A phone photo of the screen").

The simulation, in the order light goes through it:

1. the viewer shows the served page at 0.6-1.3x on a grey viewer background (margins 3-12 %
   of the page), resampled bilinearly as a browser does;
2. the screen's pixel grid: every screen pixel becomes 3 x 3 samples, one column each for its
   red, green and blue stripe (the others dark) and a dimmer bottom row (the black matrix);
3. the screen plane tilted by up to 20 degrees about a random axis in its plane and turned by
   up to 4 degrees in it, seen by a 12-megapixel camera (3024 x 4032, focal length 0.75 x the
   diagonal, a phone's 26 mm) from the distance at which the page covers 40-90 % of the frame;
4. optical blur (Gaussian, radius 0.6-1.6 px) and each sensor pixel's area (0.4 px) filter the
   light before it is sampled; what is left of the grid aliases: moire. `point_sampled`: the
   grid sampled at points, the blur after (far more moire, the harsher model measured first);
5. exposure 0.75-1.0, a gamma of 0.8-1.25 and a white-balance gain of 0.88-1.08 per channel;
6. sensor noise: Gaussian, 1.5-4 grey levels plus a shot-noise share growing with the level;
7. the capture saved as JPEG q70-q85.

Outside the screen: a dark bezel and a dim, grainy room.
"""

from __future__ import annotations

import io
import math
import random

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter

from render.forensic.rectify import perspective_coefficients

FRAME = (3024, 4032)  # 12.2 MP, portrait: a page is held upright
_FOCAL = 0.75  # x the frame's diagonal (a phone's 26 mm equivalent)
Corners = list[tuple[float, float]]
_SUB = 3  # samples a side per screen pixel (the stripes)


Box = tuple[int, int, int, int]


def _viewer(image: Image.Image, rng: random.Random) -> tuple[Image.Image, Box]:
    """The screen's content: the page at the viewer's zoom on its grey background, and the
    page's box (left, top, right, bottom) in it."""
    zoom = rng.uniform(0.6, 1.3)
    shown = image.convert("RGB").resize(
        (round(image.width * zoom), round(image.height * zoom)), Image.Resampling.BILINEAR)
    mx, my = (round(shown.width * rng.uniform(0.03, 0.12)),
              round(shown.height * rng.uniform(0.03, 0.12)))
    screen = Image.new("RGB", (shown.width + 2 * mx, shown.height + 2 * my),
                       (rng.randint(40, 110),) * 3)
    screen.paste(shown, (mx, my))
    return screen, (mx, my, mx + shown.width, my + shown.height)


_GLOW = 0.06  # what a sample beside a lit stripe still gets (the stripes bleed a little)
_MATRIX = 0.5  # the bottom sample row, between pixel rows
_STRIPE_MEAN = ((_SUB - 1) + _MATRIX) * (1 + (_SUB - 1) * _GLOW) / (_SUB * _SUB)


def _pixel_grid(channel: npt.NDArray[np.uint8], index: int) -> Image.Image:
    """One channel of the screen, each pixel as 3 x 3 samples: lit in the channel's own stripe
    (column `index`), nearly dark beside it, dimmed in the bottom row (the black matrix). 8-bit
    at the pixel's own level, so rounding costs a fraction of a level of the lit stripe."""
    stripe = np.full((_SUB, _SUB), _GLOW, dtype=np.float32)
    stripe[:, index] = 1.0
    stripe[-1] *= _MATRIX
    big = np.repeat(np.repeat(channel, _SUB, axis=0), _SUB, axis=1).astype(np.float32)
    big *= np.tile(stripe, channel.shape)
    return Image.fromarray(np.rint(big).astype(np.uint8), "L")


def _blur(plane: npt.NDArray[np.float32], radius: float) -> npt.NDArray[np.float32]:
    """Gaussian blur of standard deviation `radius`, separable, edges repeated."""
    reach = max(1, math.ceil(2.5 * radius))
    taps = np.exp(-0.5 * (np.arange(-reach, reach + 1) / radius) ** 2)
    taps /= taps.sum()
    for axis in (0, 1):
        padded = np.pad(plane, [(reach, reach) if a == axis else (0, 0) for a in (0, 1)],
                        mode="edge")
        out = np.zeros_like(plane)
        length = plane.shape[axis]
        for offset, weight in enumerate(taps):
            part = padded[offset:offset + length] if axis == 0 else \
                padded[:, offset:offset + length]
            out += np.float32(weight) * part
        plane = out
    return plane


def _camera_corners(size: tuple[float, float], page_box: tuple[int, int, int, int],
                    rng: random.Random) -> tuple[Corners, Corners]:
    """Where the screen's four corners, and the page's, land in the frame: the screen plane
    tilted and turned, placed so that the page covers 40-90 % of the frame."""
    width, height = size
    tilt = math.radians(rng.uniform(0, 20))
    axis = rng.uniform(0, math.pi)
    turn = math.radians(rng.uniform(-4, 4))
    k = np.array([math.cos(axis), math.sin(axis), 0.0])  # tilt axis, in the screen's plane
    skew = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    tilted = np.eye(3) + math.sin(tilt) * skew + (1 - math.cos(tilt)) * skew @ skew
    spin = np.array([[math.cos(turn), -math.sin(turn), 0], [math.sin(turn), math.cos(turn), 0],
                     [0, 0, 1]])
    rotation = tilted @ spin
    focal = _FOCAL * math.hypot(*FRAME)
    cx, cy = (page_box[0] + page_box[2]) / 2, (page_box[1] + page_box[3]) / 2

    def project(points: npt.NDArray[np.float64], distance: float) -> npt.NDArray[np.float64]:
        world = (points - [cx, cy, 0]) @ rotation.T + [0, 0, distance]
        return focal * world[:, :2] / world[:, 2:3]

    page = np.array([[page_box[0], page_box[1], 0], [page_box[2], page_box[1], 0],
                     [page_box[2], page_box[3], 0], [page_box[0], page_box[3], 0]], float)
    unit = project(page, 1.0e4)
    area = 0.5 * abs(np.dot(unit[:, 0], np.roll(unit[:, 1], 1))
                     - np.dot(unit[:, 1], np.roll(unit[:, 0], 1)))
    cover = rng.uniform(0.40, 0.90) * FRAME[0] * FRAME[1]
    # The projected area shrinks with the distance squared (nearly: the tilt is small).
    distance = 1.0e4 * math.sqrt(area / cover)
    for _ in range(60):  # and must fit in the frame: moved back until it does
        shown = project(page, distance)
        span = shown.max(axis=0) - shown.min(axis=0)
        if span[0] <= FRAME[0] * 0.98 and span[1] <= FRAME[1] * 0.98:
            break
        distance *= 1.03
    screen = np.array([[0, 0, 0], [width, 0, 0], [width, height, 0], [0, height, 0]], float)
    corners = project(screen, distance)
    shown = project(page, distance)
    centre = (shown.max(axis=0) + shown.min(axis=0)) / 2  # the page's bounding box, centred
    slack = (np.array(FRAME) - (shown.max(axis=0) - shown.min(axis=0))) / 2
    shift = np.array(FRAME) / 2 - centre + [rng.uniform(-0.8, 0.8) * slack[0],
                                             rng.uniform(-0.8, 0.8) * slack[1]]
    return ([(float(x), float(y)) for x, y in corners + shift],
            [(float(x), float(y)) for x, y in project(page, distance) + shift])


def _room(rng: random.Random) -> Image.Image:
    """The dim, grainy surroundings (the screen's dark bezel goes over them)."""
    base = rng.randint(15, 60)
    small = np.random.default_rng(rng.getrandbits(32)).normal(base, 12, (FRAME[1] // 16,
                                                                       FRAME[0] // 16, 3))
    return Image.fromarray(np.clip(small, 0, 255).astype(np.uint8), "RGB").resize(
        FRAME, Image.Resampling.BILINEAR)


def _outline(size: tuple[int, int], corners: list[tuple[float, float]]) -> npt.NDArray[np.float32]:
    """1 inside the quadrilateral `corners` (a rectangle of `size` seen in the frame), 0 out."""
    rectangle = [(0.0, 0.0), (size[0], 0.0), (size[0], size[1]), (0.0, size[1])]
    mask = Image.new("L", size, 255).transform(
        FRAME, Image.Transform.PERSPECTIVE, perspective_coefficients(rectangle, corners),
        Image.Resampling.BILINEAR, fillcolor=0)
    return np.asarray(mask, dtype=np.float32) / 255.0


def phone_photo(image: Image.Image, _: int, rng: random.Random) -> Image.Image:
    """The served page `image` shown on a screen and photographed (the module's steps)."""
    return photographed(image, rng)[0]


def photographed(image: Image.Image, rng: random.Random, point_sampled: bool = False,
                 ) -> tuple[Image.Image, Corners]:
    """The photo, and where the page's corners are in it (for checking the rectification).
    The lens and each sensor pixel's area filter the light before it is sampled; with
    `point_sampled` the grid is sampled at points and blurred only after (far more moire: the
    harsher model measured first)."""
    screen, page_box = _viewer(image, rng)
    corners, page_corners = _camera_corners(screen.size, page_box, rng)
    grid_size = (screen.width * _SUB, screen.height * _SUB)
    coefficients = perspective_coefficients(
        [(0, 0), (grid_size[0], 0), grid_size, (0, grid_size[1])], corners)
    inside = _outline(grid_size, corners)
    centre = np.mean(corners, axis=0)
    bezel = _outline(grid_size, [(float(centre[0] + 1.04 * (x - centre[0])),
                                  float(centre[1] + 1.04 * (y - centre[1])))
                                 for x, y in corners])
    room = np.asarray(_room(rng), dtype=np.float32)
    rgb = np.asarray(screen, dtype=np.uint8)
    radius = rng.uniform(0.6, 1.6)
    if not point_sampled:
        return _sensor(_filtered_light(screen, corners, radius, inside, bezel, room), rng), \
            page_corners
    planes = []
    for index in range(3):
        shown = np.asarray(_pixel_grid(rgb[:, :, index], index).transform(
            FRAME, Image.Transform.PERSPECTIVE, coefficients, Image.Resampling.BILINEAR,
            fillcolor=0), dtype=np.float32) / _STRIPE_MEAN
        surround = room[:, :, index] * (1 - bezel) + 12.0 * bezel
        planes.append(_blur(surround * (1 - inside) + shown * inside, radius))
    return _sensor(np.stack(planes, axis=2), rng), page_corners


def _filtered_light(screen: Image.Image, corners: Corners, radius: float,
                    inside: npt.NDArray[np.float32], bezel: npt.NDArray[np.float32],
                    room: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The light on the sensor, filtered before sampling: the screen's content warped and
    blurred by the lens, times the pixel grid's pattern blurred by the lens and each sensor
    pixel's area (in the grid's own samples, then warped). The product stands for the blur of
    the product: the content changes slowly beside the stripes."""
    size = screen.size
    rectangle = [(0.0, 0.0), (float(size[0]), 0.0), (float(size[0]), float(size[1])),
                 (0.0, float(size[1]))]
    to_screen = perspective_coefficients(rectangle, corners)
    grid_size = (size[0] * _SUB, size[1] * _SUB)
    to_grid = perspective_coefficients(
        [(0, 0), (grid_size[0], 0), grid_size, (0, grid_size[1])], corners)
    # Camera pixels per grid sample, on average over the screen.
    camera_per_sample = math.sqrt(float(inside.sum()) / (grid_size[0] * grid_size[1]))
    aperture = 0.4  # a sensor pixel's area as a Gaussian's standard deviation, in pixels
    grid_sigma = math.hypot(radius, aperture) / camera_per_sample
    rgb = np.asarray(screen, dtype=np.float32)
    planes = []
    for index in range(3):
        stripe = np.full((_SUB, _SUB), _GLOW, dtype=np.float32)
        stripe[:, index] = 1.0
        stripe[-1] *= _MATRIX
        pattern = Image.fromarray(np.rint(255 * np.tile(stripe, (size[1], size[0])))
                                  .astype(np.uint8), "L")
        pattern = pattern.filter(ImageFilter.GaussianBlur(grid_sigma)).transform(
            FRAME, Image.Transform.PERSPECTIVE, to_grid, Image.Resampling.BILINEAR,
            fillcolor=0)
        modulation = np.asarray(pattern, dtype=np.float32) / (255 * _STRIPE_MEAN)
        content = np.asarray(Image.fromarray(rgb[:, :, index], "F").transform(
            FRAME, Image.Transform.PERSPECTIVE, to_screen, Image.Resampling.BILINEAR,
            fillcolor=0.0), dtype=np.float32)
        shown = _blur(content, radius) * modulation
        surround = _blur(room[:, :, index] * (1 - bezel) + 12.0 * bezel, radius)
        planes.append(surround * (1 - inside) + shown * inside)
    return np.stack(planes, axis=2)


def _sensor(light: npt.NDArray[np.float32], rng: random.Random) -> Image.Image:
    """Exposure, gamma, white balance, sensor noise, then the phone's JPEG."""
    exposure = rng.uniform(0.75, 1.0)
    gamma = rng.uniform(0.8, 1.25)
    gains = np.array([rng.uniform(0.88, 1.08) for _ in range(3)], np.float32)
    values = 255.0 * (np.clip(light, 0, 255) / 255.0 * exposure) ** gamma * gains
    noise = np.random.default_rng(rng.getrandbits(32))
    sigma = rng.uniform(1.5, 4.0)
    values += noise.standard_normal(values.shape, dtype=np.float32) * (sigma + 0.015 * values)
    out = io.BytesIO()
    Image.fromarray(np.clip(values, 0, 255).astype(np.uint8), "RGB").save(
        out, "JPEG", quality=rng.randint(70, 85))
    return Image.open(io.BytesIO(out.getvalue())).convert("RGB")


PHONE_ATTACKS = {"phone photo": phone_photo}
