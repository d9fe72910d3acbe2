"""How `bench.scale_shape_seeds` writes a shape: in batches, the big collections loaded with
their indexes built after the insert, into the shape's database while its vaultd is stopped.

SecantusDB keeps every index of a document up to date in the document's insert, and reads the
collection's index catalog again for each document it inserts (three times): with the access
log's twelve indexes an insert cost about 2 ms a document at a load average of 10 to 15 on the
2-core machine (400 to 500 a second: 10^6 log entries in 35 to 45 minutes). Built after the
insert, an index costs one walk of the collection and no catalog reads: the insert without
indexes and the twelve builds came to about half the time (docs/performance-records.md, *Seeding at
10^6*). The indexes are the same in the end: each is built again from the specification the
collection had (name, keys, options), and the loader checks that the collection's
`index_information` afterwards is what it was before.

Indexes are dropped only while vaultd is stopped (`stopped_vault`): its background rounds (the
audit sequencer numbers the log reading its `at` index every second) would walk a collection of
10^6 documents without them meanwhile, and SecantusDB's index build holds the collection for
its whole walk. The shape's embedded database is then started alone on the same store, as
`vault-admin` starts it when no vaultd runs, and stopped with the time its checkpoint needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from itertools import islice
from typing import Any, TypeVar

from pymongo import IndexModel

from bench.console import with_long_socket_timeout
from tests.vault_process import VaultProcess
from vaultd import embedded_db
from vaultd.db import Db, connect

BATCH = 2000  # documents per insert_many: each well under a second on the embedded database
# An insert of at least this many documents into one collection is loaded with the collection's
# indexes built after it (when the database is the stopped vaultd's: `Loader.bulk`); the access
# log, written whole and last, is loaded so at any size.
BULK_LOAD = 20_000
DATABASE = "vaultd"
STOP_SECONDS = 600.0  # the database's checkpoint of 10^6 documents and their indexes at stop
RESTART_SECONDS = 300.0
RESTART_ATTEMPTS = 5
# vaultd's message when its embedded database missed its start limit (`embedded_db.start`)
DB_START_LIMIT = "did not start within"
ID_INDEX = "_id_"

T = TypeVar("T")


class Loader:
    """Writes documents in batches; with `bulk`, an insert of `bulk_from` (BULK_LOAD) or more
    documents drops the collection's other indexes first and builds them again after it.
    `loaded` names each collection so loaded, with the documents inserted that way."""

    def __init__(self, *, bulk: bool) -> None:
        self.bulk = bulk
        self.loaded: dict[str, int] = {}

    async def insert(self, db: Db, name: str, docs: Iterable[dict[str, Any]], *,
                     bulk_from: int = BULK_LOAD) -> int:
        collection = db.raw(name)
        pending = iter(docs)
        head = list(islice(pending, max(bulk_from, 1)))
        if not self.bulk or len(head) < max(bulk_from, 1):
            return await _batched(collection, [head, pending])
        indexes = await collection.index_information()
        await collection.drop_indexes()
        written = await _batched(collection, [head, pending])
        for model in _models(indexes):
            await collection.create_indexes([model])  # one per command: each walks it all
        rebuilt = await collection.index_information()
        if rebuilt != indexes:
            raise RuntimeError(f"{name}'s indexes differ after the bulk load: "
                               f"{sorted(rebuilt)} against {sorted(indexes)}")
        self.loaded[name] = self.loaded.get(name, 0) + written
        return written


async def _batched(collection: Any, parts: list[Iterable[dict[str, Any]]]) -> int:
    written, batch = 0, []
    for part in parts:
        for doc in part:
            batch.append(doc)
            if len(batch) == BATCH:
                await collection.insert_many(batch, ordered=False)
                written, batch = written + len(batch), []
    if batch:
        await collection.insert_many(batch, ordered=False)
    return written + len(batch)


def _models(indexes: Mapping[str, Any]) -> list[IndexModel]:
    """Every index but `_id`'s as `index_information` described it: its name, keys and
    options (unique, sparse, a partial filter)."""
    return [IndexModel(spec["key"], name=name,
                       **{option: value for option, value in spec.items()
                          if option not in ("key", "v", "ns")})
            for name, spec in indexes.items() if name != ID_INDEX]


def stopped_vault(vault: VaultProcess, fill: Callable[[Db], Awaitable[T]]) -> T:
    """Runs `fill` on the vault's database with vaultd stopped (its embedded database started
    alone on the same store), then starts vaultd again."""
    vault.stop()
    server = embedded_db.start(vault.data_dir / "db", record_address=False)
    try:
        async def run() -> T:
            db = connect(with_long_socket_timeout(server.uri), DATABASE)
            try:
                return await fill(db)
            finally:
                await db.close()
        return asyncio.run(run())
    finally:
        server.stop(timeout=STOP_SECONDS)
        _restarted(vault)


def _restarted(vault: VaultProcess) -> None:
    """vaultd started again; again while its embedded database did not answer within
    vaultd's own start limit (30 s: at 10^6 records and a load average of 25, it did not),
    RESTART_ATTEMPTS at most: each start finds more of the store in the OS's cache."""
    for attempt in range(1, RESTART_ATTEMPTS + 1):
        try:
            vault.start(timeout=RESTART_SECONDS)
            return
        except RuntimeError as error:
            if DB_START_LIMIT not in str(error) or attempt == RESTART_ATTEMPTS:
                raise
            print(f"vaultd's database did not start in its limit ({attempt} of "
                  f"{RESTART_ATTEMPTS}): started again", flush=True)
