"""The maintained invisible-watermark libraries on the same pages and leaks as `bench.leakmark`.

    pip install --target /tmp/libs invisible-watermark blind-watermark onnxruntime
    PYTHONPATH=/tmp/libs:. python -m bench.leakmark_libs [--pages 2]

Not a dependency of vaultd: they lost (docs/leak-tracing.md). Each carries a 32-bit payload;
a transformation counts as recovered only when all 32 bits come back exactly.
`trustmark` is not tried: it downloads its model weights at first use, which cannot work here.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import numpy as np
from PIL import Image

from bench.leakmark_attacks import ATTACKS, SERVED_QUALITY, corpus_pages, jpeg

BITS = 32
SUBSET = ("none", "jpeg q50", "downscale 50%", "half-area crop", "screenshot", "greyscale",
          "rotate 2 deg", "brightness +20%")


def _bgr(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"))[:, :, ::-1].copy()


def _image(bgr: np.ndarray) -> Image.Image:
    return Image.fromarray(np.clip(bgr, 0, 255).astype(np.uint8)[:, :, ::-1].copy())


def imwatermark(method: str) -> tuple[Callable[..., Image.Image], Callable[..., list[int]]]:
    from imwatermark import WatermarkDecoder, WatermarkEncoder
    if method == "rivaGan":
        WatermarkEncoder.loadModel()

    def mark(image: Image.Image, bits: list[int]) -> Image.Image:
        encoder = WatermarkEncoder()
        encoder.set_watermark("bits", bits)
        return _image(encoder.encode(_bgr(image), method))

    def read(image: Image.Image) -> list[int]:
        return [int(b) for b in WatermarkDecoder("bits", BITS).decode(_bgr(image), method)]

    return mark, read


def blind() -> tuple[Callable[..., Image.Image], Callable[..., list[int]]]:
    import os
    import tempfile

    from blind_watermark import WaterMark

    def mark(image: Image.Image, bits: list[int]) -> Image.Image:
        engine = WaterMark(password_img=1, password_wm=1)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "in.png")
            image.convert("RGB").save(path)
            engine.read_img(path)
            engine.read_wm(np.array(bits, dtype=bool), mode="bit")
            out = os.path.join(folder, "out.png")
            engine.embed(out)
            return Image.open(out).convert("RGB")

    def read(image: Image.Image) -> list[int]:
        engine = WaterMark(password_img=1, password_wm=1)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "leak.png")
            image.convert("RGB").save(path)
            return [int(b) for b in engine.extract(path, wm_shape=BITS, mode="bit")]

    return mark, read


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--schemes", default="dwtDct,rivaGan,blind",
                        help="comma-separated: dwtDct, rivaGan, blind")
    parser.add_argument("--attacks", type=int, default=len(SUBSET),
                        help="only the first N leaks of the list (the slow libraries)")
    args = parser.parse_args()
    wanted = set(args.schemes.split(","))
    subset = SUBSET[: args.attacks]
    rng = random.Random(3)
    pages = corpus_pages(args.pages)
    schemes = {"dwtDct": ("invisible-watermark dwtDct", lambda: imwatermark("dwtDct")),
               "rivaGan": ("invisible-watermark rivaGan", lambda: imwatermark("rivaGan")),
               "blind": ("blind-watermark", blind)}
    for key, (name, factory) in schemes.items():
        if key not in wanted:
            continue
        try:
            mark, read = factory()
        except Exception as exc:  # a library that will not load is reported, not fatal
            print(f"{name}: not runnable here ({type(exc).__name__}: {exc})")
            continue
        ok = {attack: 0 for attack in subset}
        bit_share = {attack: 0.0 for attack in subset}
        embed_s, read_s = [], []
        for page in pages:
            bits = [rng.randint(0, 1) for _ in range(BITS)]
            start = time.perf_counter()
            try:
                marked = mark(page.image, bits)
            except Exception as exc:
                print(f"{name}: embed failed on {page.name}: {exc}")
                break
            embed_s.append(time.perf_counter() - start)
            served = jpeg(marked, SERVED_QUALITY)
            for attack in subset:
                leaked = ATTACKS[attack](served, page.page_height, rng)
                start = time.perf_counter()
                try:
                    got = read(leaked)
                except Exception:
                    got = []
                read_s.append(time.perf_counter() - start)
                same = sum(a == b for a, b in zip(got, bits, strict=False))
                ok[attack] += same == BITS
                bit_share[attack] += same / BITS / len(pages)
        if not embed_s:
            continue
        print(f"\n{name}: embed {np.median(embed_s) * 1e3:.0f} ms, decode "
              f"{np.median(read_s) * 1e3:.0f} ms (median, {len(pages)} pages)")
        for attack in subset:
            print(f"  {attack}: exact {ok[attack]}/{len(embed_s)}, bits right "
                  f"{100 * bit_share[attack]:.0f} %")


if __name__ == "__main__":
    main()
