"""A bounded load test on loopback: 200 concurrent clients for 20 s, mixing page requests on
several links with uploads from accounts close to their plan limits, then stopping by itself.

What must hold under load: no 5xx but the documented 503 back-pressure (with Retry-After and a
JSON body); one `page` access-log entry per page served; usage counters that add up exactly to
the uploads answered 201 and never pass a limit; no orphan blobs; vaultd's memory bounded. The
figures (throughput, latency, 503s, memory) are printed and written to test-artifacts/load.txt.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests import render_fixtures as fx
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import ROOT, VaultProcess, assert_no_secrets_in_log

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

DURATION_SECONDS = 20.0
CLIENTS = 200
PAGE_SHARE = 0.7
RSS_HEADROOM_MB = 200
GiB = 1024**3


@dataclass
class Uploader:
    """An account whose uploads the load test tallies; `room` is how many should fit."""

    name: str
    plan: str
    key: str = ""
    account_id: str = ""
    body: bytes = b""
    initial: dict[str, int] = field(default_factory=dict)
    limits: tuple[int | None, int] = (None, 0)


@dataclass
class Sample:
    kind: str
    status: int
    seconds: float
    target: str  # file id of a page, account name of an upload
    size: int = 0


@dataclass
class LoadRun:
    vault: VaultProcess
    samples: list[Sample]
    problems: list[str]
    uploaders: list[Uploader]
    page_files: dict[str, str]  # token -> file id
    elapsed: float
    idle_rss_mb: float
    peak_rss_mb: float

    def of(self, kind: str) -> list[Sample]:
        return [s for s in self.samples if s.kind == kind]


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


# --- setup --------------------------------------------------------------------------------------


def viewer_links(vault: VaultProcess) -> tuple[str, dict[str, tuple[str, int]]]:
    """The viewing account's key; several files, two links each: token -> (file id, pages)."""
    _, key = vault.new_account("Load Viewers", plan="pro")
    links: dict[str, tuple[str, int]] = {}
    with vault.client(key) as api:
        for data in (docs.pdf(pages=3), fx.jpeg((800, 600)), fx.png((640, 480)), docs.pdf(1)):
            file = upload_ok(api, data)
            for n in range(2):
                token = create_link(api, file["id"], f"viewer{n}@load.example")["token"]
                vault.secrets.append(token)
                links[token] = (file["id"], file["pageCount"])
    return key, links


def prepare_uploaders(vault: VaultProcess) -> list[Uploader]:
    body = docs.pdf(pages=1)
    uploaders = [
        Uploader("docs nearly full", "free", body=body,
                 initial={"documents": 92, "storageBytes": 0}, limits=(100, GiB)),
        Uploader("storage nearly full", "free", body=docs.png(),
                 initial={"documents": 0, "storageBytes": GiB - 6 * len(docs.png()) - 100},
                 limits=(100, GiB)),
        Uploader("pro nearly full", "pro", body=body,
                 initial={"documents": 4990, "storageBytes": 0}, limits=(5000, 26_843_545_600)),
        Uploader("roomy", "business", body=fx.jpeg((320, 240)),
                 initial={"documents": 0, "storageBytes": 0}, limits=(None, 200 * GiB)),
    ]
    for uploader in uploaders:
        uploader.account_id, uploader.key = vault.new_account(uploader.name.title(),
                                                              uploader.plan)

        async def preset(db: Any, u: Uploader = uploader) -> None:
            usage = {f"usage.{k}": v for k, v in u.initial.items()}
            await db.accounts.update_one({"_id": u.account_id}, {"$set": usage})

        vault.run_service(preset)
    return uploaders


# --- the load -----------------------------------------------------------------------------------


def check_answer(kind: str, response: httpx.Response, problems: list[str]) -> None:
    status = response.status_code
    # 429: the account already has its cap of uploads in progress (per-account back-pressure),
    # or a link or the account its cap of pages waiting (the fair render queue: with
    # render.queue_size 8 the one viewing account may hold 4 waiting, half the queue).
    expected = {"page": {200, 429, 503}, "upload": {201, 402, 429, 503}}[kind]
    if status not in expected:
        problems.append(f"{kind}: unexpected {status} {response.text[:200]}")
        return
    if status in (429, 503) and not (response.headers.get("Retry-After", "").isdigit()
                                     and isinstance(json.loads(response.text).get("error"), str)):
        problems.append(f"{kind}: {status} without Retry-After or JSON error: "
                        f"{response.text[:200]}")
    too_many = {"upload": ("too many uploads in progress",),
                "page": ("too many pages of this link are being rendered",
                         "too many renders of this account are waiting")}[kind]
    if status == 429 and not response.json()["error"].startswith(too_many):
        problems.append(f"{kind}: unexpected 429 message: {response.text[:200]}")
    if status == 402 and "error" not in response.json():
        problems.append(f"upload: 402 without a JSON error: {response.text[:200]}")
    if kind == "page" and status == 200 and response.content[:3] != b"\xff\xd8\xff":
        problems.append("page: 200 that is not a JPEG")


async def one_page(client: httpx.AsyncClient, rng: random.Random,
                   links: dict[str, tuple[str, int]]) -> tuple[Sample, httpx.Response]:
    token = rng.choice(list(links))
    file_id, pages = links[token]
    started = time.monotonic()
    response = await client.get(f"/views/{token}/pages/{rng.randint(1, pages)}",
                                headers={"x-viewer-ip": f"198.51.100.{rng.randint(1, 254)}"})
    return Sample("page", response.status_code, time.monotonic() - started, file_id), response


async def one_upload(client: httpx.AsyncClient, rng: random.Random,
                     uploaders: list[Uploader]) -> tuple[Sample, httpx.Response]:
    uploader = rng.choice(uploaders)
    started = time.monotonic()
    response = await client.post("/files", content=uploader.body, headers={
        "Authorization": f"Bearer {uploader.key}", "Content-Type": "application/octet-stream"})
    size = response.json()["size"] if response.status_code == 201 else 0
    sample = Sample("upload", response.status_code, time.monotonic() - started, uploader.name,
                    size)
    return sample, response


async def client_loop(number: int, client: httpx.AsyncClient, deadline: float,
                      links: dict[str, tuple[str, int]], uploaders: list[Uploader],
                      samples: list[Sample], problems: list[str]) -> None:
    rng = random.Random(number)
    while time.monotonic() < deadline:
        kind = "page" if rng.random() < PAGE_SHARE else "upload"
        started = time.monotonic()
        try:
            if kind == "page":
                sample, response = await one_page(client, rng, links)
            else:
                sample, response = await one_upload(client, rng, uploaders)
        except httpx.TransportError as error:
            # A connection vaultd closed or reset without an answer is a failure of the load,
            # named with its timing (an idle or header timeout would show its own seconds);
            # the other clients go on, so the run's figures stay readable.
            # The exception's type, not its text: a page's URL carries its view token.
            problems.append(f"{kind}: {type(error).__name__} after "
                            f"{time.monotonic() - started:.1f} s, at "
                            f"{started - deadline + DURATION_SECONDS:.1f} s into the run")
            continue
        samples.append(sample)
        check_answer(sample.kind, response, problems)
        if sample.status in (402, 429, 503):  # a polite client backs off a little
            await asyncio.sleep(rng.uniform(0.1, 0.5))


async def sample_rss(pid: int, done: asyncio.Event, peak: list[float]) -> None:
    while not done.is_set():
        peak[0] = max(peak[0], rss_mb(pid))
        await asyncio.sleep(0.2)


async def run_load(vault: VaultProcess, viewer_key: str, links: dict[str, tuple[str, int]],
                   uploaders: list[Uploader]) -> tuple[list[Sample], list[str], float, float]:
    assert vault.process is not None
    samples: list[Sample] = []
    problems: list[str] = []
    peak = [0.0]
    done = asyncio.Event()
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=f"{vault.url}/v1", limits=limits, timeout=120,
                                 headers={"Authorization": f"Bearer {viewer_key}"}) as client:
        sampler = asyncio.create_task(sample_rss(vault.process.pid, done, peak))
        started = time.monotonic()
        deadline = started + DURATION_SECONDS
        await asyncio.gather(*(client_loop(n, client, deadline, links, uploaders, samples,
                                           problems) for n in range(CLIENTS)))
        elapsed = time.monotonic() - started
        done.set()
        await sampler
    return samples, problems, elapsed, peak[0]


@pytest.fixture(scope="module")
def load(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadRun]:
    vault = VaultProcess(tmp_path_factory.mktemp("load") / "data", env={
        "VAULTD_RENDER_WORKERS": "2", "VAULTD_RENDER_QUEUE_SIZE": "8"}).start()
    try:
        viewer_key, links = viewer_links(vault)
        uploaders = prepare_uploaders(vault)
        assert vault.process is not None
        idle = rss_mb(vault.process.pid)
        samples, problems, elapsed, peak = asyncio.run(
            run_load(vault, viewer_key, links, uploaders))
        page_files = {token: file_id for token, (file_id, _) in links.items()}
        yield LoadRun(vault, samples, problems, uploaders, page_files, elapsed, idle, peak)
    finally:
        vault.stop()
    assert_no_secrets_in_log(vault)


# --- what must hold -----------------------------------------------------------------------------


def test_the_load_ran_for_its_time_and_stopped_by_itself(load: LoadRun) -> None:
    assert DURATION_SECONDS <= load.elapsed < DURATION_SECONDS + 60
    assert len(load.of("page")) > 50 and len(load.of("upload")) > 20
    assert any(s.status == 200 for s in load.of("page"))
    assert any(s.status == 201 for s in load.of("upload"))


def test_no_5xx_but_503_back_pressure_with_retry_after_and_json(load: LoadRun) -> None:
    assert not load.problems, f"{len(load.problems)} bad answers, e.g. {load.problems[:5]}"
    assert {s.status for s in load.samples} <= {200, 201, 402, 429, 503}


def test_every_served_page_has_exactly_one_page_entry(load: LoadRun) -> None:
    served = Counter(s.target for s in load.of("page") if s.status == 200)

    async def count_entries(db: Any) -> dict[str, int]:
        return {file_id: await db.access_log.count_documents({"fileId": file_id, "action": "page"})
                for file_id in set(load.page_files.values())}

    logged = load.vault.run_service(count_entries)
    assert logged == {file_id: served.get(file_id, 0) for file_id in logged}


def test_usage_is_exactly_what_the_201s_add_up_to_and_never_over_the_limit(
    load: LoadRun,
) -> None:
    created: dict[str, list[int]] = defaultdict(list)
    refused: Counter[str] = Counter()
    for sample in load.of("upload"):
        if sample.status == 201:
            created[sample.target].append(sample.size)
        refused[sample.target] += sample.status == 402
    for uploader in load.uploaders:
        with load.vault.client(uploader.key) as api:
            usage = api.get("/account").json()["usage"]
            listed = len(api.get("/files", params={"perPage": 100}).json()["files"])
        sizes = created[uploader.name]
        assert usage["documents"] == uploader.initial["documents"] + len(sizes), uploader.name
        assert usage["storageBytes"] == uploader.initial["storageBytes"] + sum(sizes)
        assert listed == min(len(sizes), 100)  # `total` is the documents counter, checked above
        max_documents, max_storage = uploader.limits
        assert max_documents is None or usage["documents"] <= max_documents
        assert usage["storageBytes"] <= max_storage
        if refused[uploader.name]:  # a 402 means the account really was full
            assert (usage["documents"] == max_documents
                    or usage["storageBytes"] + len(uploader.body) > max_storage), uploader.name
    assert sum(refused.values()) > 0, "no upload reached a plan limit"


def test_no_blob_is_left_without_its_file(load: LoadRun) -> None:
    async def file_ids(db: Any) -> set[str]:
        return {doc["_id"] async for doc in db.files.find({}, {"_id": 1})}

    blobs = {path.name for path in (load.vault.data_dir / "blobs").iterdir()}
    assert blobs == load.vault.run_service(file_ids)


def test_vaultd_memory_stays_bounded_and_the_figures_are_reported(load: LoadRun) -> None:
    summary = summarise(load)
    print("\n" + summary)
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "load.txt").write_text(summary + "\n")
    assert load.peak_rss_mb < load.idle_rss_mb + RSS_HEADROOM_MB, summary


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def summarise(load: LoadRun) -> str:
    lines = [(f"load: {CLIENTS} concurrent clients for {load.elapsed:.1f} s on loopback, "
              f"{len(load.samples)} requests, {len(load.samples) / load.elapsed:.1f} requests/s; "
              f"vaultd RSS idle {load.idle_rss_mb:.0f} MB, peak {load.peak_rss_mb:.0f} MB")]
    for kind in ("page", "upload"):
        samples = load.of(kind)
        statuses = Counter(s.status for s in samples)
        ok = [s.seconds for s in samples if s.status in (200, 201)]
        every = [s.seconds for s in samples]
        lines.append(
            f"{kind}: {len(samples)} requests {dict(sorted(statuses.items()))}; latency all "
            f"p50 {percentile(every, .5) * 1000:.0f} ms p95 {percentile(every, .95) * 1000:.0f} ms;"
            f" successful p50 {percentile(ok, .5) * 1000:.0f} ms"
            f" p95 {percentile(ok, .95) * 1000:.0f} ms; {statuses.get(503, 0)} x 503")
    return "\n".join(lines)
