"""Keys and tokens are looked up by their hash only, and come from the OS CSPRNG (in process)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from vaultd import secrets as vault_secrets
from vaultd.errors import INVALID_KEY, NotFound, Unauthorized
from vaultd.services.accounts import api_keys
from vaultd.services.links.link_records import LinkRecords


class RecordingCollection:
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[Any] = []

    async def find_one(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append((args, kwargs))

    async def aggregate(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.calls.append((args, kwargs))
        return _nothing()


async def _nothing() -> AsyncIterator[Any]:
    return
    yield


class RecordingDb:
    def __init__(self) -> None:
        self.api_keys, self.links = RecordingCollection("api_keys"), RecordingCollection("links")

    def raw(self, name: str) -> RecordingCollection:
        return {"api_keys": self.api_keys, "links": self.links}[name]


async def test_keys_are_looked_up_by_their_hash_only() -> None:
    db, key = RecordingDb(), vault_secrets.new_api_key()
    with pytest.raises(Unauthorized, match=INVALID_KEY):
        await api_keys.authenticate(db, key)  # type: ignore[arg-type]
    (args, kwargs), = db.api_keys.calls
    assert args[0] == {"hash": hashlib.sha256(key.encode()).hexdigest()}
    assert key not in repr((args, kwargs))  # the secret itself never leaves for the database


async def test_tokens_are_looked_up_by_their_hash_only() -> None:
    db, token = RecordingDb(), vault_secrets.new_token()
    with pytest.raises(NotFound):
        await LinkRecords().open(db, token)  # type: ignore[arg-type]
    (args, kwargs), = db.links.calls  # one aggregate: the link by its hash, its file joined
    assert args[0][0] == {"$match": {"hash": hashlib.sha256(token.encode()).hexdigest()}}
    assert token not in repr((args, kwargs))


def test_keys_and_tokens_come_from_the_os_csprng_not_the_random_module() -> None:
    random.seed(7)
    first = [vault_secrets.new_token(), vault_secrets.new_api_key()]
    random.seed(7)
    second = [vault_secrets.new_token(), vault_secrets.new_api_key()]
    assert first[0] != second[0] and first[1] != second[1]
    tokens = {vault_secrets.new_token() for _ in range(2000)}
    assert len(tokens) == 2000
    assert all(vault_secrets.is_token(t) for t in tokens)
    # 2000 tokens x 43 characters use the whole base64url alphabet (a weak generator often not).
    assert len(set("".join(tokens))) == 64
