"""POST /v1/trace and `vault-admin trace` against a real vaultd: leaked pages (served through
both routes, then transformed with Pillow) lead back to their view; unmarked images, other
accounts' pages and Free accounts never get a match. The landing run traces a sample of the
leaks, one of each reading; `test_trace_api_leaks.py` (the long tier) traces every leak on both
pages and more unmarked images."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw

from bench.leakmark_attacks import ATTACKS
from render.forensic import decode
from render.forensic.embed import embed
from render.forensic.layout import keyed
from render.forensic_wire import trace_codes
from tests.access_log import access_log_entries
from tests.http_helpers import MISSING_KEY, assert_json_error
from tests.trace_leaks import (
    assert_never_found,
    assert_pattern_pages_never_found,
    encoded,
    serve_two_pages,
    trace,
    traced_leaks,
    unmarked_images,
)
from tests.vault_process import VaultProcess

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop

# One leak of each reading (the pixels, a rescale, a crop's rotation, the greyscale, the
# pattern's ink after a raised tone, a lowered contrast), the API's page and the viewer's.
SAMPLE = [["none", "jpeg q50", "downscale 50% + jpeg q50", "rotate 2 deg + crop",
           "greyscale + 640 px", "brightness +20% + jpeg q50", "contrast -20%"],
          ["crop + jpeg q50", "contrast +20%", "640 px + brightness +20%"]]


@pytest.fixture
def served(vault: VaultProcess, api: httpx.Client) -> dict[str, Any]:
    return serve_two_pages(vault, api)


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_leaked_pages_trace_back_to_viewer_page_and_time(
    vault: VaultProcess, api: httpx.Client, served: dict[str, Any]
) -> None:
    found, missed = traced_leaks(vault, api, served, SAMPLE, best_effort=[])
    # The layout is keyed per deployment (this vault's key is new each run), and the pattern's
    # words hold the time of the view: how well a leak reads varies a little with both (the
    # pages raised in tone are read through the pattern's lattice, found whatever the text:
    # `tests/test_forensic_lattice.py`, `bench.leakmark_keys`). A miss is an empty answer,
    # never another view.
    assert len(missed) <= 1, missed
    assert found >= sum(map(len, SAMPLE)) - 1


# The page at three scales (the pages of `docs.pdf` differ only in their heading's number),
# then a photograph, noise, a flat image and a gradient, each read by a worker to its end,
# every reading tried; the account holds no view, so what is asserted is that every kind of
# image is answered, not found and never an error (a false match needs a view to name: the
# bench's 200 unmarked images count the decoder's, `bench.leakmark`; another account's view is
# never named: test_another_accounts_page_is_not_found).
@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_unmarked_images_are_never_found(api: httpx.Client) -> None:
    images = unmarked_images(7)
    assert len(images) == 7
    assert_never_found(api, images)


@pytest.mark.slow  # several seconds: kept out of the fast loop
def test_an_unmarked_page_with_the_pattern_goes_through_every_reading(api: httpx.Client) -> None:
    assert_pattern_pages_never_found(api, ["brightness +20% + jpeg q50"])


def test_another_accounts_page_is_not_found(
    vault: VaultProcess, served: dict[str, Any]
) -> None:
    _, other_key = vault.new_account("Other Co", plan="business")
    with vault.client(other_key) as other:
        response = trace(other, served["pages"][0])
    assert response.status_code == 200
    assert response.json() == {"found": False}
    assert access_log_entries(vault, served["file"]["id"], "trace") == []


def test_free_plan_is_refused(vault: VaultProcess, served: dict[str, Any]) -> None:
    _, free_key = vault.new_account("Free Co", plan="free")
    with vault.client(free_key) as free:
        response = trace(free, served["pages"][0])
    assert_json_error(response, 403, re.compile(r"leak tracing needs the Pro or Business plan .*"))


def test_bad_bodies_are_refused(api: httpx.Client, anon: httpx.Client) -> None:
    png = encoded(Image.new("RGB", (300, 300), "white"), "PNG")
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
    both = api.post(f"/trace?traceCode={code}", content=encoded(page, "PNG"),
                    headers={"Content-Type": "image/png"}, timeout=120).json()
    assert [m["evidence"] for m in both["matches"]] == ["both"]
    # The mark painted out (a flat copy), the strip's code typed in: visible evidence only.
    blank = encoded(Image.new("RGB", page.size, "white"), "PNG")
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
    response = trace(api, forged)
    assert response.status_code == 200 and response.json() == {"found": False}
    assert access_log_entries(vault, served["file"]["id"], "trace") == []

    mark = vault.mark_cipher()
    public_layout = embed(clean, mark.seal(render_id))
    assert trace(api, public_layout).json() == {"found": False}
    with_key = embed(clean, mark.seal(render_id), keyed(mark.layout_key))
    [match] = trace(api, with_key).json()["matches"]
    assert match["renderId"] == target["renderId"] and match["evidence"] == "invisible"
