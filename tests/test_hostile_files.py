"""The hostile corpus (tests/hostile_corpus.py) against a real vaultd: every upload is refused with
the right JSON error or accepted with a sound record, every accepted page renders or fails as
JSON within a bounded time, and the server, its blob store and the account's usage come out of
the whole corpus intact."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests import documents as docs
from tests.hostile_corpus import Case, corpus
from tests.http_helpers import PAGE_NOT_FOUND, assert_json_error, upload, upload_ok
from tests.office_pdf import converters_running
from tests.vault_process import VaultProcess, running_vault
from vaultd.services.files.uploads import sniff

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

RENDER_TIMEOUT = 5
OFFICE_TIMEOUT = 5  # the converter's deadline: the document that hangs LibreOffice meets it
# A request may wait for a busy worker, run to the timeout, and pay for the worker's respawn.
REQUEST_BOUND_SECONDS = RENDER_TIMEOUT * 2 + 10
LONG_SIDE, MAX_PIXELS = 1600, 4_000_000
STRIP_ALLOWANCE = 240  # the watermark strip is added below the page, up to this many pixels
SERVER_RSS_BOUND_MB = 400

CASES = {case.name: case for case in corpus()}


def one_of(*messages: str) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(message) for message in messages))


# The documented refusals of a hostile file: which one depends on where PDFium or Pillow gives
# up, so each answer must be one of these (never another text, never a traceback).
UNREADABLE = re.compile(one_of(
    "the PDF is password-protected", "the PDF is damaged or not a PDF", "the PDF has no pages",
    "the image is damaged or too large", "the image dimensions are too large",
    "the page has no usable size", "the file takes too long to process",
    "the file could not be processed", "the file needs more memory than a render may use",
    "the page could not be rendered",
    # Office uploads, refused by the worker's check of the ZIP index (render/office/formats.py)
    "the Office document expands too much (a ZIP bomb?)",
    "the Office document declares XML entities (a DTD), which Office formats never do",
    "the Office document nests XML elements deeper than 1000 levels",
    "the Office document is damaged (its ZIP archive cannot be read)",
    f"the document took longer than {OFFICE_TIMEOUT} s to convert",
    ).pattern + r"|page \d+ of the PDF is damaged")
REFUSALS = {415: one_of("content is not a PDF, JPEG or PNG file",
                        "legacy Office files (.doc, .xls, .ppt) are not accepted: save the "
                        "document as DOCX, XLSX, PPTX, ODT, ODS or ODP, or as a PDF"),
            422: UNREADABLE,
            503: one_of("rendering timed out; retry later",
                        "the page could not be rendered; retry later",
                        "render queue is full; retry shortly")}
MAY_BE_ACCEPTED = [name for name, case in CASES.items() if 201 in case.expect]


class Answer:
    """A response kept with the time it took (the client is closed by then)."""

    def __init__(self, response: httpx.Response, seconds: float) -> None:
        self.response, self.seconds = response, seconds

    @property
    def status(self) -> int:
        return self.response.status_code


@pytest.fixture(scope="module")
def hostile_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("hostile") / "data",
                       VAULTD_RENDER_TIMEOUT_SECONDS=str(RENDER_TIMEOUT),
                       VAULTD_RENDER_MEMORY_LIMIT_MB="1024",
                       VAULTD_UPLOAD_OFFICE="true",
                       VAULTD_UPLOAD_OFFICE_TIMEOUT_SECONDS=str(OFFICE_TIMEOUT)) as server:
        yield server


@pytest.fixture(scope="module")
def api(hostile_vault: VaultProcess) -> Iterator[httpx.Client]:
    _, key = hostile_vault.new_account("Hostile Inputs Ltd", plan="pro")
    with hostile_vault.client(key) as client:
        yield client


@pytest.fixture(scope="module")
def uploads(api: httpx.Client) -> dict[str, Answer]:
    """Every case uploaded once, in corpus order, as application/octet-stream."""
    answers = {}
    for name, case in CASES.items():
        started = time.monotonic()
        response = upload(api, case.data, content_type="application/octet-stream", name=name)
        answers[name] = Answer(response, time.monotonic() - started)
    return answers


def accepted(uploads: dict[str, Answer]) -> dict[str, dict]:
    return {name: a.response.json() for name, a in uploads.items() if a.status == 201}


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


# --- uploads ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_each_hostile_upload_is_refused_with_json_or_accepted_soundly(
    uploads: dict[str, Answer], name: str
) -> None:
    case, answer = CASES[name], uploads[name]
    assert answer.status in case.expect, f"{name}: {answer.status} {answer.response.text[:300]}"
    assert answer.seconds < REQUEST_BOUND_SECONDS, f"{name} took {answer.seconds:.1f} s"
    if answer.status == 201:
        assert_a_sound_record(case, answer.response.json())
        return
    body = assert_json_error(answer.response, answer.status, REFUSALS[answer.status])
    assert set(body) == {"error"}
    assert "Traceback" not in answer.response.text


def assert_a_sound_record(case: Case, body: dict) -> None:
    # Typed by its first bytes only: a PNG carrying a PDF is a PNG, whatever follows.
    assert body["contentType"] == sniff(case.data[:8])
    assert body["size"] == len(case.data)
    assert body["name"] == case.name
    assert isinstance(body["pageCount"], int) and body["pageCount"] >= 1
    if body["contentType"] != "application/pdf":
        assert body["pageCount"] == 1


def test_the_3000_page_pdf_counts_every_page(uploads: dict[str, Answer]) -> None:
    answer = uploads["pdf-3000-pages"]
    assert answer.status == 201, answer.response.text
    assert answer.response.json()["pageCount"] == 3000


def test_a_pdf_whose_page_count_lies_is_counted_by_its_real_pages(
    uploads: dict[str, Answer]
) -> None:
    # /Count says 1,000,000 and the tree holds one page. Reporting the claim sends clients (and
    # the hosted viewer, which lays out one placeholder per page) after a million pages.
    answer = uploads["pdf-count-claims-a-million-pages"]
    if answer.status == 422:
        assert_json_error(answer.response, 422, UNREADABLE)
        return
    assert answer.status == 201, answer.response.text
    assert answer.response.json()["pageCount"] == 1


# --- rendering what was accepted ----------------------------------------------------------------


def fetch(api: httpx.Client, path: str) -> Answer:
    started = time.monotonic()
    response = api.get(path, headers={"x-viewer-ip": "198.51.100.23"})
    return Answer(response, time.monotonic() - started)


def assert_a_page_or_a_json_error(answer: Answer, label: str) -> tuple[int, int] | None:
    """The JPEG's size, or None for an acceptable JSON error."""
    response = answer.response
    assert answer.seconds < REQUEST_BOUND_SECONDS, f"{label} took {answer.seconds:.1f} s"
    assert response.status_code in (200, 422, 503), f"{label}: {response.text}"
    if response.status_code != 200:
        assert_json_error(response, response.status_code, REFUSALS[response.status_code])
        if response.status_code == 503:
            assert int(response.headers["Retry-After"]) > 0
        return None
    assert response.headers["content-type"] == "image/jpeg"
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "JPEG"
    image.load()
    width, height = image.size
    assert max(width, height - STRIP_ALLOWANCE) <= LONG_SIDE, f"{label}: {image.size}"
    assert width * height <= MAX_PIXELS + width * STRIP_ALLOWANCE, f"{label}: {image.size}"
    return image.size


@pytest.mark.parametrize("name", MAY_BE_ACCEPTED)
def test_each_accepted_file_renders_its_first_and_last_page_or_answers_json(
    hostile_vault: VaultProcess, api: httpx.Client, uploads: dict[str, Answer], name: str
) -> None:
    answer = uploads[name]
    if answer.status != 201:
        # Refused at upload: then the refusal itself is what must be sound.
        assert answer.status in (415, 422), answer.response.text
        assert_json_error(answer.response, answer.status, REFUSALS[answer.status])
        return
    file = answer.response.json()
    link = api.post("/views", json={"fileId": file["id"], "viewerEmail": "probe@example.com"})
    assert link.status_code == 201, link.text
    token = link.json()["token"]
    hostile_vault.secrets.append(token)
    paths = [f"/views/{token}/pages/{n}" for n in sorted({1, file["pageCount"]})]
    with ThreadPoolExecutor(2) as pool:  # two render workers: use both
        answers = list(pool.map(lambda path: fetch(api, path), paths))
    for path, page in zip(paths, answers, strict=True):
        assert_a_page_or_a_json_error(page, f"{name} {path.rsplit('/', 2)[-2:]}")
    # Past the last page is a 404, never a render attempt.
    assert_json_error(api.get(f"/views/{token}/pages/{file['pageCount'] + 1}"), 404,
                      PAGE_NOT_FOUND)


@pytest.mark.parametrize("name", ["pdf-mediabox-14400-square", "pdf-3000-pages"])
def test_huge_pages_render_within_the_pixel_budget(
    hostile_vault: VaultProcess, api: httpx.Client, uploads: dict[str, Answer], name: str
) -> None:
    file = uploads[name].response.json()
    token = api.post("/views", json={"fileId": file["id"], "viewerEmail": "p@example.com"}).json()
    hostile_vault.secrets.append(token["token"])
    page = fetch(api, f"/views/{token['token']}/pages/{file['pageCount']}")
    assert page.status == 200, page.response.text
    width, height = assert_a_page_or_a_json_error(page, name) or (0, 0)
    assert width == LONG_SIDE and LONG_SIDE < height <= LONG_SIDE + STRIP_ALLOWANCE


# --- afterwards ---------------------------------------------------------------------------------


def test_the_server_stays_healthy_and_tidy_after_the_whole_corpus(
    hostile_vault: VaultProcess, api: httpx.Client, uploads: dict[str, Answer]
) -> None:
    health = httpx.get(f"{hostile_vault.url}/healthz", timeout=10).json()
    assert health["status"] == "ok" and health["renderSandbox"]["complete"] is True
    assert not converters_running()  # the document that hangs LibreOffice left no process
    kept = accepted(uploads)
    normal = upload_ok(api, docs.pdf(pages=2), name="after the storm.pdf")
    link = api.post("/views", json={"fileId": normal["id"], "viewerEmail": "ok@example.com"})
    hostile_vault.secrets.append(link.json()["token"])
    page = api.get(f"/views/{link.json()['token']}/pages/2")
    assert page.status_code == 200 and page.content[:3] == b"\xff\xd8\xff"

    blobs = {path.name for path in (hostile_vault.data_dir / "blobs").iterdir()}
    assert blobs == {file["id"] for file in kept.values()} | {normal["id"]}, "orphans or temps"

    usage = api.get("/account").json()["usage"]
    assert usage["documents"] == len(kept) + 1
    assert usage["storageBytes"] == sum(f["size"] for f in kept.values()) + normal["size"]
    assert api.get("/files", params={"perPage": 100}).json()["total"] == len(kept) + 1


def test_the_server_logged_no_uncaught_exception_and_kept_its_memory(
    hostile_vault: VaultProcess,
) -> None:
    log = hostile_vault.log_text()
    assert "Uncaught exception" not in log and "Traceback" not in log, log[-3000:]
    assert hostile_vault.process is not None
    assert rss_mb(hostile_vault.process.pid) < SERVER_RSS_BOUND_MB
