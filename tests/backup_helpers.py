"""For tests/test_backup.py: a vault with something of everything in it, what it held, an
upload held open half way, and a MongoDB-wire server of our own."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import documents as docs
from tests.http_helpers import create_link, upload_ok
from tests.vault_process import ROOT, VaultProcess, free_port
from tests.waiting import wait_until

EXTRA_LOG_ENTRIES = 450  # more than two of backup's batches (BATCH_DOCUMENTS = 200)
UPLOADS = [  # (bytes, content type, kind, name)
    (docs.pdf(3), "application/pdf", "delivery", "contract.pdf"),
    (docs.pdf(2), "application/pdf", "source", "plans.pdf"),
    (docs.png(), "image/png", "delivery", "diagram.png"),
    (docs.jpeg(), "image/jpeg", "source", "photo.jpg"),
]


@dataclass
class VaultContents:
    """What a vault held, as its API and its database say."""

    key: str
    account: dict[str, Any] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    originals: dict[str, bytes] = field(default_factory=dict)  # file id -> uploaded bytes
    tokens: list[str] = field(default_factory=list)


def populate(vault: VaultProcess) -> VaultContents:
    """Every kind of file, links, page views, downloads, and a long access log."""
    account_id, key = vault.new_account("Backup Co", "business")
    contents = VaultContents(key)
    with vault.client(key) as client:
        for data, content_type, kind, name in UPLOADS:
            made = upload_ok(client, data, content_type=content_type, kind=kind, name=name)
            contents.originals[made["id"]] = data
            token = create_link(client, made["id"], "ann@client.example",
                                viewerName="Ann Lee")["token"]
            contents.tokens.append(token)
            assert client.get(f"/views/{token}/pages/1").status_code == 200
            if kind == "delivery":
                assert client.get(f"/files/{made['id']}/download").content == data
    first = next(iter(contents.originals))
    vault.run_service(lambda db: _log_many(db, account_id, first))
    return contents


async def _log_many(db: Any, account_id: str, file_id: str) -> None:
    from vaultd.services.common import access_log

    for number in range(EXTRA_LOG_ENTRIES):
        await access_log.record(db, account_id, file_id, "download",
                                viewer_email=f"reader{number}@example.com")


def capture(vault: VaultProcess, key: str) -> VaultContents:
    contents = VaultContents(key)
    with vault.client(key) as client:
        contents.account = client.get("/account").json()
        contents.files = client.get("/files", params={"perPage": 100}).json()["files"]
        for file in contents.files:
            contents.logs[file["id"]] = client.get(f"/files/{file['id']}/access-log").json()
    contents.counts = vault.run_service(_counts)
    return contents


TRAILING = ("instances", "number_counters")


async def _counts(db: Any) -> dict[str, int]:
    names = await db.database.list_collection_names()
    # Each vault registers its own processes (`instances`); the audit log's sequencer trails
    # the logs by its merge delay, so its leaves and nodes grow while a test compares counts,
    # and so do the access log's number counters its rounds create (`number_counters`).
    # An empty collection holds what an absent one does (a delete on a collection nobody wrote
    # yet may leave it behind, and a restore makes none for it).
    counts = {name: await db.database[name].count_documents({}) for name in sorted(names)
              if name not in TRAILING and not name.startswith("audit_")}
    return {name: count for name, count in counts.items() if count}


class HeldUpload:
    """A PDF upload whose body stops half way until `finish()`: in flight for as long as we
    like, observed through the temporary blob vaultd writes for it."""

    def __init__(self, vault: VaultProcess, key: str) -> None:
        self.data = docs.pdf(4)
        self.connection = http.client.HTTPConnection("127.0.0.1", vault.port, timeout=60)
        self.connection.putrequest("POST", "/v1/files")
        for name, value in (("Authorization", f"Bearer {key}"),
                            ("Content-Type", "application/pdf"), ("x-file-kind", "delivery"),
                            ("Content-Length", str(len(self.data)))):
            self.connection.putheader(name, value)
        self.connection.endheaders()
        self.connection.send(self.data[: len(self.data) // 2])
        blobs = vault.data_dir / "blobs"
        temporary = wait_until(lambda: [p.name for p in blobs.glob(".tmp-*")],
                               what="the held upload's temporary blob")
        self.file_id = temporary[0].removeprefix(".tmp-").split(".")[0]

    def finish(self) -> dict[str, Any]:
        self.connection.send(self.data[len(self.data) // 2:])
        response = self.connection.getresponse()
        body = json.loads(response.read())
        self.connection.close()
        assert response.status == 201, body
        return dict(body)


def run_in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    return thread, result


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def secantus_server(storage: Path, test_commands: bool = False) -> Iterator[str]:
    """A second SecantusDB of our own, standing for an external MongoDB: yields its URI.
    `test_commands`: its failpoints may be set (`configureFailPoint`)."""
    port = free_port()
    storage.mkdir(parents=True, exist_ok=True)
    log = open(storage.parent / f"{storage.name}.log", "ab")  # noqa: SIM115
    process = subprocess.Popen([sys.executable, "-m", "secantus", "--host", "127.0.0.1",
                                "--port", str(port), "--storage-path", str(storage),
                                "--log-level", "WARNING",
                                *(["--enable-test-commands"] if test_commands else [])],
                               cwd=ROOT, stdout=log,
                               stderr=subprocess.STDOUT)
    log.close()
    try:
        wait_until(lambda: _answers(port), what="secantus listening")
        yield f"mongodb://127.0.0.1:{port}/?directConnection=true&retryWrites=false"
    finally:
        process.terminate()
        process.wait(30)
