"""The checks a page of an API link makes while it renders: the caller's key, then the link.

Such a page is served only if the key is live and belongs to the link's account (else 401, or
404 for another account's link) and the link is live now (else 404). The key is judged first:
a bad key is a 401 whatever else is wrong.

When the link was taken from the records kept for a second, both are read in one `aggregate`
with `$unionWith` (MongoDB 4.4 or later) rather than two `find`s: on the embedded database that
saves the driver and the server about 0.9 ms of CPU a page (bench/page-path.md).
"""

from __future__ import annotations

import time
from typing import cast

from vaultd.db import Db, RawDoc
from vaultd.errors import INVALID_KEY, NotFound, Unauthorized
from vaultd.records import ApiKeyDoc, LinkDoc
from vaultd.secrets import digest, is_api_key
from vaultd.services import api_keys, links
from vaultd.services.links import LINK_NOT_FOUND, OpenLink

_KEY, _LINK = "key", "link"  # which collection a document of the combined read came from


async def check_key(db: Db, api_key: str, opened: OpenLink | None) -> None:
    """The key alone: live, and the owner of `opened` when a link was found."""
    _judge_key(await api_keys.key_owner(db, api_key), opened)


async def check_key_and_confirm(db: Db, api_key: str, kept: OpenLink) -> OpenLink:
    """The key (as `check_key`), then `kept` confirmed live as `links.confirm` does."""
    if not is_api_key(api_key):
        raise Unauthorized(INVALID_KEY)  # nothing to look up
    read_at = time.monotonic()
    key, link = await _read_key_and_link(db, digest(api_key), kept.link["_id"])
    _judge_key(api_keys.live_owner(key), kept)
    return links.confirmed(kept, link, read_at)


def _judge_key(owner: str | None, opened: OpenLink | None) -> None:
    if owner is None:
        raise Unauthorized(INVALID_KEY)
    if opened is not None and owner != opened.account.id:
        raise NotFound(LINK_NOT_FOUND)


async def _read_key_and_link(
    db: Db, key_hash: str, link_id: str
) -> tuple[ApiKeyDoc | None, LinkDoc | None]:
    """(the key's record, the link's liveness fields), each None where no document matched."""
    pipeline: list[RawDoc] = [
        {"$match": {"_id": link_id}},
        {"$project": {**links.LIVENESS_FIELDS, "of": {"$literal": _LINK}}},
        {"$unionWith": {"coll": db.api_keys.name, "pipeline": [
            {"$match": {"hash": key_hash}},
            {"$project": {**api_keys.KEY_CHECK_FIELDS, "of": {"$literal": _KEY}}},
        ]}},
    ]
    found: dict[str, RawDoc] = {}
    async for doc in await db.raw(db.links.name).aggregate(pipeline):
        found[doc.pop("of")] = doc
    # The projections above are subsets of these records: the readers use only those fields.
    return (cast("ApiKeyDoc | None", found.get(_KEY)), cast("LinkDoc | None", found.get(_LINK)))
