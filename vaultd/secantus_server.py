"""SecantusDB as vaultd runs it (`python -m vaultd.secantus_server`, the arguments of
`python -m secantus`): its own server, with one fix to how it picks an index, made before it
starts.

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

A third: SecantusDB updates a document by removing every index entry of the old document and
writing every entry of the new one, whichever fields changed: a link marked revoked rewrote the
entries of all its 12 indexes (the unique `hash`'s claim included) where 7 hold a field the
marking sets. In an update (its two paths, `_update_chunk` and `_update_matching_single_txn`),
the removal of the old document's entries now waits for the write of the new one's, and both
are done for the indexes whose entries differ only: an index's entries are its key variants
where the document is within its partial filter, so equal variants are the same entries, and
removing then writing them again changes nothing. Geo indexes are always rewritten. A removal
with no write after it (a capped collection's trim) is done before the next, or at the
update's end.

And the collector: a full (generation 2) pass of Python's garbage collector walks every object
the server holds, its modules' included, and stops every command meanwhile: 40-63 ms measured
in the server's process, a few times a minute under a revoke-all's marking. The objects made
by the imports live as long as the server: frozen before it starts (`gc.freeze`), no pass
walks them again (a full pass then took about 1 ms).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import bson
from secantus import server, storage
from secantus.cli import main

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


_updating = threading.local()  # `pending`: a removal of one document's entries, in an update


def _entries(engine: Any, db: str, coll: str, doc: Any, index: tuple[str, Any, bool, bool],
             partials: dict[str, Any], options: dict[str, Any]) -> set[bytes] | None:
    """The keys `doc` has in `index` (None: a geo index, not compared)."""
    name, key_spec, sparse, _unique = index
    if storage._geo_type_of(key_spec) is not None:
        return None
    partial = partials.get(name)
    if partial is not None and not storage.matches(doc, partial):
        return set()
    collation = storage._parse_index_collation(options.get(name, {}).get("collation"))
    return {bytes(key) for key in
            storage._index_key_variants(doc, key_spec, sparse=sparse, collation=collation)}


def _changed(engine: Any, db: str, coll: str, old: Any, new: Any, indexes: list[Any],
             partials: dict[str, Any]) -> list[Any]:
    options = engine._index_options_map(db, coll)
    changed = []
    for index in indexes:
        before = _entries(engine, db, coll, old, index, partials, options)
        if before is None or before != _entries(engine, db, coll, new, index, partials, options):
            changed.append(index)
    return changed


def _flush(remove: Callable[..., Any]) -> None:
    pending = getattr(_updating, "pending", None)
    _updating.pending = None
    if pending is not None:
        engine, db, coll, doc, indexes, partials, recordid = pending
        remove(engine, db, coll, doc, indexes, partials, recordid=recordid)


def _deferred_removal(remove: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(remove)
    def run(self: Any, db: str, coll: str, doc: Any, indexes: Any, partials: Any = None, *,
            recordid: int) -> Any:
        if getattr(_updating, "depth", 0) == 0:
            return remove(self, db, coll, doc, indexes, partials, recordid=recordid)
        _flush(remove)
        _updating.pending = (self, db, coll, doc, indexes, partials, recordid)
        return None

    return run


def _changed_entries_only(remove: Callable[..., Any], write: Callable[..., Any]
                          ) -> Callable[..., Any]:
    @functools.wraps(write)
    def run(self: Any, db: str, coll: str, doc: Any, indexes: Any, partials: Any = None, *,
            recordid: int) -> Any:
        pending = getattr(_updating, "pending", None)
        if pending is None or pending[:3] != (self, db, coll) or pending[6] != recordid:
            _flush(remove)
            return write(self, db, coll, doc, indexes, partials, recordid=recordid)
        _updating.pending = None
        old, removed_from, partials_then = pending[3], pending[4], pending[5]
        if partials is None:
            partials = self._partial_filters(db, coll)
        try:
            same_indexes = removed_from == indexes and (partials_then in (None, partials))
            changed = _changed(self, db, coll, old, doc, indexes, partials) if same_indexes \
                else None
        except Exception:  # a key the write itself refuses: let it say so, as before
            changed = None
        if changed is None:
            remove(self, db, coll, old, removed_from, partials_then, recordid=recordid)
            return write(self, db, coll, doc, indexes, partials, recordid=recordid)
        remove(self, db, coll, old, changed, partials, recordid=recordid)
        return write(self, db, coll, doc, changed, partials, recordid=recordid)

    return run


def _an_update(method: Callable[..., Any], remove: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        outer = getattr(_updating, "depth", 0)
        _updating.depth = outer + 1
        try:
            result = method(*args, **kwargs)
            _flush(remove)
            return result
        except BaseException:
            with contextlib.suppress(Exception):  # the update's own failure is what it raises
                _flush(remove)
            raise
        finally:
            _updating.depth = outer

    return run


def install() -> None:
    install_index_choice()
    install_catalog_reads()
    install_index_diffs()


def install_index_diffs() -> None:
    engine = storage.Storage
    remove, write = engine._delete_index_entries, engine._write_index_entries
    engine._delete_index_entries = _deferred_removal(remove)
    engine._write_index_entries = _changed_entries_only(remove, write)
    for name in ("_update_chunk", "_update_matching_single_txn"):
        setattr(engine, name, _an_update(getattr(engine, name), remove))


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


def settle_collector() -> None:
    """Everything imported so far lives as long as the server: out of every later pass."""
    gc.collect()
    gc.freeze()


if __name__ == "__main__":
    install()
    settle_collector()
    sys.argv[0] = "secantus"
    raise SystemExit(main())
