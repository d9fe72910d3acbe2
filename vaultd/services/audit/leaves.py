"""The canonical encoding of a log entry as a Merkle leaf (docs/audit.md, "The leaf").

A leaf is the UTF-8 bytes of one JSON object, keys sorted, no whitespace, every non-ASCII
character escaped (`\\uXXXX`), integers only:

    {"account":"<account id>","entry":{...},"id":"<entry id>","type":"access"|"activity","v":1}

`entry` is what the source record says, times as ISO 8601 UTC with milliseconds and `Z`:
for `access`, the fields of the access log as the API shows them (`access_log.entry_json`);
for `activity`, the activity record without `_id`, `accountId`, the log fence's mark and its
numbers (`seq`, `actionSeq`). Any verifier re-encodes an exported entry the same way, so one
changed byte changes the leaf hash.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from vaultd.records import AccessLogDoc
from vaultd.records.audit import ActivitySourceDoc, SourceKind
from vaultd.services.common import log_fence
from vaultd.services.common.access_log import entry_json
from vaultd.timefmt import iso_utc

VERSION = 1
# An activity leaf holds the event as recorded, but for these: its id and account are the
# leaf's own fields, and the log fence's mark and the event's numbers in its account and in
# its action (the reading orders: events written before numbers existed get theirs later) are
# storage.
NOT_IN_ENTRY = ("_id", "accountId", log_fence.FENCED, "seq", "actionSeq")


def plain(value: Any) -> Any:
    """JSON-ready: times as ISO strings, everything else as JSON has it."""
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def access_entry(doc: AccessLogDoc) -> dict[str, Any]:
    return plain(entry_json(doc))  # type: ignore[no-any-return]


def activity_entry(doc: ActivitySourceDoc) -> dict[str, Any]:
    rest = {key: value for key, value in doc.items() if key not in NOT_IN_ENTRY}
    return plain(rest)  # type: ignore[no-any-return]


def source_key(kind: SourceKind, entry_id: str) -> str:
    return f"{kind}:{entry_id}"


def encode(kind: SourceKind, entry_id: str, account_id: str, entry: dict[str, Any]) -> bytes:
    body = {"account": account_id, "entry": entry, "id": entry_id, "type": kind, "v": VERSION}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
