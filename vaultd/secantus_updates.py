"""The embedded database's updates write only the index entries that change (installed by
`vaultd.secantus_server`).

SecantusDB updates a document by removing every index entry of the old document and
writing every entry of the new one, whichever fields changed: a link marked revoked rewrote the
entries of all its 12 indexes (the unique `hash`'s claim included) where 7 hold a field the
marking sets. In an update (its two paths, `_update_chunk` and `_update_matching_single_txn`),
the removal of the old document's entries now waits for the write of the new one's, and both
are done for the indexes whose entries differ only: an index's entries are its key variants
where the document is within its partial filter, so equal variants are the same entries, and
removing then writing them again changes nothing. Geo indexes are always rewritten. A removal
with no write after it (a capped collection's trim) is done before the next, or at the
update's end.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any

from secantus import storage

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


def install_index_diffs() -> None:
    engine = storage.Storage
    remove, write = engine._delete_index_entries, engine._write_index_entries
    engine._delete_index_entries = _deferred_removal(remove)
    engine._write_index_entries = _changed_entries_only(remove, write)
    for name in ("_update_chunk", "_update_matching_single_txn"):
        setattr(engine, name, _an_update(getattr(engine, name), remove))
