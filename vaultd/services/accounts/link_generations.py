"""A file's link generation: revoking all of a file's links is one write, whatever their number.

Each file record carries `linkGeneration` (absent: 0) and each link the generation of its file
when it was counted (`generation`, absent: 0). `POST /files/:id/revoke-views` raises the file's
generation in one conditional update (`services.links.revoke_jobs`); from then on every link of
an older generation is revoked, whatever its own record still says. The link records are
brought up to date afterwards, in bounded steps that survive a crash.

So whoever reads a link's liveness reads its file's generation with it, in the same round trip:
`FILE_STAGE` is an equality `$lookup` on the file's `_id` appended to the link's own read (a
`find_one` becomes a one-stage-longer `aggregate`, still one command), and `fold` turns what it
joined into the link's `revoked`. A link whose file is gone or being deleted is not live either.

The counts (`services.accounts.link_counts`) need one more fact: which of a revoked
generation's links left the counts at the revoke. Those live then did (the revoke took the
file's whole live count); those already expired did not, and leave by the expiry sweep as
before. Until the link records are brought up to date, the file keeps the revoke's time under
`linkRevokes.<generation>.at` (`counted_out` reads it); afterwards each link says so itself
(`countedOut`), and the entry is removed.

A file's deletion is read the same way: it takes the file's whole live count at its claim
(`deletingAt`), so its links live then are counted out until they are deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

# What a link's liveness read joins of its file.
FILE_FIELDS = {"linkGeneration": 1, "linkRevokes": 1, "state": 1, "deletingAt": 1}
JOINED = "_file"  # the field the join adds to the link's document, removed by `fold`
FILE_STAGE: dict[str, Any] = {
    "$lookup": {"from": "files", "localField": "fileId", "foreignField": "_id", "as": JOINED,
                "pipeline": [{"$project": {**FILE_FIELDS, "_id": 0}}]}}


def generation(doc: Mapping[str, Any], field: str = "linkGeneration") -> int:
    return int(doc.get(field) or 0)


def is_generation(value: int) -> int | dict[str, bool]:
    """A query's condition on a generation field: a record of generation 0 may lack the field
    (SecantusDB's index does not match 0, nor None, to a missing field)."""
    return value if value else {"$exists": False}


def killed(link: Mapping[str, Any], file: Mapping[str, Any] | None) -> bool:
    """Whether the link died with its file (gone, being deleted) or its file's revoke-all."""
    if file is None or file.get("state", "stored") != "stored":
        return True
    return generation(link, "generation") < generation(file)


def fold(doc: dict[str, Any]) -> dict[str, Any]:
    """A link read with `FILE_STAGE`, its `revoked` as its file's generation says."""
    files = doc.pop(JOINED, None)
    if files is not None and doc.get("revoked") is False and killed(doc, files[0] if files
                                                                      else None):
        doc["revoked"] = True
    return doc


def counted_out(link: Mapping[str, Any], file: Mapping[str, Any] | None) -> bool:
    """Whether the link already left the live counts (so an expiry sweep leaves it alone):
    revoked while live, one by one (`countedOut`) or by a revoke-all not yet written on it."""
    if link.get("countedOut"):
        return True
    if file is not None and file.get("state") == "deleting" and "deletingAt" in file:
        # The deletion took the file's whole live count (`services.files.deletions`): every
        # link live then left the counts with it.
        deleted_at: datetime = file["deletingAt"]
        if link["expiresAt"] > deleted_at:
            return True
    if file is None or generation(link, "generation") >= generation(file):
        return False
    revoke = (file.get("linkRevokes") or {}).get(str(generation(link, "generation")))
    if revoke is None:  # written on its links: those live at the revoke say `countedOut`
        return False
    revoked_at: datetime = revoke["at"]
    return bool(link["expiresAt"] > revoked_at)
