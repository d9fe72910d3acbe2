"""The indexes each domain declares beside its services (`vaultd/services/<domain>/db_indexes.py`),
joined by `vaultd.db_indexes` and created on a real embedded database: exactly those, and exactly
the ones vaultd created before the declarations moved into the domains; an index declared twice
or on a collection vaultd does not have is refused by name."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.embedded_database import running_database, vault_db
from vaultd import embedded_db
from vaultd.db_indexes import DOMAINS, IndexDeclarationError, declared_indexes
from vaultd.index_spec import Index, index

pytestmark = pytest.mark.slow  # starts its own database server

SERVICES = Path(__file__).resolve().parent.parent / "vaultd" / "services"
Created = set[tuple[str, str]]  # (collection and keys, options as JSON)

# What `ensure_indexes` made before each domain declared its own, each collection's `_id` index
# left out: (collection and keys, options as JSON, with the name when it is not the default).
BEFORE_THE_SPLIT: tuple[tuple[str, str], ...] = (
    ('access_log (_id, at)', '{}'),
    ('access_log (accountId, action, -at)', '{}'),
    ('access_log (accountId, -at)', '{}'),
    ('access_log (accountId, renderId)',
     '{"name": "accountId_renderId_unique", "partialFilterExpression": {"action": '
     '"page", "renderId": {"$exists": true}}, "unique": true}'),
    ('access_log (at)', '{}'),
    ('access_log (fileId, action, -at)', '{}'),
    ('access_log (fileId, -at)', '{}'),
    ('access_log (accountId, fileId, action, page, -at)', '{}'),
    ('access_log (roomId, action, -at)', '{"sparse": true}'),
    ('access_log (roomId, -at)', '{"sparse": true}'),
    ('access_log (fileId, fileSeq)', '{}'),
    ('access_log (accountId, accountSeq)', '{}'),
    ('access_log (roomId, roomSeq)', '{"sparse": true}'),
    ('access_log (fileId, action, fileActionSeq)',
     '{"partialFilterExpression": {"fileActionSeq": {"$gte": -4611686018427387904}}}'),
    ('access_log (accountId, action, accountActionSeq)',
     '{"partialFilterExpression": {"accountActionSeq": {"$gte": -4611686018427387904}}}'),
    ('access_log (roomId, action, roomActionSeq)',
     '{"partialFilterExpression": {"roomActionSeq": {"$gte": -4611686018427387904}}}'),
    ('accounts (_id, linkCount.sweptAt)', '{}'),
    ('activity (_id, at)', '{}'),
    ('activity (accountId, action, -at)', '{}'),
    ('activity (accountId, action, actionSeq)', '{}'),
    ('activity (accountId, -at, -_id)', '{}'),
    ('activity (accountId, seq)', '{}'),
    ('activity (at)', '{}'),
    ('agreements (_id, accountId)', '{}'),
    ('agreements (accountId, agreementId, -version)', '{}'),
    ('api_keys (_id, accountId)', '{}'),
    ('api_keys (accountId)', '{}'),
    ('api_keys (accountId, revokedAt)', '{}'),
    ('api_keys (hash)', '{"unique": true}'),
    ('audit_checkpoints (accountId, size)', '{}'),
    ('audit_checkpoints (copyPending)', '{"sparse": true}'),
    ('audit_pieces (keys)', '{}'),
    ('files (_id, accountId, state)', '{}'),
    ('files (_id, linkCount.sweptAt)', '{}'),
    ('files (_id, state)', '{}'),
    ('files (accountId, -createdAt)', '{}'),
    ('files (accountId, state, -createdAt)', '{}'),
    ('files (accountId, state, -seq)', '{}'),
    ('files (state)', '{}'),
    ('gate_counters (expiresAt)', '{"expireAfterSeconds": 0}'),
    ('link_stats (_id, totalSeconds)', '{}'),
    ('link_stats (completeAnnounced)', '{}'),
    ('link_stats (fileId)', '{}'),
    ('link_stats (fileId, _id)', '{}'),
    ('link_stats (openAnnounced)', '{}'),
    ('link_stats (roomId)', '{"sparse": true}'),
    ('links (_id, fileId)', '{}'),
    ('links (accountId, expiresAt)', '{}'),
    ('links (accountId, shard, expiresAt)', '{}'),
    ('links (fileId, expiresAt)', '{}'),
    ('links (fileId, listed, expiresAt)', '{}'),
    ('links (fileId, listed, seq)', '{}'),
    ('links (fileId, listed, shard, expiresAt)', '{}'),
    ('links (fileId, revoked)', '{}'),
    ('links (fileId, revoked, _id)', '{}'),
    ('links (fileId, revoked, expiresAt)', '{}'),
    ('links (fileId, -seq)', '{}'),
    ('links (fileId, shard, expiresAt)', '{}'),
    ('links (hash)', '{"unique": true}'),
    ('links (revoked, _id)', '{}'),
    ('member_sessions (email, seq)', '{}'),
    ('member_sessions (email, publicId)', '{}'),
    ('member_sessions (expiresAt)', '{"expireAfterSeconds": 0}'),
    ('members (accountId, email)', '{"unique": true}'),
    ('members (email)', '{}'),
    ('number_counters (_id, seq)', '{}'),
    ('page_prints (_id, accountId)', '{}'),
    ('page_prints (accountId, bands)', '{}'),
    ('rate_limits (expiresAt)', '{"expireAfterSeconds": 0}'),
    ('room_items (_id, roomId)', '{}'),
    ('room_items (fileId)', '{}'),
    ('room_items (roomId, parentId)', '{}'),
    ('room_items (roomId, _id)', '{}'),
    ('room_items (roomId, fileId)',
     '{"name": "roomId_fileId_unique", "partialFilterExpression": {"fileId": {"$ex'
     'ists": true}}, "unique": true}'),
    ('room_links (_id, roomId)', '{}'),
    ('room_links (accountId, expiresAt)', '{}'),
    ('room_links (accountId, shard, expiresAt)', '{}'),
    ('room_links (hash)', '{"unique": true}'),
    ('room_links (revoked, _id)', '{}'),
    ('room_links (roomId)', '{}'),
    ('room_links (roomId, expiresAt)', '{}'),
    ('room_links (roomId, revoked, _id)', '{}'),
    ('room_links (roomId, shard, expiresAt)', '{}'),
    ('rooms (_id, accountId)', '{}'),
    ('rooms (accountId, -createdAt)', '{}'),
    ('rooms (accountId, seq)', '{}'),
    ('rooms (state)', '{"sparse": true}'),
    ('sign_in_codes (expiresAt)', '{"expireAfterSeconds": 0}'),
    ('sign_in_links (expiresAt)', '{"expireAfterSeconds": 0}'),
    ('viewer_sessions (_id, linkId)', '{}'),
    ('viewer_sessions (expiresAt)', '{"expireAfterSeconds": 0}'),
    ('viewer_sessions (hash)', '{"unique": true}'),
    ('viewer_sessions (linkId, -createdAt)', '{}'),
    ('viewer_sessions (linkId, seq)', '{}'),
    ('webhook_deliveries (_id, at)', '{}'),
    ('webhook_deliveries (at)', '{}'),
    ('webhook_deliveries (endpointId, -at)', '{}'),
    ('webhook_deliveries (endpointId, seq)', '{}'),
    ('webhook_endpoints (_id, accountId)', '{}'),
    ('webhook_endpoints (accountId, slot)', '{"unique": true}'),
    ('webhook_outbox (_id, state)', '{}'),
    ('webhook_outbox (state, createdAt)', '{}'),
    ('webhook_outbox (state, finishedAt)', '{}'),
    ('webhook_outbox (state, nextAttemptAt)', '{}'),
)


@pytest.fixture(scope="module")
def created(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Created]:
    with running_database(tmp_path_factory.mktemp("indexes") / "db") as server:
        yield asyncio.run(_indexes_after_ensure(server))


async def _indexes_after_ensure(server: embedded_db.EmbeddedServer) -> Created:
    found: Created = set()
    async with vault_db(server) as db:  # runs `ensure_indexes`, as vaultd does at start-up
        for name in await db.database.list_collection_names():
            for index_name, spec in (await db.database[name].index_information()).items():
                keys = spec.pop("key")
                if index_name == "_id_":
                    continue
                options = {key: value for key, value in spec.items() if key not in ("v", "ns")}
                if index_name != "_".join(f"{field}_{way}" for field, way in keys):
                    options["name"] = index_name
                found.add((_described(name, keys), json.dumps(options, sort_keys=True)))
    return found


def _described(collection: str, keys: list[tuple[str, int]]) -> str:
    return f"{collection} ({', '.join(f if way == 1 else f'-{f}' for f, way in keys)})"


def _declared(one: Index) -> tuple[str, str]:
    options = {key: value for key, value in one.options}
    return one.described(), json.dumps(options, sort_keys=True)


def test_the_database_holds_the_indexes_it_held_before_the_domains_declared_them(
        created: Created) -> None:
    assert sorted(created - set(BEFORE_THE_SPLIT)) == []
    assert sorted(set(BEFORE_THE_SPLIT) - created) == []


def test_the_database_holds_exactly_the_declared_indexes(created: Created) -> None:
    declared = {_declared(one) for one in declared_indexes()}
    assert sorted(declared ^ created) == []
    assert len(declared_indexes()) == len(created)  # none declared twice with other options


def test_every_domain_that_declares_indexes_is_joined() -> None:
    modules = sorted(path.parent.name for path in SERVICES.glob("*/db_indexes.py"))
    assert modules == sorted(DOMAINS)
    assert all(DOMAINS[domain] for domain in DOMAINS)


def test_an_index_declared_twice_is_refused() -> None:
    twice = index("files", "accountId", "-createdAt")
    with pytest.raises(IndexDeclarationError) as by_two:
        declared_indexes({"files": [twice], "rooms": [twice]})
    assert str(by_two.value) == (
        "the index files (accountId, -createdAt) is declared twice (files and rooms)")
    with pytest.raises(IndexDeclarationError) as by_one:
        declared_indexes({"files": [twice, index("files", "accountId", "-createdAt",
                                                 unique=True)]})
    assert str(by_one.value) == (
        "the index files (accountId, -createdAt) is declared twice (files and files)")
    # The walks' pairs count: a domain may not declare one again.
    with pytest.raises(IndexDeclarationError, match=r"^the index links \(_id, fileId\) is "
                       r"declared twice \(links and db.WALKS\)$"):
        declared_indexes({"links": [index("links", "_id", "fileId")]})


def test_an_index_on_a_collection_vaultd_does_not_have_is_refused() -> None:
    with pytest.raises(IndexDeclarationError) as refused:
        declared_indexes({"files": [index("file", "accountId")]})
    assert str(refused.value) == "files declares an index on 'file', not a collection of vaultd"
    assert len(declared_indexes({"files": [index("files", "accountId")]})) > 1  # and the walks
