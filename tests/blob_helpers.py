"""Helpers shared by the blob-format tests (their fixtures are in conftest.py)."""

from __future__ import annotations

import random
from typing import Any

from vaultd.crypto.blob_format import (
    BlobEncryptor,
    RangeReader,
    iter_plaintext_async,
    open_verified_async,
)


def pattern(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


def encrypt(plaintext: bytes, key: bytes, ctx: bytes, piece: int = 10_007) -> bytes:
    encryptor = BlobEncryptor(key, ctx)
    out = [encryptor.update(plaintext[i:i + piece]) for i in range(0, len(plaintext), piece)]
    out.append(encryptor.finalize())
    assert encryptor.plaintext_size == len(plaintext)
    return b"".join(out)


def reader_for(blob: bytes, key: bytes, ctx: bytes, size: int, **kw: Any) -> RangeReader:
    return RangeReader(lambda offset, length: blob[offset:offset + length], len(blob), key, ctx,
                       size, **kw)


def read_range_over(blob: bytes, log: list[tuple[int, int]] | None = None) -> Any:
    async def read_range(offset: int, length: int) -> bytes:
        if log is not None:
            log.append((offset, length))
        return blob[offset:offset + length]
    return read_range


async def stream_all(blob: bytes, key: bytes, ctx: bytes, size: int, **kw: Any) -> bytes:
    read_range = read_range_over(blob)
    opener = await open_verified_async(read_range, len(blob), key, ctx, size)
    return b"".join([piece async for piece in iter_plaintext_async(read_range, opener, **kw)])


def flip(blob: bytes, position: int) -> bytes:
    return blob[:position] + bytes([blob[position] ^ 0x01]) + blob[position + 1:]
