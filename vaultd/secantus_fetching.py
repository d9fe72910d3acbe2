"""The embedded database walks an index range and fetches its documents without the WiredTiger
binding's generic cursor methods (installed by `vaultd.secantus_server`).

A `find` of a page of 200 access-log entries walks 201 index entries and fetches 201 documents.
SecantusDB does both through the binding's generic methods:
- each index entry's `get_key` unpacks its four columns, three strings decoded only to be
  compared with the index's database, collection and name;
- each document's `set_key` and `get_value` go through the format string and the binding's
  checks for JSON, column and version cursors.

Here the same walks read the raw bytes:
- an entry belongs to the index when its key starts with the packed (database, collection,
  name), packed once per walk. `S` columns end at their NUL, so this prefix is exactly "the three
  columns are equal". The entry is the bytes after the prefix: a last `u` column carries no
  length.
- a document's key is the packed (database, collection), once per fetch, and the RecordId's
  integer encoding. Its value, a single `u` column, is the bytes themselves.

The database's CPU for the `find` of a file's page (201 entries) went from 2.56 to 2.2 ms
(`python -m bench.log_pages`, docs/performance.md).

Each function takes the steps of a SecantusDB method (`Storage._range_scan_index` and
`_scan_index_for_id_keys`, one walk with a verdict each; `_docs_by_recordids`) and reads the
bytes differently. They give the same entries and documents in the same order
(`tests/test_secantus_fetching.py` compares them with SecantusDB's methods on a random store).
Other tables' formats, and names holding a NUL (which packing would cut), go to SecantusDB's
methods. So does any SecantusDB whose versions of these methods differ from the ones mirrored
here (`MIRRORED`: the SHA-256 of each one's source); `install` then leaves the class as it is.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from typing import Any

import bson
import wiredtiger.packing
from secantus import storage

from vaultd import secantus_packing

# The source of each SecantusDB method this module mirrors, as SecantusDB 0.7.0b3 has it.
MIRRORED = {
    "_range_scan_index": "7bea749e937d509f920b0cdf45408fb56b68071e05272b5855c32a4b14d704f4",
    "_scan_index_for_id_keys": "c7d37de890ff8cbd4728e9206ac97b8f1daaa00ce0f8fd6c9957cd081d805cfc",
    "_docs_by_recordids": "c4a4d5d6750a11b299c737ce23b7adfd4625bbb114fecf94681642f3825d6af1",
}
ENTRY_KEY, DOCUMENT_KEY, DOCUMENT_VALUE = "SSSu", "SSq", "u"
_pack = wiredtiger.packing.pack
_pack_int = secantus_packing.pack_int
_Method = Callable[..., Any]
_ORIGINALS: dict[str, _Method] = {name: getattr(storage.Storage, name) for name in MIRRORED}


def source_digest(method: _Method) -> str:
    return hashlib.sha256(inspect.getsource(method).encode()).hexdigest()


def mirrored() -> bool:
    """Whether the installed SecantusDB's methods are the ones this module mirrors."""
    try:
        return all(source_digest(_ORIGINALS[name]) == digest for name, digest in MIRRORED.items())
    except (OSError, TypeError):  # no source to compare: not known to be the same
        return False


def install() -> bool:
    if not mirrored():
        return False
    for name, method in (("_range_scan_index", range_scan_index),
                         ("_scan_index_for_id_keys", scan_index_for_id_keys),
                         ("_docs_by_recordids", docs_by_recordids)):
        setattr(storage.Storage, name, method)
    return True


def _plain_names(*names: str) -> bool:
    return not any("\0" in name for name in names)


TAKE, SKIP, STOP = 0, 1, 2  # a walk's verdicts on an entry


def _walk(cursor: Any, db: str, coll: str, name: str, seed: bytes,
          verdict: Callable[[bytes], int]) -> list[int]:
    """SecantusDB's walk of an index: from the first entry at or after `seed`, each entry's
    RecordId while the entry is the index's and `verdict` on its escaped key does not STOP
    (none where it says SKIP, or where the entry holds none)."""
    cursor.set_key(db, coll, name, seed)
    found = cursor.search_near()
    if found == storage.wt.WT_NOTFOUND or (found < 0 and cursor.next() != 0):
        return []
    get_key, step = cursor._get_key, cursor.next
    head = _pack("SSS", db, coll, name)
    skip = len(head)
    out: list[int] = []
    while True:
        key = bytes(get_key())
        if not key.startswith(head):
            break
        row_esc, row_id = storage._unpack_entry(key[skip:])
        judged = verdict(row_esc)
        if judged == STOP:
            break
        if judged == TAKE and row_id is not None:
            out.append(row_id)
        if step() != 0:
            break
    return out


class _Range:
    """`_range_scan_index`'s bounds, escaped, and its verdict on each entry's key."""

    def __init__(self, lower: bytes | None, lower_inclusive: bool, upper: bytes | None,
                 upper_inclusive: bool, prefix: bytes | None) -> None:
        escape: Callable[[bytes], bytes] = storage._escape_kb
        self.prefix = escape(prefix) if prefix is not None else None
        self.lower = escape(lower) if lower is not None else None
        self.upper = escape(upper) if upper is not None else None
        self.lower_inclusive, self.upper_inclusive = lower_inclusive, upper_inclusive

    def seed(self) -> bytes:
        if self.lower is not None:
            return self.lower + bytes(storage._ENTRY_SEP)
        return self.prefix if self.prefix is not None else b""

    def verdict(self, row_esc: bytes) -> int:
        if self.prefix is not None and not row_esc.startswith(self.prefix):
            return STOP
        if self.lower is not None and not self.lower_inclusive and row_esc == self.lower:
            return SKIP
        if self.upper is not None:
            if self.upper_inclusive:
                if row_esc > self.upper:
                    return STOP
            elif row_esc >= self.upper:
                return STOP
        return TAKE


def range_scan_index(self: Any, db: str, coll: str, name: str, lower: bytes | None,
                     lower_inclusive: bool, upper: bytes | None, upper_inclusive: bool, *,
                     prefix: bytes | None = None) -> list[int]:
    """`Storage._range_scan_index`."""
    cursor = self._cursor(storage._IDX_ENTRIES_TABLE)
    if cursor.key_format != ENTRY_KEY or not _plain_names(db, coll, name):
        return _ORIGINALS["_range_scan_index"](  # type: ignore[no-any-return]
            self, db, coll, name, lower, lower_inclusive, upper, upper_inclusive, prefix=prefix)
    bounds = _Range(lower, lower_inclusive, upper, upper_inclusive, prefix)
    return _walk(cursor, db, coll, name, bounds.seed(), bounds.verdict)


def scan_index_for_id_keys(self: Any, db: str, coll: str, name: str, kb: bytes, *,
                           prefix: bool = False) -> list[int]:
    """`Storage._scan_index_for_id_keys`."""
    cursor = self._cursor(storage._IDX_ENTRIES_TABLE)
    if cursor.key_format != ENTRY_KEY or not _plain_names(db, coll, name):
        return _ORIGINALS["_scan_index_for_id_keys"](  # type: ignore[no-any-return]
            self, db, coll, name, kb, prefix=prefix)
    esc_kb: bytes = storage._escape_kb(kb)

    def verdict(row_esc: bytes) -> int:
        return TAKE if (row_esc.startswith(esc_kb) if prefix else row_esc == esc_kb) else STOP

    seed = esc_kb if prefix else esc_kb + bytes(storage._ENTRY_SEP)
    return _walk(cursor, db, coll, name, seed, verdict)


def docs_by_recordids(self: Any, db: str, coll: str, recordids: list[int]
                      ) -> list[dict[str, Any]]:
    """`Storage._docs_by_recordids`."""
    if not recordids:
        return []
    cursor = self._cursor_optional(storage._doc_table_for(db, coll))
    if cursor is None:
        return []
    if (cursor.key_format != DOCUMENT_KEY or cursor.value_format != DOCUMENT_VALUE
            or not _plain_names(db, coll)):
        return _ORIGINALS["_docs_by_recordids"](self, db, coll,  # type: ignore[no-any-return]
                                                recordids)
    head = _pack("SS", db, coll)
    reset, set_key, search, value = cursor.reset, cursor._set_key, cursor.search, cursor._get_value
    unframe = storage._unframe_doc_value
    raw: list[bytes] = []
    for recordid in dict.fromkeys(recordids):
        reset()
        # Kept on the cursor while it is positioned, as the binding's `set_key` keeps it.
        cursor._key = key = head + _pack_int(recordid)
        set_key(key)
        if search() == 0:
            raw.append(unframe(bytes(value()))[1])
    return [bson.decode(blob) for blob in raw]
