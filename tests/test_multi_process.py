"""Two vaultd processes behind one (imaginary) load balancer: one database, one blob store.

Process A starts the embedded database; B is pointed at it through VAULTD_MONGODB_URI. Both use
the same master key and the same Azurite container, or the same S3 bucket (moto_server), as two
nodes of one deployment would. Nothing is sticky: every request may land on either process.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.azurite import session_azurite
from tests.http_helpers import (
    FILE_NOT_FOUND,
    LINK_GONE,
    assert_json_error,
    create_link,
    is_jpeg,
    upload,
    upload_ok,
)
from tests.moto_server import aws_credentials, session_moto
from tests.shared_storage import AzureStorage, S3Storage, SharedStorage
from tests.tcp_relay import TcpRelay
from tests.vault_process import VaultProcess, assert_no_secrets_in_log, vault_pair
from vaultd.crypto.keyring import MasterKeyring
from vaultd.plans import get_plan

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

CONTAINER = "shared-vault"
STORAGE_DOWN = "storage unavailable; retry shortly"


@pytest.fixture(scope="module", params=["azure", "s3"])
def storage(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedStorage]:
    if request.param == "azure":
        yield AzureStorage(session_azurite(request.config, tmp_path_factory), CONTAINER)
        return
    with aws_credentials():
        moto = session_moto(request.config, tmp_path_factory)
        relay = TcpRelay(moto.port).start()
        try:
            yield S3Storage(moto, relay, CONTAINER)
        finally:
            relay.stop()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory,
         storage: SharedStorage) -> Iterator[tuple[VaultProcess, VaultProcess]]:
    ring = MasterKeyring.generate().serialize(one_line=True)
    # The upload cap is per process: these tests race more uploads than its default of 4.
    env = {**storage.env(), "VAULTD_MASTER_KEY": ring, "VAULTD_RENDER_WORKERS": "1",
           "VAULTD_UPLOAD_MAX_CONCURRENT_PER_ACCOUNT": "16"}
    with vault_pair(tmp_path_factory.mktemp("multi"), env) as (a, b):
        yield a, b
    key_bytes = ring.split(":", 1)[1]  # the id before it is not secret
    handed_out = [key_bytes, storage.secret, *a.secrets, *b.secrets]
    for server in (a, b):
        server.secrets = handed_out
        assert_no_secrets_in_log(server)


@pytest.fixture
def clients(pair: tuple[VaultProcess, VaultProcess]) -> Iterator[tuple[httpx.Client, ...]]:
    a, b = pair
    _, key = a.new_account("Two Nodes Ltd")
    with a.client(key) as api_a, b.client(key) as api_b:
        yield api_a, api_b


def container_names(storage: SharedStorage) -> set[str]:
    async def listing() -> set[str]:
        backend = storage.backend()
        try:
            return {name for name, _ in await backend.list_names()}
        finally:
            await backend.close()

    return asyncio.run(listing())


def orphan_blobs(server: VaultProcess, storage: SharedStorage) -> set[str]:
    async def file_ids(db: Any) -> set[str]:
        return {doc["_id"] async for doc in db.files.find({}, {"_id": 1})}

    return container_names(storage) - server.run_service(file_ids)


def link_token(server: VaultProcess, api: httpx.Client, file_id: str) -> str:
    token = create_link(api, file_id)["token"]
    server.secrets.append(token)
    return str(token)


def test_a_file_uploaded_through_one_process_is_listed_downloaded_and_rendered_by_the_other(
        pair: tuple[VaultProcess, VaultProcess], clients: tuple[httpx.Client, ...],
        storage: SharedStorage) -> None:
    api_a, api_b = clients
    original = docs.pdf(pages=3)
    stored = upload_ok(api_a, original, name="Q3 report.pdf", kind="delivery")
    listed = api_b.get("/files").json()
    assert [f["id"] for f in listed["files"]] == [stored["id"]]
    assert api_b.get(f"/files/{stored['id']}").json()["pageCount"] == 3
    download = api_b.get(f"/files/{stored['id']}/download")
    assert download.status_code == 200 and download.content == original
    token = link_token(pair[1], api_b, stored["id"])
    assert is_jpeg(api_b.get(f"/views/{token}/pages/3"))
    assert stored["id"] in container_names(storage)


def test_a_link_revoked_through_one_process_stops_pages_in_the_other_on_the_next_request(
        pair: tuple[VaultProcess, VaultProcess], clients: tuple[httpx.Client, ...]) -> None:
    api_a, api_b = clients
    stored = upload_ok(api_a, docs.pdf(pages=2))
    single, bulk = (link_token(pair[0], api_a, stored["id"]) for _ in range(2))
    for token in (single, bulk):
        assert is_jpeg(api_a.get(f"/views/{token}/pages/1"))  # A's worker has the document open
    assert api_b.delete(f"/views/{single}").status_code == 204
    assert_json_error(api_a.get(f"/views/{single}/pages/2"), 404, LINK_GONE)
    assert is_jpeg(api_a.get(f"/views/{bulk}/pages/2"))
    assert api_b.post(f"/files/{stored['id']}/revoke-views").json() == {"revoked": 1}
    assert_json_error(api_a.get(f"/views/{bulk}/pages/1"), 404, LINK_GONE)


def set_usage(server: VaultProcess, api: httpx.Client, documents: int, storage: int) -> None:
    account_id = api.get("/account").json()["id"]

    async def update(db: Any) -> None:
        await db.accounts.update_one({"_id": account_id}, {"$set": {
            "plan": "free", "usage.documents": documents, "usage.storageBytes": storage}})

    server.run_service(update)


@pytest.mark.parametrize("limit", ["documents", "storage"])
def test_concurrent_uploads_through_both_processes_never_pass_the_plan_limits(
        pair: tuple[VaultProcess, VaultProcess], clients: tuple[httpx.Client, ...],
        storage: SharedStorage, limit: str) -> None:
    body, free = docs.png(), get_plan("free")
    assert free.maxDocuments is not None
    # Room for exactly three more files, by count or by bytes.
    start = ((free.maxDocuments - 3, 0) if limit == "documents"
             else (0, free.maxStorageBytes - 3 * len(body) - len(body) // 2))
    set_usage(pair[0], clients[0], *start)
    gate = threading.Barrier(10)

    def send(i: int) -> httpx.Response:
        gate.wait()
        return upload(clients[i % 2], body, content_type="image/png", name=f"scan-{i}.png")

    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(send, range(10)))
    assert sorted(r.status_code for r in responses) == [201] * 3 + [402] * 7
    expected = (f"document limit reached: plan {free.name} allows {free.maxDocuments} documents"
                if limit == "documents" else
                f"storage limit reached: plan {free.name} allows {free.maxStorageBytes} bytes")
    assert_json_error(next(r for r in responses if r.status_code == 402), 402, expected)
    usage = clients[1].get("/account").json()["usage"]
    assert (usage["documents"], usage["storageBytes"]) == (start[0] + 3,
                                                          start[1] + 3 * len(body))
    listing = clients[0].get("/files").json()
    # `total` is the account's documents counter (set above to start the test near the limit).
    assert (len(listing["files"]), listing["total"]) == (3, usage["documents"])
    # The refused uploads left no blob behind: every blob in the container belongs to a file.
    assert {r.json()["id"] for r in responses if r.status_code == 201} <= container_names(storage)
    assert orphan_blobs(pair[0], storage) == set()


def test_deleting_through_one_process_makes_the_file_gone_in_the_other(
        pair: tuple[VaultProcess, VaultProcess], clients: tuple[httpx.Client, ...],
        storage: SharedStorage) -> None:
    api_a, api_b = clients
    stored = upload_ok(api_a, docs.pdf(pages=2), kind="delivery")
    token = link_token(pair[1], api_b, stored["id"])
    assert is_jpeg(api_b.get(f"/views/{token}/pages/1"))  # B's worker has it cached
    assert api_a.delete(f"/files/{stored['id']}").status_code == 204
    for path, message in ((f"/files/{stored['id']}", FILE_NOT_FOUND),
                          (f"/files/{stored['id']}/download", FILE_NOT_FOUND),
                          (f"/views/{token}/pages/2", LINK_GONE)):
        assert_json_error(api_b.get(path), 404, message)
    assert api_b.get("/files").json()["total"] == 0
    assert api_b.get("/account").json()["usage"]["documents"] == 0
    assert stored["id"] not in container_names(storage)


def timed(call: Any) -> httpx.Response:
    started = time.monotonic()
    response: httpx.Response = call()
    assert time.monotonic() - started < 10, "a request took too long to fail"
    return response


def assert_storage_down(response: httpx.Response) -> None:
    body = assert_json_error(response, 503, STORAGE_DOWN)
    assert body == {"error": STORAGE_DOWN} and response.headers["Retry-After"]


def test_a_storage_outage_is_a_json_503_and_both_processes_recover_by_themselves(
        pair: tuple[VaultProcess, VaultProcess], clients: tuple[httpx.Client, ...],
        storage: SharedStorage) -> None:
    api_a, api_b = clients
    original = docs.pdf(pages=2)
    stored = upload_ok(api_a, original, kind="delivery")
    token = link_token(pair[0], api_a, stored["id"])
    assert is_jpeg(api_b.get(f"/views/{token}/pages/1"))
    usage = api_a.get("/account").json()["usage"]
    storage.stop()
    try:
        assert_storage_down(timed(lambda: api_a.get(f"/files/{stored['id']}/download")))
        assert_storage_down(timed(lambda: api_b.get(f"/views/{token}/pages/2")))
        assert_storage_down(timed(lambda: upload(api_a, docs.png(), content_type="image/png")))
        # Metadata still comes from the database, and the refused upload cost nothing.
        assert api_b.get("/files").json()["total"] == 1
        assert api_b.get("/account").json()["usage"] == usage
    finally:
        storage.start()
    for server in pair:  # logged once per failed request, without any secret (fixture checks)
        assert storage.down_log in server.log_text()
    assert api_a.get(f"/files/{stored['id']}/download").content == original
    assert is_jpeg(api_b.get(f"/views/{token}/pages/2"))
    assert is_jpeg(api_a.get(f"/views/{token}/pages/1"))
    uploaded = upload_ok(api_b, docs.png(), content_type="image/png", name=f"{uuid.uuid4()}.png")
    assert api_a.get(f"/files/{uploaded['id']}").status_code == 200
