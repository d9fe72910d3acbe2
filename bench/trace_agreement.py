"""`vault-admin trace` and `POST /v1/trace` give the same answer on every kind of bench leak.

    python -m bench.trace_agreement [--pages 3] [--seed 5] [--kinds SUBSTRING ...]

Starts a vaultd on the embedded default, as deployed (the placement mark on), uploads the bench's
generated text document and its photograph document, and has a viewer read pages of each through
a link. From every page served it makes one leak of each kind the leak benches make:

- every transformation of `bench.leakmark` (`bench.leakmark_attacks.ATTACKS`);
- the families made by another generator (`bench.leakmark_untuned.FAMILIES`: a photo with a
  margin, a photo framed on the page, a cropped photo, a screen grab);
- a phone photo of a screen (`bench.leakmark_phone`);
- the page scaled to 60 % and saved at JPEG q60 (`bench.leakmark_rescaled`'s leak);
- every wash of `bench.leakmark_wash` (the invisible mark taken off: the placement mark names
  the view, or nothing does);

and, from the same pages drawn by this process and never served (`render_page`: the visible
watermark, no mark), an unmarked leak of a few of those kinds. Each leak is traced three ways
against the same database: by the account's key over the API, and by `vault-admin trace IMAGE
--json`, once with `--account` (as the API reads: that account's views) and once without
(every account's). The answers are compared whole (`found`, and each match's view, viewer,
page, trace code and evidence). Exit status 1 when any differs.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
from PIL import Image

from bench import corpus
from bench.leakmark_attacks import ATTACKS, jpeg, render_page, scaled
from bench.leakmark_phone import phone_photo
from bench.leakmark_untuned import FAMILIES
from bench.leakmark_wash import WASHES, Wash
from render.forensic.layout import Layout, keyed
from render.forensic.served import LONG_SIDE
from tests.access_log import access_log_entries
from tests.http_helpers import create_link, page_images, upload_ok
from tests.trace_helpers import traced
from tests.vault_process import VaultProcess

# A leak of a served page: (page, rows above the strip, rng) -> the leaked image.
Leak = Callable[[Image.Image, int, random.Random], Image.Image]
UNMARKED_KINDS = ("attack: none", "attack: screenshot", "family: filled", "phone photo",
                  "rescaled 60% + jpeg q60")
TRACE_LIMITS = {"VAULTD_TRACE_MAX_IMAGES_PER_HOUR_PER_ACCOUNT": "1000000"}


def _rescaled(image: Image.Image, _: int, __: random.Random) -> Image.Image:
    return jpeg(scaled(image, 0.6), 60)


def leak_kinds(layout_key: bytes) -> dict[str, Leak]:
    """Every kind of leak, by name; the control wash reads the page with the deployment's
    layout (`layout_key`), as its bench does."""
    kinds: dict[str, Leak] = {f"attack: {name}": attack for name, attack in ATTACKS.items()}
    for name, family in FAMILIES.items():
        kinds[f"family: {name}"] = _photographed_by(family)
    kinds["phone photo"] = phone_photo
    kinds["rescaled 60% + jpeg q60"] = _rescaled
    for name, wash in WASHES.items():
        kinds[f"wash: {name}"] = _washed_by(wash, keyed(layout_key))
    return kinds


def _photographed_by(family: Callable[[Image.Image, random.Random], Image.Image]) -> Leak:
    return lambda image, _, rng: family(image, rng)


def _washed_by(wash: Wash, plan: Layout) -> Leak:
    return lambda image, rows, _: wash(image, rows, plan)


@dataclass
class Tally:
    leaks: int = 0
    named: dict[str, int] = field(default_factory=lambda: {"api": 0, "account": 0, "any": 0})
    right: int = 0  # named by the API as the view the leak was made from, and no other
    wrong: int = 0  # named by the API as another view
    agree: int = 0
    differences: list[str] = field(default_factory=list)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _served(vault: VaultProcess, key: str, pages: int) -> list[tuple[Image.Image, str]]:
    """Pages of the bench's text and photograph documents as a viewer was served them, each with
    the render id its log entry holds."""
    served: list[tuple[Image.Image, str]] = []
    with vault.client(key) as client:
        for document in (corpus.small_pdf(), corpus.image_heavy_pdf(pages=4, target=3_000_000)):
            file = upload_ok(client, document.data, name=document.name)
            link = create_link(client, file["id"], "leaker@example.com", viewerName="Lee Leaker")
            vault.secrets.append(link["token"])
            count = min(pages, document.pages)
            images = page_images(client, link["token"], count)
            ids = _render_ids(vault, file["id"])  # stored, never returned by the API
            served += [(image, ids[number]) for number, image in enumerate(images, start=1)]
    return served


def _render_ids(vault: VaultProcess, file_id: str) -> dict[int, str]:
    """The render id of each page's view of `file_id` (one view a page here)."""
    return {int(entry["page"]): entry["renderId"]
            for entry in access_log_entries(vault, file_id) if entry["action"] == "page"}


def _unmarked(pages: int) -> list[Image.Image]:
    """The same pages drawn here with the viewer's watermark and no mark: never served."""
    drawn: list[Image.Image] = []
    for document in (corpus.small_pdf(), corpus.image_heavy_pdf(pages=4, target=3_000_000)):
        pdf = pdfium.PdfDocument(document.data)
        try:
            drawn += [render_page(pdf, index).image for index in range(min(pages, len(pdf)))]
        finally:
            pdf.close()
    return drawn


def _answers(vault: VaultProcess, key: str, account_id: str, leak: Path
             ) -> dict[str, dict[str, Any]]:
    with vault.client(key) as client:
        by_api = traced(client, leak.read_bytes())
    return {"api": by_api,
            "account": vault.admin_json("trace", str(leak), "--account", account_id),
            "any": vault.admin_json("trace", str(leak))}


def _compare(tally: Tally, answers: dict[str, dict[str, Any]], render_id: str | None,
             name: str) -> None:
    tally.leaks += 1
    for way, answer in answers.items():
        tally.named[way] += bool(answer.get("found"))
    matches = answers["api"].get("matches", [])
    named = [m["renderId"] for m in matches]
    tally.right += render_id is not None and named == [render_id]
    tally.wrong += any(named_id != render_id for named_id in named)
    if answers["api"] == answers["account"] == answers["any"]:
        tally.agree += 1
    else:
        tally.differences.append(f"{name}: {answers}")


def run(pages: int, seed: int, only: list[str]) -> dict[str, Tally]:
    """Each kind's tally over the served pages, then over the unmarked ones."""
    rng = random.Random(seed)
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="trace-agreement-") as work:
        vault = VaultProcess(Path(work) / "data", env=TRACE_LIMITS).start()
        try:
            account_id, key = vault.new_account("Agreement Co")
            kinds = leak_kinds(vault.mark_cipher().layout_key)
            chosen = {name: leak for name, leak in kinds.items()
                      if not only or any(part in name for part in only)}
            sources: list[tuple[Image.Image, str | None, str]] = [
                (image, render_id, "") for image, render_id in _served(vault, key, pages)]
            sources += [(image, None, "unmarked, ") for image in _unmarked(pages)]
            leaks = 0
            for number, (image, render_id, prefix) in enumerate(sources):
                assert image.height > LONG_SIDE  # a portrait page: LONG_SIDE rows, the strip
                for name, leak in chosen.items():
                    if render_id is None and name not in UNMARKED_KINDS:
                        continue
                    leaks += 1
                    path = Path(work) / f"leak-{leaks}.png"
                    path.write_bytes(_png(leak(image, LONG_SIDE, rng)))
                    tally = tallies.setdefault(prefix + name, Tally())
                    _compare(tally, _answers(vault, key, account_id, path), render_id,
                             f"{prefix}{name} of page {number}")
        finally:
            vault.stop()
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=3, help="pages served of each document")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--kinds", nargs="*", default=[],
                        help="only the kinds whose name holds one of these")
    args = parser.parse_args()
    started = time.monotonic()
    tallies = run(args.pages, args.seed, args.kinds)
    print("| leak | leaks | named: API | vault-admin --account | vault-admin | the right view "
          "(API) | another view (API) | answers the same |")
    print("|---|---|---|---|---|---|---|---|")
    for name, tally in tallies.items():
        named = tally.named
        print(f"| {name} | {tally.leaks} | {named['api']} | {named['account']} | {named['any']} "
              f"| {tally.right} | {tally.wrong} | {tally.agree}/{tally.leaks} |")
    differences = [line for tally in tallies.values() for line in tally.differences]
    leaks = sum(tally.leaks for tally in tallies.values())
    print(f"\n{leaks} leaks, {leaks - len(differences)} answered the same three ways "
          f"({time.monotonic() - started:.0f} s)")
    for line in differences:
        print("DIFFERENT:", line)
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
