"""The database commands a piece of work sends, counted by the database itself.

The embedded SecantusDB keeps mongod's `top` counters: per collection and kind (`queries` is a
`find`, `commands` an `aggregate`, `insert`, `update`...), how many commands it ran. Two
snapshots around a request tell exactly what the request made it do, with no listener in the
server. The `top` command itself is counted nowhere (it names no collection).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from pymongo import MongoClient

from vaultd.embedded_db import running_address

if TYPE_CHECKING:
    from tests.vault_process import VaultProcess

KINDS = ("queries", "getmore", "insert", "update", "remove", "commands")


class CommandCounter:
    """`top` snapshots of a running vaultd's database: its embedded one (`<data_dir>/db`), or
    its own database on the test worker's shared server (tests.worker_database)."""

    def __init__(self, uri: str, database: str = "vaultd") -> None:
        self.client: MongoClient[dict[str, Any]] = MongoClient(uri)
        self.database = database

    @classmethod
    def of(cls, storage: Any) -> CommandCounter:
        uri = running_address(storage)
        assert uri, "vaultd's embedded database is not running"
        return cls(uri)

    @classmethod
    def of_vault(cls, vault: VaultProcess) -> CommandCounter:
        uri = vault.env.get("VAULTD_MONGODB_URI")
        if uri is None:
            return cls.of(vault.data_dir / "db")
        return cls(uri, vault.env.get("VAULTD_MONGODB_DATABASE", "vaultd"))

    def snapshot(self) -> Counter[str]:
        """Commands run so far, by "<collection> <kind>" (e.g. "links commands")."""
        totals = self.client.admin.command({"top": 1})["totals"]
        prefix = f"{self.database}."  # the server's other databases are other vaultd's
        counts: Counter[str] = Counter()
        for namespace, sections in totals.items():
            if namespace.startswith(prefix):
                for kind in KINDS:
                    counts[f"{namespace[len(prefix):]} {kind}"] += sections[kind]["count"]
        return +counts  # zeros dropped

    def close(self) -> None:
        self.client.close()


def sent(before: Counter[str], after: Counter[str], collections: set[str]) -> Counter[str]:
    """The commands run between two snapshots on `collections` (the request's own: the
    server's background work, heartbeats and analytics flushes, writes elsewhere)."""
    return +Counter({key: after[key] - before[key] for key in after
                     if key.split(" ")[0] in collections})


@pytest.fixture
def counter(vault: VaultProcess) -> Iterator[CommandCounter]:
    """A counter of the module's `vault`'s database (a module imports the fixture by name)."""
    counting = CommandCounter.of_vault(vault)
    try:
        yield counting
    finally:
        counting.close()
