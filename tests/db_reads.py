"""How many documents a piece of work makes the database read, measured on the server's side.

The driver's command monitoring records every query the work sends (find, aggregate, count);
each is then replayed as an `explain("executionStats")` of its filter narrowed to the fields
of the index the server chose. That is what the embedded SecantusDB walks: it collects every
document in the index range and only then filters the rest, sorts, skips and limits (so the
limit does not count, and a residual field does not narrow the walk). A collection scan counts
the whole collection. MongoDB walks no more than that.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pymongo import monitoring

from vaultd.db import Db

QUERIES = ("find", "aggregate", "count")


@dataclass
class Query:
    collection: str
    filter: dict[str, Any]


@dataclass
class QueryRecorder(monitoring.CommandListener):
    """Records the queries sent while `recording` is on (pass it as the client's listener;
    `recorded()` turns it on for a block)."""

    recording: bool = False
    queries: list[Query] = field(default_factory=list)
    # The `getMore`s sent meanwhile: a query's documents past its first batch, a round trip each.
    more_batches: int = 0

    @contextmanager
    def recorded(self) -> Iterator[list[Query]]:
        """Records the queries sent inside the `with` block, and only those: the list it gives
        (`queries`) is emptied first, and recording stops however the block ends."""
        self.queries.clear()
        self.more_batches = 0
        self.recording = True
        try:
            yield self.queries
        finally:
            self.recording = False

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.recording and event.command_name in QUERIES:
            self.queries.append(_query(event.command_name, event.command))
        elif self.recording and event.command_name == "getMore":
            self.more_batches += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def _query(name: str, command: dict[str, Any]) -> Query:
    collection = str(command[name])
    if name == "aggregate":
        first = (command.get("pipeline") or [{}])[0]
        return Query(collection, dict(first.get("$match", {})))
    return Query(collection, dict(command.get("filter") or command.get("query") or {}))


def _index_keys(plan: Any) -> list[str] | None:
    """The key fields of the first IXSCAN in an explain's winning plan, None for a COLLSCAN."""
    for node in _nodes(plan):
        if node.get("stage") == "IXSCAN":
            return list(node.get("keyPattern") or {})
    return None


def _nodes(plan: Any) -> Iterator[dict[str, Any]]:
    if isinstance(plan, dict):
        yield plan
        for value in plan.values():
            yield from _nodes(value)
    elif isinstance(plan, list):
        for value in plan:
            yield from _nodes(value)


async def examined(db: Db, query: Query) -> int:
    """Documents the server walks for `query` (see the module's docstring)."""
    plan = await db.database.command(
        "explain", {"find": query.collection, "filter": query.filter}, verbosity="queryPlanner")
    keys = _index_keys(plan["queryPlanner"]["winningPlan"])
    narrowed = query.filter if keys is None else {
        name: value for name, value in query.filter.items() if name in keys}
    stats = await db.database.command(
        "explain", {"find": query.collection, "filter": narrowed}, verbosity="executionStats")
    return int(stats["executionStats"]["totalDocsExamined"])


async def total_examined(db: Db, queries: list[Query]) -> int:
    return sum([await examined(db, query) for query in queries])
