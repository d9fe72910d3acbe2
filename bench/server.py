"""A real vaultd for the benchmarks: started on the embedded default, one account, raw HTTP.

The clients here use `http.client` on persistent connections rather than httpx: the benchmark
client shares the machine's two cores with the server, and the lighter it is the less it skews
the figures it reports.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.vault_process import VaultProcess

VIEWER_IP = "203.0.113.7"


@dataclass
class Response:
    status: int
    body: bytes
    seconds: float
    headers: dict[str, str]


class Client:
    """One keep-alive connection to vaultd with the account's API key (one per thread)."""

    def __init__(self, port: int, key: str, timeout: float = 120.0) -> None:
        self._port, self._timeout = port, timeout
        self._auth = {"Authorization": f"Bearer {key}"}
        self._conn = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self._port, timeout=self._timeout)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        return self.raw(method, "/v1" + path, body, headers)

    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> Response:
        """Any path of the server (`request` is under /v1), with the key's header too."""
        all_headers = {**self._auth, **(headers or {})}
        started = time.perf_counter()
        try:
            self._conn.request(method, path, body=body, headers=all_headers)
            reply = self._conn.getresponse()
            data = reply.read()
        except (http.client.HTTPException, OSError):
            self._conn.close()  # a dropped keep-alive connection: reconnect once and retry
            self._conn = self._connect()
            self._conn.request(method, path, body=body, headers=all_headers)
            reply = self._conn.getresponse()
            data = reply.read()
        elapsed = time.perf_counter() - started
        if reply.getheader("Connection", "").lower() == "close":
            self._conn.close()
            self._conn = self._connect()
        return Response(reply.status, data, elapsed, dict(reply.getheaders()))

    def json(self, method: str, path: str, body: Any = None) -> Any:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        reply = self.request(method, path, payload, headers)
        if reply.status >= 300:
            raise RuntimeError(f"{method} {path}: {reply.status} {reply.body[:200]!r}")
        return json.loads(reply.body) if reply.body else None

    def upload(self, data: bytes, name: str, kind: str = "source") -> Response:
        headers = {"Content-Type": "application/pdf", "x-file-name": quote(name, safe=""),
                   "x-file-kind": kind}
        return self.request("POST", "/files", data, headers)

    def page(self, token: str, number: int) -> Response:
        return self.request("GET", f"/views/{token}/pages/{number}",
                            headers={"x-viewer-ip": VIEWER_IP})

    def close(self) -> None:
        self._conn.close()


class Vault:
    """vaultd started exactly as a deployment would (no VAULTD_* overrides unless `env` names
    some: bench.office turns on upload.office), plus an account."""

    def __init__(self, work: Path, env: dict[str, str] | None = None) -> None:
        self.process = VaultProcess(work / "data", env=dict(env or {}))
        self.key = ""

    def start(self) -> Vault:
        self.process.start()
        _, self.key = self.process.new_account("Bench Corp", plan="business")
        return self

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def pid(self) -> int:
        assert self.process.process is not None
        return self.process.process.pid

    def client(self) -> Client:
        return Client(self.port, self.key)

    def store(self, client: Client, data: bytes, name: str, kind: str = "source") -> dict[str, Any]:
        reply = client.upload(data, name, kind)
        if reply.status != 201:
            raise RuntimeError(f"upload of {name} failed: {reply.status} {reply.body[:200]!r}")
        return json.loads(reply.body)  # type: ignore[no-any-return]

    def link(self, client: Client, file_id: str) -> str:
        body = {"fileId": file_id, "viewerEmail": "ann.lee@client.example",
                "viewerName": "Ann Lee", "ttlSeconds": 86400}
        return str(client.json("POST", "/views", body)["token"])

    def stop(self) -> None:
        self.process.stop()


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """Resident set size (or VmHWM, its peak) of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found for pid {pid}")


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+); False where the kernel refuses."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child_pids(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


def children(pid: int) -> dict[int, str]:
    """Direct children of `pid` with a short name: the embedded database, render workers."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) != pid:
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if "secantus" in command:
            found[int(entry.name)] = "database"
        elif "forkserver" in command:  # the render zygote: the workers are its children
            found.update({worker: "render workers" for worker in _child_pids(int(entry.name))})
        elif "multiprocessing" in command and "resource_tracker" not in command:
            found[int(entry.name)] = "render workers"
    return found
