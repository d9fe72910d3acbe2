"""The embedded database matches plain filters by Python's own comparison (installed by
`vaultd.secantus_server`).

SecantusDB matches every document an index range gave against the whole filter again
(`query.matches`, through its general clause matcher: path resolution, type brackets, numeric
coercion), about a third of its time per document returned (a page of 200 access-log entries,
`fileId` and a range of `fileSeq`: docs/performance.md). A filter whose every clause is a plain
field (no dot, no operator) equal to a string (not one starting with `$`), in a list of such
strings (`$in`), or in a range of integers or of dates (`$gt`, `$gte`, `$lt`, `$lte`), on a
document whose value there is a string, an integer or a date, is decided here by Python's own
comparison, which is MongoDB's for those types (binary string equality without a collation;
integers compared as numbers; dates, both naive (UTC, as BSON decodes them) or both aware, as
instants). The access log's time windows are ranges of dates: a window of 200 entries cost
about 1 ms more than a range of their numbers before dates were matched here.

Anything else (another type on either side, an array, a missing field, a collation,
any other clause) goes to SecantusDB's matcher whole, so what a query returns or changes is the
same.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bson.int64 import Int64
from secantus import query, storage

# The range operators a plain clause on an integer or a date may hold, as Python's comparison.
RANGES: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda value, bound: value > bound, "$gte": lambda value, bound: value >= bound,
    "$lt": lambda value, bound: value < bound, "$lte": lambda value, bound: value <= bound}
UNDECIDED = None  # a clause `plain_match` leaves to SecantusDB's matcher


def _integer(value: Any) -> bool:
    return type(value) is int or type(value) is Int64  # not bool, not a float


def _date(value: Any) -> bool:
    return type(value) is datetime  # not a BSON date out of Python's range (`DatetimeMS`)


# Whether a bound compares with a date in Python as in MongoDB: a date, naive where the date is
# naive, aware where it is aware (a naive and an aware date do not compare in Python).
def _naive_date(bound: Any) -> bool:
    return _date(bound) and bound.tzinfo is None


def _aware_date(bound: Any) -> bool:
    return _date(bound) and bound.tzinfo is not None


def _bounds_for(value: Any) -> Callable[[Any], bool] | None:
    """What a range's bounds must be to compare with `value` (an integer or a date) as MongoDB
    compares; None for a value of another type."""
    if _integer(value):
        return _integer
    if _date(value):
        return _naive_date if value.tzinfo is None else _aware_date
    return None


def _plain_clause(doc: Any, key: Any, condition: Any) -> bool | None:
    """Whether `doc` meets one clause that is a plain field equal to a string, in a list of
    strings (`$in`) or in a range of integers or of dates, where the document's value there is
    of that type; UNDECIDED otherwise."""
    if type(key) is not str or not key or key[0] == "$" or "." in key:
        return UNDECIDED
    value = doc.get(key, UNDECIDED)
    if type(condition) is str:  # (one like "$$NOW" is left to SecantusDB, literal or not)
        return value == condition if type(value) is str and condition[:1] != "$" else UNDECIDED
    if type(condition) is not dict or not condition:
        return UNDECIDED
    if type(value) is str:
        return _among_strings(value, condition)
    comparable = _bounds_for(value)
    return UNDECIDED if comparable is None else _in_range(value, condition, comparable)


def _among_strings(value: str, condition: dict[str, Any]) -> bool | None:
    """`{$in: [strings]}` (a page's links' stats by their ids), else UNDECIDED."""
    among = condition.get("$in")
    if len(condition) != 1 or type(among) is not list or not all(
            type(other) is str and other[:1] != "$" for other in among):
        return UNDECIDED
    return value in among


def _in_range(value: Any, condition: dict[str, Any],
              comparable: Callable[[Any], bool]) -> bool | None:
    """Range operators whose every bound is `comparable` with `value`, else UNDECIDED."""
    met = True
    for operator, bound in condition.items():
        compare = RANGES.get(operator)
        if compare is None or not comparable(bound):
            return UNDECIDED
        met = met and compare(value, bound)
    return met


def plain_match(doc: Any, filter: Any) -> bool | None:
    """`doc` against a filter of plain clauses only (`_plain_clause`); UNDECIDED where one
    clause is not (the whole filter then goes to SecantusDB's matcher, errors and all)."""
    if type(filter) is not dict or not filter or type(doc) is not dict:
        return UNDECIDED
    met = True
    for key, condition in filter.items():
        clause = _plain_clause(doc, key, condition)
        if clause is UNDECIDED:
            return UNDECIDED
        met = met and clause
    return met


def plain_first(general: Callable[..., bool]) -> Callable[..., bool]:
    @functools.wraps(general)
    def matches(doc: Any, filter: Any, *, vars: Any = None, collation: Any = None) -> bool:
        # `vars` (SecantusDB passes `$$NOW` always) only mean something to `$expr`: never plain.
        if collation is None:
            met = plain_match(doc, filter)
            if met is not UNDECIDED:
                return met
        return general(doc, filter, vars=vars, collation=collation)

    return matches


def install_plain_matching() -> None:
    """SecantusDB's storage matches each candidate through `storage.matches` (its name for
    `query.matches`): plain filters are decided first (`plain_match`)."""
    storage.matches = plain_first(query.matches)
