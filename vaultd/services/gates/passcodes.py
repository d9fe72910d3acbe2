"""Passcodes are stored as scrypt hashes: slow and memory-hard, so a stolen database does not
give them away cheaply. Hashing runs in a thread: it takes tens of milliseconds by design."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets

# scrypt's recommended interactive cost (N=2^14, r=8: 16 MiB, ~50 ms).
N, R, P = 1 << 14, 8, 1
SCHEME = "scrypt"


def _scrypt(passcode: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(passcode.encode(), salt=salt, n=n, r=r, p=p, maxmem=64 << 20, dklen=32)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _hash_sync(passcode: str) -> str:
    salt = secrets.token_bytes(16)
    return f"{SCHEME}${N}${R}${P}${_b64(salt)}${_b64(_scrypt(passcode, salt, N, R, P))}"


def _matches_sync(passcode: str, stored: str) -> bool:
    scheme, n, r, p, salt, expected = stored.split("$")
    if scheme != SCHEME:
        return False
    actual = _scrypt(passcode, base64.b64decode(salt), int(n), int(r), int(p))
    return hmac.compare_digest(actual, base64.b64decode(expected))


async def hash_passcode(passcode: str) -> str:
    return await asyncio.to_thread(_hash_sync, passcode)


async def passcode_matches(passcode: str, stored: str) -> bool:
    return await asyncio.to_thread(_matches_sync, passcode, stored)
