"""SecantusDB as vaultd runs it (`python -m vaultd.secantus_server`, the arguments of
`python -m secantus`): its own server, with fixes to how it picks an index, reads its catalog,
updates and matches, made before it starts.

SecantusDB picks an index only for a filter whose top-level keys are all fields: any top-level
operator (`$and`, `$or`, `$expr`) sends the query to a scan of the whole collection. Its
`findAndModify` writes the document it found through `{_id: <found>, $and: [<query>]}`, so
every `find_one_and_update` vaultd sends (a counter's raise, a link's number, a claim) read
every document of its collection: 250-490 ms at 30,000 documents and 2.2-2.5 s at 100,000,
against about 1 ms for an `update` by `_id` (`tests/test_secantus_planner.py`). The fix
chooses the index from the filter's fields and the fields of its `$and`'s clauses, leaving the
other operators out of that choice. It can only widen the candidates an index gives, never
narrow them: SecantusDB matches every candidate against the whole filter afterwards (its
`matches()` pass, on the read and the write paths alike), so what a query returns or changes is
the same. A filter with `$text`, or with no field outside its operators, is planned as before.

A second fix: SecantusDB reads a collection's index catalog from WiredTiger (a cursor walk and a
BSON decode per index) three times for every document it inserts and about twenty times for an
update of five, 0.5-0.8 ms a read for the access log's or the links' indexes: most of an
insert's time and a third of a small update's. Within one command it now reads the catalog
once per collection, keeping each index's raw record and decoding it again for every caller, so
each gets a fresh copy exactly as before. The copy lives as long as the command on its thread
and is forgotten whenever the command changes the catalog (an index made, dropped or changed, a
collection dropped or renamed, an index marked multikey, a transaction ended); another command
cannot change this collection's catalog meanwhile, as SecantusDB runs a collection's writes and
its index changes under one lock. Reads outside a command (the TTL monitor's) read as before.

Updates that rewrite only the index entries that change (`vaultd.secantus_updates`), plain
filters matched by Python's own comparison (`vaultd.secantus_matching`), WiredTiger's keys
and values packed without parsing their format each time (`vaultd.secantus_packing`) and index
ranges walked and fetched from their raw bytes (`vaultd.secantus_fetching`) are installed here
too.

Every write's reply says how long the command took in the server (`vaultd.db_server_time`):
the clock of vaultd's background steps.

And the collector: a full (generation 2) pass of Python's garbage collector walks every object
the server holds, its modules' included, and stops every command meanwhile: 40-63 ms measured
in the server's process, a few times a minute under a revoke-all's marking. The objects made
by the imports live as long as the server: frozen before it starts (`vaultd.collector`), no
pass walks them again (a full pass then took about 1 ms).
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import bson
from secantus import server, storage
from secantus.cli import main

from vaultd import (
    collector,
    secantus_fetching,
    secantus_matching,
    secantus_packing,
    secantus_updates,
)
from vaultd.db_server_time import SERVER_MILLIS, TIMED_COMMANDS

# Top-level operators whose meaning is not "and this too": left to SecantusDB's own plan.
UNLIFTABLE = {"$text", "$where"}


def indexed_fields(query: dict[str, Any]) -> dict[str, Any] | None:
    """The fields of `query` an index may serve: its own and those of its `$and`'s clauses (a
    field named twice keeps its first clause), or None where there are none to use."""
    if not any(isinstance(key, str) and key.startswith("$") for key in query):
        return None
    if UNLIFTABLE & set(query):
        return None
    fields = {key: value for key, value in query.items() if not key.startswith("$")}
    clauses = query.get("$and")
    for clause in clauses if isinstance(clauses, list) else []:
        if not isinstance(clause, dict) or UNLIFTABLE & set(clause):
            continue
        lifted = indexed_fields(clause) or clause
        for key, value in lifted.items():
            if not key.startswith("$"):
                fields.setdefault(key, value)
    return fields or None


def _with_lifted_fields(lookup: Callable[..., Any]) -> Callable[..., Any]:
    def choose(self: Any, db: str, coll: str, query: dict[str, Any], **options: Any) -> Any:
        fields = indexed_fields(query) if isinstance(query, dict) else None
        return lookup(self, db, coll, query if fields is None else fields, **options)

    return choose


# Storage methods that write the index catalog: the command's copy is forgotten before and after.
CATALOG_WRITERS = ("create_index", "drop_index", "set_index_expiry", "set_index_options",
                   "_recover_pending_drops_locked", "drop_collection",
                   "drop_database", "rename_collection", "drop_all_indexes",
                   "commit_user_transaction", "abort_user_transaction")

_command = threading.local()  # `catalogs`: (db, collection) -> raw index records, in a command


def _forget_catalogs() -> None:
    catalogs = getattr(_command, "catalogs", None)
    if catalogs is not None:
        catalogs.clear()


def _within_command(dispatch: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(dispatch)
    def run(doc: Any, ctx: Any) -> Any:
        if getattr(_command, "catalogs", None) is not None:  # a command run by a command
            return dispatch(doc, ctx)
        _command.catalogs = {}
        try:
            return dispatch(doc, ctx)
        finally:
            _command.catalogs = None

    return run


def _raw_index_records(engine: Any, db: str, coll: str) -> list[tuple[str, bytes]]:
    """`Storage._iter_indexes`' walk, keeping each record's bytes."""
    records: list[tuple[str, bytes]] = []
    cursor = engine._cursor(storage._IDX_TABLE)
    cursor.set_key(db, coll, "")
    found = cursor.search_near()
    if found == storage.wt.WT_NOTFOUND or (found < 0 and cursor.next() != 0):
        return records
    while True:
        key = cursor.get_key()
        if key[0] != db or key[1] != coll:
            return records
        records.append((key[2], bytes(cursor.get_value())))
        if cursor.next() != 0:
            return records


def _read_once_per_command(iter_indexes: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(iter_indexes)
    def read(self: Any, db: str, coll: str) -> Iterator[tuple[str, Any, Any]]:
        catalogs = getattr(_command, "catalogs", None)
        if catalogs is None:
            return iter(iter_indexes(self, db, coll))
        records = catalogs.get((db, coll))
        if records is None:
            records = catalogs[(db, coll)] = _raw_index_records(self, db, coll)
        return _decoded(records)

    return read


def _decoded(records: list[tuple[str, bytes]]) -> Iterator[tuple[str, Any, Any]]:
    for name, raw in records:
        payload = bson.decode(raw)
        yield name, payload.get("key", {}), payload.get("options", {})


def _forgetting(write: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(write)
    def run(*args: Any, **kwargs: Any) -> Any:
        _forget_catalogs()
        try:
            return write(*args, **kwargs)
        finally:
            _forget_catalogs()

    return run


def _forgetting_new_multikeys(mark: Callable[..., Any]) -> Callable[..., Any]:
    """`_maybe_mark_multikey` runs for every document written and writes the catalog only when
    it flags an index; the names it returns grow exactly then."""
    @functools.wraps(mark)
    def run(self: Any, db: str, coll: str, doc: Any, indexes: Any, already: set[str]) -> Any:
        known = len(already)
        flagged = mark(self, db, coll, doc, indexes, already)
        if len(flagged) != known:
            _forget_catalogs()
        return flagged

    return run


def _timed(dispatch: Callable[..., Any]) -> Callable[..., Any]:
    """A write's reply carries the milliseconds it spent here (`vaultd.db_server_time`)."""
    @functools.wraps(dispatch)
    def run(doc: Any, ctx: Any) -> Any:
        started = time.perf_counter()
        reply = dispatch(doc, ctx)
        if isinstance(reply, dict) and next(iter(doc), None) in TIMED_COMMANDS:
            # A copy: a reply may be a dict the server keeps.
            reply = {**reply, SERVER_MILLIS: (time.perf_counter() - started) * 1000}
        return reply

    return run


def install() -> None:
    install_index_choice()
    install_catalog_reads()
    secantus_updates.install_index_diffs()
    secantus_matching.install_plain_matching()
    secantus_packing.install()
    secantus_fetching.install()
    server.dispatch = _timed(server.dispatch)


def install_index_choice() -> None:
    engine = storage.Storage
    engine._try_index_id_keys = _with_lifted_fields(engine._try_index_id_keys)


def install_catalog_reads() -> None:
    engine = storage.Storage
    engine._iter_indexes = _read_once_per_command(engine._iter_indexes)
    for name in CATALOG_WRITERS:
        setattr(engine, name, _forgetting(getattr(engine, name)))
    engine._maybe_mark_multikey = _forgetting_new_multikeys(engine._maybe_mark_multikey)
    storage._commit_batch_transaction = _forgetting(storage._commit_batch_transaction)
    server.dispatch = _within_command(server.dispatch)


if __name__ == "__main__":
    install()
    collector.settle()  # everything imported so far lives as long as the server
    sys.argv[0] = "secantus"
    raise SystemExit(main())
