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
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from secantus import storage
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


def install() -> None:
    engine = storage.Storage
    engine._try_index_id_keys = _with_lifted_fields(engine._try_index_id_keys)


if __name__ == "__main__":
    install()
    sys.argv[0] = "secantus"
    raise SystemExit(main())
