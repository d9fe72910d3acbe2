"""What a miss costs, per leak family, on images saved once (docs/leak-tracing.md, "Limits":
"Unmarked page-like images cost more").

    python -m bench.leakmark_miss_cost save DIR [--sets untuned,phone] [--seeds 41,47,67]
    python -m bench.leakmark_miss_cost measure DIR [--families filled,crop] [--unmarked]
        [--seeds 67] [--source TREE]

`save` writes a fixed set of leaks as PNG (their decoded pixels) with a manifest: the phone
photos of `bench.leakmark --family phone` at seed 5 (the 12 marked and 12 unmarked of
`--pages 12 --photos 1 --unmarked 12`, and the 3 unmarked of `--pages 6 --photos 1
--unmarked 3`), and the leaks of `bench.leakmark_untuned --pages 6 --leaks 2 --unmarked 6
--seed 41`, `--leaks 1 --seed 47` and `--leaks 1 --seed 67`, marked and unmarked: each leak
the very one those benches read (the same draws in the same order), so a decoder measured
here is measured on what the benches read, and two decoders on the same pixels. `--seeds`:
only the untuned runs of these seeds (each seed's leaks are drawn from a generator of its
own, so one saved alone is the same as saved with the others; each has a manifest of its
own, `manifest-untuned-SEED.json`, so seeds saved at different times share a folder).

`measure` decodes each saved image in this process (in the benches' deployment layout,
`bench.leakmark.LAYOUT`) after one decode that is not counted (a worker's first pays for
imports and FFT plans once) and prints per image its CPU time (`time.process_time`, what a
worker spends; a shared machine's other jobs weigh on it less than on the wall time) and
what it named, then per family and kind (marked, unmarked) p50, p95 and max, named and
wrong (`--seeds`: only the untuned leaks of these seeds). A yardstick
(`bench.leakmark_misses.yardstick`) is timed before and after, so that runs at different
hours compare. `--source TREE`: the `render` package read from TREE (an
export of another commit, `git archive COMMIT render | tar -x -C TREE`): an A/B on the same
pixels, run in turn in the same hour.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from PIL import Image

_MANIFESTS = "manifest-*.json"  # one a set (the untuned set one a seed): saved apart or at once
# (seed, pages, leaks a page, unmarked a family) of `bench.leakmark_untuned`'s runs.
_UNTUNED_RUNS = ((41, 6, 2, 6), (47, 6, 1, 6), (67, 6, 1, 6))
# (pages, photos a page, unmarked, whether its marked photos are kept) of
# `bench.leakmark --family phone --seed 5`'s runs.
_PHONE_RUNS = ((12, 1, 12, True), (6, 1, 3, False))
_PHONE_SEED = 5


def _save_phone(out: Path, entries: list[dict[str, object]]) -> None:
    """The draws of `bench.leakmark.phone_family`, in its order."""
    from bench.leakmark import mark_page
    from bench.leakmark_attacks import SERVED_QUALITY, corpus_pages, jpeg
    from bench.leakmark_phone import photographed
    from render.forensic_wire import trace_codes

    for pages_count, per_page, unmarked, keep_marked in _PHONE_RUNS:
        rng = random.Random(_PHONE_SEED)
        pages = corpus_pages(pages_count)
        run = f"phone-{pages_count}"
        for number, page in enumerate(pages):
            for _ in range(per_page):
                render_id = trace_codes.new_render_id(rng.getrandbits)
                photo, _ = photographed(jpeg(mark_page(page, render_id), SERVED_QUALITY), rng)
                if keep_marked:
                    _keep(out, entries, photo, f"{run}-marked-{number}", "phone", page.name,
                          render_id, manifest="phone")
        for number in range(unmarked):
            page = pages[number % len(pages)]
            photo, _ = photographed(jpeg(page.image, SERVED_QUALITY), rng)
            _keep(out, entries, photo, f"{run}-unmarked-{number}", "phone", page.name, None,
                  manifest="phone")


def _save_untuned(out: Path, seeds: set[int] | None) -> None:
    """The draws of `bench.leakmark_untuned.run`, in its order, every family (`seeds`: of
    these seeds' runs only)."""
    from bench.leakmark import mark_page
    from bench.leakmark_attacks import SERVED_QUALITY, corpus_pages, jpeg
    from bench.leakmark_untuned import FAMILIES
    from render.forensic_wire import trace_codes

    for seed, pages_count, per_page, unmarked in _UNTUNED_RUNS:
        if seeds is not None and seed not in seeds:
            continue
        entries: list[dict[str, object]] = []
        manifest = f"untuned-{seed}"
        rng = random.Random(seed)
        pages = corpus_pages(pages_count)
        for name, make in FAMILIES.items():
            for number, page in enumerate(pages):
                for copy in range(per_page):
                    render_id = trace_codes.new_render_id(rng.getrandbits)
                    leak = make(jpeg(mark_page(page, render_id), SERVED_QUALITY), rng)
                    _keep(out, entries, leak, f"s{seed}-{name}-{number}-{copy}", name,
                          page.name, render_id, manifest, seed)
            for number in range(unmarked):
                page = pages[number % len(pages)]
                leak = make(jpeg(page.image, SERVED_QUALITY), rng)
                _keep(out, entries, leak, f"s{seed}-{name}-unmarked-{number}", name, page.name,
                      None, manifest, seed)


def _keep(out: Path, entries: list[dict[str, object]], image: Image.Image, stem: str,
          family: str, page: str, render_id: int | None, manifest: str,
          seed: int = _PHONE_SEED) -> None:
    name = f"{stem}.png"
    image.save(out / name, compress_level=1)
    entries.append({"file": name, "family": family, "seed": seed, "page": page,
                    "render_id": render_id})
    print(f"  {name} {image.width}x{image.height}", flush=True)
    (out / f"manifest-{manifest}.json").write_text(json.dumps(entries, indent=1))


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(folder: Path, families: set[str] | None, unmarked_only: bool,
            seeds: set[int] | None = None) -> None:
    from bench.leakmark import LAYOUT
    from bench.leakmark_misses import yardstick
    from render.forensic import decode

    entries = [entry for manifest in sorted(folder.glob(_MANIFESTS))
               for entry in json.loads(manifest.read_text())
               if (families is None or entry["family"] in families)
               and (seeds is None or entry["family"] == "phone" or entry["seed"] in seeds)
               and not (unmarked_only and entry["render_id"] is not None)]
    print(f"decoder: {sys.modules['render.forensic.decode'].__file__}")
    if not entries:
        return
    images = {entry["file"]: Image.open(folder / entry["file"]).convert("RGB")
              for entry in entries}
    decode(images[entries[0]["file"]], LAYOUT)  # not counted: imports, FFT plans
    before = yardstick()
    rows: dict[tuple[str, int, str], list[tuple[float, bool, bool]]] = {}
    for entry in entries:
        image, render_id = images[entry["file"]], entry["render_id"]
        start = time.process_time()
        found = decode(image, LAYOUT)
        cpu = time.process_time() - start
        kind = "marked" if render_id is not None else "unmarked"
        rows.setdefault((entry["family"], entry["seed"], kind), []).append(
            (cpu, found is not None and found == render_id, found is not None
             and found != render_id))
        print(f"  {entry['file']} {image.width}x{image.height} {entry['page']}: "
              f"{'named' if found is not None and found == render_id else found}"
              f" {cpu:.2f} s", flush=True)
    after = yardstick()
    print(f"yardstick: {before:.3f} s before, {after:.3f} s after")
    print("\n| family | seed | kind | images | CPU p50 | p95 | max | named | wrong |"
          "\n|---|---|---|---|---|---|---|---|---|")
    for (family, seed, kind), results in rows.items():
        times = [row[0] for row in results]
        named = sum(row[1] for row in results) if kind == "marked" else "-"
        print(f"| {family} | {seed} | {kind} | {len(results)} | {statistics.median(times):.2f}"
              f" s | {_quantile(times, 0.95):.2f} s | {max(times):.2f} s | {named} |"
              f" {sum(row[2] for row in results)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "measure"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--families", default=None,
                        help="measure: only these families (phone, margin, filled, ...)")
    parser.add_argument("--sets", default="untuned,phone", help="save: these sets")
    parser.add_argument("--seeds", default=None,
                        help="the untuned runs of these seeds only (41, 47, 67)")
    parser.add_argument("--unmarked", action="store_true", help="measure: unmarked only")
    parser.add_argument("--source", type=Path, default=None,
                        help="measure: the render package of this tree (another commit's)")
    args = parser.parse_args()
    if args.source is not None:
        sys.path.insert(0, str(args.source.resolve()))
    seeds = {int(seed) for seed in args.seeds.split(",")} if args.seeds else None
    if args.action == "save":
        args.folder.mkdir(parents=True, exist_ok=True)
        steps: dict[str, Callable[[Path], None]] = {
            "untuned": lambda out: _save_untuned(out, seeds),
            "phone": lambda out: _save_phone(out, [])}
        for name in args.sets.split(","):
            steps[name](args.folder)
        return
    measure(args.folder, set(args.families.split(",")) if args.families else None,
            args.unmarked, seeds)


if __name__ == "__main__":
    main()
