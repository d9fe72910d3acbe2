"""POST /v1/trace and `vault-admin trace` against a real vaultd: leaked pages (served through
both routes, then transformed with Pillow) lead back to their view; unmarked images, other
accounts' pages and Free accounts never get a match."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw, ImageEnhance

from bench.corpus import _photo_jpeg
from bench.leakmark_attacks import ATTACKS, render_page
from render.forensic import decode
from render.forensic.embed import embed
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from tests import documents as docs
from tests.access_log import access_log_entries
from tests.http_helpers import MISSING_KEY, assert_json_error, create_link, upload_ok
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

# The leaks of the issue (docs/leak-tracing.md), each traced back every time. Brightness or
# contrast raised by 20 % clips the paper to white: the mark is then read from the visible
# pattern's ink, the pattern itself modelled and subtracted.
LEAKS = ["none", "jpeg q50", "downscale 50%", "640 px wide", "half-area crop", "screenshot",
         "greyscale", "rotate 2 deg", "crop + jpeg q50", "downscale 50% + jpeg q50",
         "rotate 2 deg + crop", "greyscale + 640 px", "brightness -20%", "contrast -20%",
         "brightness +20%", "contrast +20%", "rotate 2 deg + brightness +20%",
         "rotate 2 deg + contrast +20%",
         # Read through the pattern's letters, which carry the mark more strongly, and after
         # JPEG q50 at the ink level the pattern's lattice shows.
         "brightness +20% + jpeg q50", "contrast +20% + jpeg q50", "640 px + brightness +20%"]
# A raised tone on a rescaled page is read at every scale from that ink alone: about 9 pages in
# 10 here (these pages are half a colour block, with little paper for the pattern; a brightened
# half-area crop may hold mostly the block); such a trace may come back empty, but never with
# another view's id.
BEST_EFFORT_LEAKS = ["screenshot + brightness +20%", "brightness +20% + crop"]


def _leak(name: str, page: Image.Image, rng: random.Random) -> Image.Image:
    if name == "brightness -20%":
        return ImageEnhance.Brightness(page).enhance(0.8)
    if name == "contrast -20%":
        return ImageEnhance.Contrast(page).enhance(0.8)
    return ATTACKS[name](page, page.height * 9 // 10, rng)  # the strip is under 10 %


def _encoded(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


def _trace(client: httpx.Client, image: Image.Image, fmt: str = "PNG") -> httpx.Response:
    kind = "image/jpeg" if fmt == "JPEG" else "image/png"
    return client.post("/trace", content=_encoded(image, fmt), headers={"Content-Type": kind},
                       timeout=120)


@pytest.fixture
def served(vault: VaultProcess, api: httpx.Client) -> dict[str, Any]:
    """Page 1 over the API (Option B), page 2 through the hosted viewer."""
    file = upload_ok(api, docs.pdf(pages=2), name="Board minutes.pdf")
    link = create_link(api, file["id"], "dana@example.com", viewerName="Dana Scully")
    vault.secrets.append(link["token"])
    first = api.get(f"/views/{link['token']}/pages/1", headers={"x-viewer-ip": "203.0.113.9"})
    second = httpx.get(f"{vault.url}/v/{link['token']}/pages/2", timeout=60)
    assert first.status_code == second.status_code == 200
    pages = [Image.open(io.BytesIO(r.content)).convert("RGB") for r in (first, second)]
    return {"file": file, "pages": pages, "entries": access_log_entries(vault, file["id"])}


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_leaked_pages_trace_back_to_viewer_page_and_time(
    vault: VaultProcess, api: httpx.Client, served: dict[str, Any]
) -> None:
    rng = random.Random(16)
    found, missed = 0, []
    for page, entry in zip(served["pages"], served["entries"], strict=True):
        for leak in LEAKS + BEST_EFFORT_LEAKS:
            leaked = _leak(leak, page, rng)
            response = _trace(api, leaked, "JPEG" if "jpeg" in leak else "PNG")
            assert response.status_code == 200, (leak, response.text)
            body = response.json()
            if not body["found"]:
                if leak not in BEST_EFFORT_LEAKS:
                    missed.append(leak)
                continue
            found += 1
            [match] = body["matches"]
            assert match["renderId"] == entry["renderId"], leak
            assert match["page"] == entry["page"]
            assert match["fileId"] == served["file"]["id"]
            assert match["fileName"] == "Board minutes.pdf"
            assert match["viewerEmail"] == "dana@example.com"
            assert match["viewerName"] == "Dana Scully"
            assert match["ip"] == entry.get("ip")
            assert match["at"].startswith(entry["at"].strftime("%Y-%m-%dT%H:%M:%S"))
            assert match["traceCode"].count("-") == 2
            if match["evidence"] == "placement":
                # The placement mark (on by default) names the view only when the pixels'
                # mark, read in this deployment's layout, names nothing.
                fmt = "JPEG" if "jpeg" in leak else "PNG"
                sent = Image.open(io.BytesIO(_encoded(leaked, fmt)))
                assert decode(sent, keyed(vault.mark_cipher().layout_key)) is None, leak
            else:
                assert match["evidence"] == "invisible", leak
    # The layout is keyed per deployment (this vault's key is new each run), and the pattern's
    # words hold the time of the view: how well a leak reads varies a little with both (the
    # pages raised in tone are read through the pattern's lattice, found whatever the text:
    # `tests/test_forensic_lattice.py`, `bench.leakmark_keys`). A miss is an empty answer,
    # never another view.
    assert len(missed) <= 1, missed
    assert served["entries"][0]["ip"] == "203.0.113.9"
    # Every trace was logged on the file, and shows in its access log.
    traces = access_log_entries(vault, served["file"]["id"], "trace")
    assert len(traces) == found >= 2 * len(LEAKS) - 1
    log = api.get(f"/files/{served['file']['id']}/access-log").json()
    assert log[0]["action"] == "trace"


def _unmarked_images(count: int) -> list[tuple[Image.Image, str]]:
    """A page rendered by PDFium alone at three scales, photographs, noise, flat and gradient
    images."""
    rng = random.Random(200)
    images: list[tuple[Image.Image, str]] = []
    document = pdfium.PdfDocument(docs.pdf())
    for scale in (1.0, 1.6, 2.1):
        bitmap = document[0].render(scale=scale)
        images.append((bitmap.to_pil().convert("RGB"), "PNG"))
    while len(images) < count:
        kind = len(images) % 4
        size = (rng.randint(200, 900), rng.randint(200, 900))
        if kind == 0:
            data = _photo_jpeg(rng.randrange(10_000), size, rng.randint(40, 95))
            images.append((Image.open(io.BytesIO(data)).convert("RGB"), "JPEG"))
        elif kind == 1:
            noise = np.random.default_rng(len(images)).integers(0, 256, (*size[::-1], 3))
            images.append((Image.fromarray(noise.astype(np.uint8)), "PNG"))
        elif kind == 2:
            images.append((Image.new("RGB", size, (rng.randrange(256),) * 3), "PNG"))
        else:
            gradient = Image.linear_gradient("L").resize(size).rotate(rng.randrange(360))
            images.append((gradient.convert("RGB"), "JPEG"))
    return images


# The page at three scales (the pages of `docs.pdf` differ only in their heading's number),
# then each other kind (photographs, noise, flat, gradients) about nine times at its random
# sizes. Each is read by a worker to its end, every reading tried; the
# account holds no view, so what is asserted is that every kind of image is answered, not
# found and never an error (a false match needs a view to name: the bench's 200 unmarked
# images count the decoder's, `bench.leakmark`; another account's view is never named:
# test_another_accounts_page_is_not_found).
UNMARKED = 40


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_unmarked_images_are_never_found(api: httpx.Client) -> None:
    images = _unmarked_images(UNMARKED)
    assert len(images) >= UNMARKED
    answers = [_trace(api, image, fmt) for image, fmt in images]
    assert [a.status_code for a in answers] == [200] * len(images)
    assert [a.json() for a in answers] == [{"found": False}] * len(images)


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_unmarked_pages_with_the_pattern_go_through_every_reading(api: httpx.Client) -> None:
    """A page drawn as vaultd draws it, visible pattern and strip, but with no mark: the
    decoder in the confined worker tries every reading (the pattern's lattice, its ink levels,
    the scans at each), and answers not found, never an error."""
    page = render_page(pdfium.PdfDocument(docs.pdf()), 0)  # the others differ by a digit
    rng = random.Random(7)
    for leak in ("brightness +20% + jpeg q50", "640 px + brightness +20%",
                 "rotate 2 deg + brightness +20%", "downscale 50% + jpeg q50"):
        leaked = ATTACKS[leak](page.image, page.page_height, rng)
        response = _trace(api, leaked, "JPEG" if "jpeg" in leak else "PNG")
        assert (response.status_code, response.json()) == (200, {"found": False}), leak


def test_another_accounts_page_is_not_found(
    vault: VaultProcess, served: dict[str, Any]
) -> None:
    _, other_key = vault.new_account("Other Co", plan="business")
    with vault.client(other_key) as other:
        response = _trace(other, served["pages"][0])
    assert response.status_code == 200
    assert response.json() == {"found": False}
    assert access_log_entries(vault, served["file"]["id"], "trace") == []


def test_free_plan_is_refused(vault: VaultProcess, served: dict[str, Any]) -> None:
    _, free_key = vault.new_account("Free Co", plan="free")
    with vault.client(free_key) as free:
        response = _trace(free, served["pages"][0])
    assert_json_error(response, 403, re.compile(r"leak tracing needs the Pro or Business plan .*"))


def test_bad_bodies_are_refused(api: httpx.Client, anon: httpx.Client) -> None:
    png = _encoded(Image.new("RGB", (300, 300), "white"), "PNG")
    wrong_type = api.post("/trace", content=png, headers={"Content-Type": "application/pdf"})
    assert_json_error(wrong_type, 415, "send the leaked image as image/jpeg or image/png")
    lying = api.post("/trace", content=png, headers={"Content-Type": "image/jpeg"})
    assert_json_error(lying, 415, "the body is not a image/jpeg image")
    damaged = api.post("/trace", content=png[:200], headers={"Content-Type": "image/png"})
    assert_json_error(damaged, 422, re.compile(r".*damaged.*"))
    huge = api.post("/trace", content=b"\x89PNG\r\n\x1a\n" + bytes(26 * 1024 * 1024),
                    headers={"Content-Type": "image/png"}, timeout=120)
    assert_json_error(huge, 413, re.compile(r"image larger than the \d+ byte limit"))
    assert_json_error(anon.post("/trace", content=png, headers={"Content-Type": "image/png"}),
                      401, MISSING_KEY)


def test_vault_admin_trace_finds_the_view_in_any_account(
    vault: VaultProcess, served: dict[str, Any], tmp_path: Path
) -> None:
    leaked = tmp_path / "leak.png"
    ATTACKS["screenshot"](served["pages"][1], 0, random.Random(3)).save(leaked)
    body = vault.admin_json("trace", str(leaked))
    assert body["found"] is True
    [match] = body["matches"]
    assert match["renderId"] == served["entries"][1]["renderId"]
    assert match["viewerName"] == "Dana Scully"
    blank = tmp_path / "blank.png"
    Image.new("RGB", (800, 1000), "white").save(blank)
    assert vault.admin_json("trace", str(blank)) == {"found": False}
    text = vault.admin("trace", str(leaked)).stdout
    assert match["traceCode"] in text and "dana@example.com" in text


def test_a_typed_trace_code_is_visible_evidence(
    api: httpx.Client, served: dict[str, Any]
) -> None:
    from render.forensic_wire.trace_codes import parse_render_id_hex, trace_code

    code = trace_code(parse_render_id_hex(served["entries"][0]["renderId"]))
    page = served["pages"][0]
    both = api.post(f"/trace?traceCode={code}", content=_encoded(page, "PNG"),
                    headers={"Content-Type": "image/png"}, timeout=120).json()
    assert [m["evidence"] for m in both["matches"]] == ["both"]
    # The mark painted out (a flat copy), the strip's code typed in: visible evidence only.
    blank = _encoded(Image.new("RGB", page.size, "white"), "PNG")
    visible = api.post(f"/trace?traceCode={code.lower()}", content=blank,
                       headers={"Content-Type": "image/png"}, timeout=120).json()
    assert [(m["evidence"], m["page"]) for m in visible["matches"]] == [("visible", 1)]
    typo = code[:-1] + ("0" if code[-1] != "0" else "1")
    response = api.post(f"/trace?traceCode={typo}", content=blank,
                        headers={"Content-Type": "image/png"})
    assert_json_error(response, 400, re.compile(r".*check symbol.*"))


def test_a_declared_huge_body_is_refused_before_it_is_read(
    vault: VaultProcess, account: tuple[str, str]
) -> None:
    import json
    import socket
    from urllib.parse import urlparse

    url = urlparse(vault.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall((f"POST /v1/trace HTTP/1.1\r\nHost: {url.hostname}\r\n"
                      f"Authorization: Bearer {account[1]}\r\nContent-Type: image/png\r\n"
                      "Content-Length: 900000000\r\n\r\n").encode() + b"\x89PNG\r\n\x1a\n")
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert "limit" in json.loads(body)["error"]


def test_a_mark_forged_from_the_public_layout_names_no_view(
    vault: VaultProcess, api: httpx.Client, served: dict[str, Any]
) -> None:
    """The attack: frame another viewer by embedding their id (printed on their page as the
    trace code) with the mark's published layout, over a clean page. The pixels carry the id
    sealed with the deployment's key, in the deployment's keyed layout, so the forgery names
    no view; so does the sealed value in the published layout; the sealed value in the
    deployment's layout, which needs the key, is found (the control)."""
    target = served["entries"][1]
    render_id = trace_codes.parse_render_id_hex(target["renderId"])
    clean = Image.new("RGB", (1237, 1600), "white")
    draw = ImageDraw.Draw(clean)
    for row in range(40):
        draw.text((100, 80 + row * 36), "Quarterly figures, confidential " * 3, fill=(30, 30, 30))
    forged = embed(clean, render_id)
    assert decode(forged) == render_id  # a valid mark: the layout is public
    response = _trace(api, forged)
    assert response.status_code == 200 and response.json() == {"found": False}
    assert access_log_entries(vault, served["file"]["id"], "trace") == []

    mark = vault.mark_cipher()
    public_layout = embed(clean, mark.seal(render_id))
    assert _trace(api, public_layout).json() == {"found": False}
    with_key = embed(clean, mark.seal(render_id), keyed(mark.layout_key))
    [match] = _trace(api, with_key).json()["matches"]
    assert match["renderId"] == target["renderId"] and match["evidence"] == "invisible"
