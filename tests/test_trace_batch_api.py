"""POST /v1/trace with several images of one leak (multipart/form-data) against a real vaultd:
an answer per image, and a combined verdict per viewer; bad forms are refused with the
documented status and message."""

from __future__ import annotations

import io
import random
import re
from typing import Any

import httpx
import pytest
from PIL import Image

from bench.corpus import _photo_jpeg
from bench.leakmark_attacks import ATTACKS
from tests import documents as docs
from tests.access_log import access_log_entries
from tests.http_helpers import assert_json_error, create_link, upload_ok
from tests.trace_helpers import blank_png, png
from tests.vault_process import VaultProcess


def _jpeg(image: Image.Image, quality: int = 90) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _batch(client: httpx.Client, parts: list[tuple[str, bytes, str]],
           query: str = "", data: dict[str, str] | None = None) -> httpx.Response:
    files = [("image", (name, body, kind)) for name, body, kind in parts]
    return client.post(f"/trace{query}", files=files, data=data or {}, timeout=300)


@pytest.fixture
def served(vault: VaultProcess, api: httpx.Client) -> dict[str, Any]:
    """Two pages of one document, seen by one viewer over the API."""
    file = upload_ok(api, docs.pdf(pages=2), name="Plans.pdf")
    link = create_link(api, file["id"], "fox@example.com", viewerName="Fox Mulder")
    vault.secrets.append(link["token"])
    pages = []
    for number in (1, 2):
        response = api.get(f"/views/{link['token']}/pages/{number}")
        assert response.status_code == 200
        pages.append(Image.open(io.BytesIO(response.content)).convert("RGB"))
    return {"file": file, "pages": pages, "entries": access_log_entries(vault, file["id"], "page")}


@pytest.mark.slow  # several decodes
def test_pages_of_one_leak_add_up_to_their_viewer(
    vault: VaultProcess, api: httpx.Client, served: dict[str, Any]
) -> None:
    rng = random.Random(30)
    first, second = served["pages"]
    unmarked = _photo_jpeg(7, (900, 700), 80)
    parts = [("p1.jpg", _jpeg(ATTACKS["jpeg q50"](first, 0, rng)), "image/jpeg"),
             ("holiday.jpg", unmarked, "image/jpeg"),
             ("p2.png", png(ATTACKS["downscale 50%"](second, 0, rng)), "image/png"),
             ("p1-again.png", png(ATTACKS["screenshot"](first, 0, rng)), "image/png")]
    response = _batch(api, parts)
    assert response.status_code == 200, response.text
    body = response.json()
    ids = [entry["renderId"] for entry in served["entries"]]
    assert body["found"] is True
    assert body["viewers"] == [{"viewerEmail": "fox@example.com", "viewerName": "Fox Mulder",
                                "images": [0, 2, 3], "renderIds": [ids[0], ids[1]]}]
    images = body["images"]
    assert [(i["index"], i["name"], i["found"]) for i in images] == [
        (0, "p1.jpg", True), (1, "holiday.jpg", False), (2, "p2.png", True),
        (3, "p1-again.png", True)]
    assert "matches" not in images[1]
    assert [m["renderId"] for m in images[0]["matches"]] == [ids[0]]
    assert [(m["renderId"], m["page"], m["evidence"]) for m in images[2]["matches"]] == [
        (ids[1], 2, "invisible")]
    assert images[3]["matches"][0]["fileName"] == "Plans.pdf"
    # One trace entry per matching image, as three single traces would write.
    assert len(access_log_entries(vault, served["file"]["id"], "trace")) == 3


@pytest.mark.slow  # one decode
def test_nothing_found_and_a_damaged_image_answer_per_image(api: httpx.Client) -> None:
    blank = png(Image.new("RGB", (400, 500), "white"))
    response = _batch(api, [("blank.png", blank, "image/png"),
                            ("broken.png", blank[:300], "image/png")])
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["found"], body["viewers"]) == (False, [])
    assert body["images"][0] == {"index": 0, "name": "blank.png", "found": False}
    assert body["images"][1]["found"] is False
    assert re.fullmatch(r".*damaged.*", body["images"][1]["error"])


def test_bad_forms_are_refused(vault: VaultProcess, api: httpx.Client) -> None:
    blank = blank_png()
    too_many = _batch(api, [(f"{n}.png", blank, "image/png") for n in range(21)])
    assert_json_error(too_many, 400, "at most 20 images in one trace (21 sent)")
    wrong_type = _batch(api, [("a.png", blank, "image/png"), ("b.txt", b"hello", "text/plain")])
    assert_json_error(wrong_type, 415,
                      "image 2: send the leaked image as image/jpeg or image/png")
    lying = _batch(api, [("a.jpg", blank, "image/jpeg")])
    assert_json_error(lying, 415, "image 1: the body is not a image/jpeg image")
    field = _batch(api, [("a.png", blank, "image/png")], data={"note": "hi"})
    assert_json_error(field, 400, "only image parts (files) belong in a multipart trace")
    none = api.post("/trace", content=b"--b--\r\n",
                    headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert_json_error(none, 400, "send 1 to 20 images as multipart/form-data parts named image")
    malformed = api.post("/trace", content=b"no boundary here",
                         headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert_json_error(malformed, 400, "the multipart/form-data body is malformed")
    no_boundary = api.post("/trace", content=b"x",
                           headers={"Content-Type": "multipart/form-data"})
    assert_json_error(no_boundary, 400, "the multipart/form-data body has no boundary")
    code = _batch(api, [("a.png", blank, "image/png")], query="?traceCode=K7QF-2MXA-9P")
    assert_json_error(code, 400, "traceCode goes with a single image sent as the raw body")
    big = _batch(api, [("big.png", b"\x89PNG\r\n\x1a\n" + bytes(26 * 1024 * 1024), "image/png")])
    assert_json_error(big, 413, "image 1 larger than the 26214400 byte limit")
    _, free_key = vault.new_account("Free Batch Co", plan="free")
    with vault.client(free_key) as free:
        refused = _batch(free, [("a.png", blank, "image/png")])
    assert_json_error(refused, 403,
                      re.compile(r"leak tracing needs the Pro or Business plan .*"))
