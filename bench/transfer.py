"""Uploads and downloads: speed, the server's memory under concurrent uploads, and the ceiling
set by the encryption itself on this machine."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

from bench.server import Client, Vault, reset_peak_rss, rss_kib
from vaultd.crypto.blob_format import (
    HEADER_SIZE,
    BlobEncryptor,
    ChunkOpener,
    blob_context,
    new_data_key,
)

UPLOAD_CHUNK = 64 * 1024  # what Tornado hands the upload handler at a time


@dataclass
class Memory:
    idle_kib: int
    peak_kib: int
    uploads_ok: int
    peak_from: str  # "VmHWM" (kernel's peak, reset first) or "sampled"

    @property
    def growth_mib(self) -> float:
        return (self.peak_kib - self.idle_kib) / 1024


@dataclass
class Ceiling:
    encrypt: list[float] = field(default_factory=list)  # MB/s
    decrypt: list[float] = field(default_factory=list)


def upload_speeds(vault: Vault, client: Client, data: bytes, rounds: int) -> list[float]:
    """MB/s (10^6 bytes) of whole uploads, from the first byte sent to the 201 answer.

    One upload first, untimed: a fresh server's first one also pays for thread pools and
    connections that a running server already has.
    """
    speeds = []
    for turn in range(-1, rounds):
        reply = client.upload(data, f"upload-{turn}.pdf")
        if reply.status != 201:
            raise RuntimeError(f"upload answered {reply.status}: {reply.body[:200]!r}")
        if turn >= 0:
            speeds.append(len(data) / reply.seconds / 1e6)
        client.request("DELETE", f"/files/{json.loads(reply.body)['id']}")
    return speeds


def concurrent_upload_memory(vault: Vault, data: bytes, count: int = 4) -> Memory:
    """The server process's RSS at rest, then its peak while `count` uploads run at once."""
    time.sleep(1.0)  # let the previous phase's garbage settle
    idle = rss_kib(vault.pid)
    use_hwm = reset_peak_rss(vault.pid)
    sampled = [idle]
    done = threading.Event()
    ids: list[str] = []

    def sample() -> None:
        while not done.is_set():
            sampled.append(rss_kib(vault.pid))
            time.sleep(0.005)

    def upload(turn: int) -> None:
        client = vault.client()
        reply = client.upload(data, f"concurrent-{turn}.pdf")
        if reply.status == 201:
            ids.append(json.loads(reply.body)["id"])
        client.close()

    sampler = threading.Thread(target=sample)
    sampler.start()
    workers = [threading.Thread(target=upload, args=(i,)) for i in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.set()
    sampler.join()
    peak = max(rss_kib(vault.pid, "VmHWM"), *sampled) if use_hwm else max(sampled)
    cleanup = vault.client()
    for file_id in ids:
        cleanup.request("DELETE", f"/files/{file_id}")
    cleanup.close()
    return Memory(idle, peak, len(ids), "VmHWM" if use_hwm else "sampled")


def download_speeds(client: Client, file_id: str, size: int, rounds: int) -> list[float]:
    speeds = []
    for _ in range(rounds):
        reply = client.request("GET", f"/files/{file_id}/download",
                               headers={"x-viewer-email": "ann.lee@client.example"})
        if reply.status != 200 or len(reply.body) != size:
            raise RuntimeError(f"download answered {reply.status} with {len(reply.body)} bytes")
        speeds.append(size / reply.seconds / 1e6)
    return speeds


def encryption_ceiling(data: bytes, rounds: int) -> Ceiling:
    """The blob format alone, in memory: encryption as uploads feed it (64 KiB pieces) and
    decryption as downloads run it (one chunk at a time)."""
    ceiling = Ceiling()
    context = blob_context("bench-account", "bench-file")
    for _ in range(rounds):
        key = new_data_key()
        started = time.perf_counter()
        encryptor = BlobEncryptor(key, context)
        sealed = [encryptor.update(data[i:i + UPLOAD_CHUNK])
                  for i in range(0, len(data), UPLOAD_CHUNK)]
        sealed.append(encryptor.finalize())
        ceiling.encrypt.append(len(data) / (time.perf_counter() - started) / 1e6)
        blob = b"".join(sealed)
        started = time.perf_counter()
        opener = ChunkOpener(key, context, blob[:HEADER_SIZE], len(data))
        for index in range(opener.n_chunks):
            offset, length = opener.chunk_span(index)
            opener.open_chunk(index, blob[offset:offset + length])
        ceiling.decrypt.append(len(data) / (time.perf_counter() - started) / 1e6)
    return ceiling
