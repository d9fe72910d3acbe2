"""Cold and warm pages, the 100-megapixel image, and two accounts alternating, over HTTP, each
against a bare render measured back to back with it.

- **Cold / warm.** Every round uploads a fresh copy of the document (a new file id: no worker
  has any of its pages), opens it with one untimed page, then for each sampled page times its
  first view (cold: rendered by PDFium), then, after an untimed second view (rendered again
  and kept: a worker keeps a page from its second render on), a third (warm: from the
  worker's page cache, `render/worker/page_cache.py`) and the bare pypdfium2 render + JPEG, in a
  rotating order.
- **Big image.** A 100-megapixel PNG uploaded once (its rendition is made at upload), its page
  viewed again and again; the bare figure is what a renderer without a rendition does: Pillow
  decodes the PNG, scales it to the page size and encodes the JPEG.
- **Two accounts.** The same document uploaded by two accounts; their pages are asked for
  alternately (A1, B1, A2, B2...), which the one-account-per-worker rule makes the worst case.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field

from PIL import Image

from bench.baselines import BareRenderer
from bench.corpus import Document
from bench.latency import sample_pages
from bench.server import Client, Vault
from render.page.sizing import fit_scale, scaled_size
from render.wire.model import PixelBudget

BIG_SIDE = 10_000  # 100 megapixels, the largest image vaultd accepts


@dataclass
class Paired:
    """vaultd's seconds and the bare render's, taken back to back, and their ratios."""

    name: str
    http: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    over_bare: list[float] = field(default_factory=list)
    failures: int = 0

    def add(self, reply_seconds: float | None, bare_seconds: float) -> None:
        self.bare.append(bare_seconds)
        if reply_seconds is None:
            self.failures += 1
            return
        self.http.append(reply_seconds)
        self.over_bare.append(reply_seconds / bare_seconds)


def _seconds(client: Client, token: str, number: int) -> float | None:
    reply = client.page(token, number)
    return reply.seconds if reply.status == 200 else None


def cold_and_warm(vault: Vault, client: Client, doc: Document, budget: PixelBudget,
                  wanted: int, rounds: int) -> tuple[Paired, Paired]:
    cold, warm = Paired(f"{doc.name} cold"), Paired(f"{doc.name} warm")
    pages = sample_pages(doc.pages, wanted + 1)
    opener, pages = pages[-1], pages[:-1] or pages  # viewed untimed: the worker opens the file
    bare = BareRenderer(doc.data, budget)
    try:
        for turn in range(rounds):
            stored = vault.store(client, doc.data, f"{doc.name} copy {turn}")
            token = vault.link(client, stored["id"])
            client.page(token, opener)
            for index, number in enumerate(pages):
                steps = ["cold-warm", "bare"]
                if (turn + index) % 2:
                    steps.reverse()
                first = second = None
                bare_seconds = 0.0
                for step in steps:
                    if step == "bare":
                        bare_seconds = bare.render(number)[0]
                    else:
                        first = _seconds(client, token, number)
                        client.page(token, number)  # rendered again, and kept from now on
                        second = _seconds(client, token, number)
                cold.add(first, bare_seconds)
                warm.add(second, bare_seconds)
            client.request("DELETE", f"/files/{stored['id']}")
    finally:
        bare.close()
    return cold, warm


def big_png(side: int = BIG_SIDE) -> bytes:
    """A smooth 100-megapixel picture that compresses to a few MB (under the upload limit)."""
    gradient = Image.linear_gradient("L").resize((side, side), Image.Resampling.BILINEAR)
    image = Image.merge("RGB", (gradient, gradient.transpose(Image.Transpose.ROTATE_90),
                                gradient.transpose(Image.Transpose.FLIP_TOP_BOTTOM)))
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6)
    return out.getvalue()


def _bare_image(data: bytes, budget: PixelBudget) -> float:
    started = time.perf_counter()
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        size = scaled_size(*image.size, fit_scale(*image.size, budget))
        small = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=2.0)
    small.save(io.BytesIO(), "JPEG", quality=80)
    return time.perf_counter() - started


def big_image(vault: Vault, client: Client, data: bytes, budget: PixelBudget,
              rounds: int) -> tuple[Paired, float]:
    """(paired samples, upload seconds) for the 100-megapixel PNG."""
    started = time.perf_counter()
    stored = vault.store(client, data, "big.png")
    uploaded = time.perf_counter() - started
    token = vault.link(client, stored["id"])
    paired = Paired("100-megapixel PNG")
    for turn in range(rounds):
        if turn % 2:
            bare_seconds = _bare_image(data, budget)
            paired.add(_seconds(client, token, 1), bare_seconds)
        else:
            reply = _seconds(client, token, 1)
            paired.add(reply, _bare_image(data, budget))
    return paired, uploaded


def two_accounts(vault: Vault, doc: Document, budget: PixelBudget, wanted: int,
                 rounds: int) -> Paired:
    _, other_key = vault.process.new_account("Other Bench Corp", plan="business")
    first, second = vault.client(), Client(vault.port, other_key)
    paired = Paired(f"{doc.name}, two accounts alternating")
    bare = BareRenderer(doc.data, budget)
    try:
        tokens = []
        for client in (first, second):
            stored = vault.store(client, doc.data, doc.name)
            tokens.append((client, vault.link(client, stored["id"])))
        pages = sample_pages(doc.pages, wanted)
        for turn in range(rounds):
            for number in pages:
                for client, token in tokens:
                    if turn % 2:
                        bare_seconds = bare.render(number)[0]
                        paired.add(_seconds(client, token, number), bare_seconds)
                    else:
                        reply = _seconds(client, token, number)
                        paired.add(reply, bare.render(number)[0])
    finally:
        bare.close()
        first.close()
        second.close()
    return paired
