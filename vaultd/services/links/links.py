"""View links: time-limited, for one named viewer, identified by a secret token.

Only the token's SHA-256 is stored. Whether a link is live is read from the database on every
request, never from an in-process cache, so a revocation or deletion through any vaultd process
takes effect on the next request. It is read with its file's link generation in the same round
trip (`read_link`, `services.accounts.link_generations`): a file's revoke-all is one write.
Reading a link with its file and account, and the records kept for a second for the page path,
are `services.links.link_records`.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from pymongo.errors import DuplicateKeyError

from vaultd.db import Db, RawDoc
from vaultd.emails import normalize_email
from vaultd.errors import Forbidden, InvalidRequest, NotFound
from vaultd.records import FileDoc, LinkDoc, PolicyDoc
from vaultd.secrets import digest, is_token, new_token
from vaultd.services.accounts import link_counts, link_generations, link_shards
from vaultd.services.accounts.accounts import Account
from vaultd.services.common import outbox
from vaultd.services.common.acting import acting
from vaultd.services.common.fair_share import UNPACED, Pace
from vaultd.services.files.files import is_uuid
from vaultd.services.links import link_numbers, link_states, revoke_jobs
from vaultd.services.members.callers import CALLER, require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.notifications import owners
from vaultd.services.webhooks import webhook_events
from vaultd.timefmt import iso_utc, utcnow

DEFAULT_TTL = 3600
MAX_VIEWER_NAME = 100
LINK_NOT_FOUND = "link not found or no longer available"
LIVENESS_FIELDS = link_counts.LIVENESS_FIELDS  # what `is_live` reads


@dataclass(frozen=True)
class LinkRequest:
    file_id: str
    viewer_email: str
    viewer_name: str
    ttl_seconds: int
    policy: PolicyDoc | None = None  # the link's gates (services.gates.policy); None: none


@dataclass(frozen=True)
class OpenLink:
    """A live link with its file and account, as resolved for one request."""

    link: LinkDoc
    file: FileDoc
    account: Account
    read_at: float  # time.monotonic() when the link was read and found live
    room_id: str | None = None  # a room link's page (services.rooms.reads): its room

    @property
    def gate_id(self) -> str:
        """The link its gates and viewer sessions belong to: this link, or for a room's
        document (`<room link id>:<file id>`, `rooms.reads.page_link`) the room link."""
        return self.link["_id"].partition(":")[0] if self.room_id else self.link["_id"]


def parse_link_request(body: dict[str, Any], account: Account) -> LinkRequest:
    file_id = body.get("fileId")
    if not isinstance(file_id, str) or not is_uuid(file_id):
        raise InvalidRequest("fileId must be a file UUID")
    email = parse_email(body.get("viewerEmail"))
    return LinkRequest(
        file_id.lower(),
        email,
        parse_viewer_name(body.get("viewerName"), email),
        parse_ttl(body.get("ttlSeconds", DEFAULT_TTL), account),
    )


def parse_email(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("viewerEmail is required and must be an email address")
    email = normalize_email(value)
    if email is None:
        raise InvalidRequest("viewerEmail is not a valid email address")
    return email


def parse_viewer_name(value: Any, email: str) -> str:
    if value is None:
        return email
    if not isinstance(value, str):
        raise InvalidRequest("viewerName must be a string")
    name = " ".join("".join(ch for ch in value if ch.isprintable()).split())
    if len(name) > MAX_VIEWER_NAME:
        raise InvalidRequest(f"viewerName must be at most {MAX_VIEWER_NAME} characters")
    return name or email


def parse_ttl(value: Any, account: Account) -> int:
    """`ttlSeconds` as given (callers pass DEFAULT_TTL when it is absent; null is not a number,
    as the OpenAPI schema says)."""
    low, high = account.plan.minViewSeconds, account.plan.maxViewSeconds
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRequest(f"ttlSeconds must be a number between {low} and {high}")
    if not low <= value <= high:
        raise InvalidRequest(
            f"ttlSeconds must be between {low} and {high} on plan {account.plan.name}"
        )
    return int(value)


async def create_link(db: Db, account: Account, request: LinkRequest) -> tuple[str, datetime]:
    """Returns (token, expiresAt). The token is shown once; only its hash is stored."""
    require_caller(Permission.CHANGE_CONTENT)
    return await _insert_link(db, account, request)


async def create_own_preview(db: Db, account: Account,
                             request: LinkRequest) -> tuple[str, datetime]:
    """A link for the caller themself to look at a file (the console's Preview): reading is all
    it needs, so every role may, but only for the caller's own address."""
    require_caller(Permission.READ)
    caller = CALLER.get()
    if caller is not None and caller.kind == "member" and caller.label != request.viewer_email:
        raise Forbidden("a preview is for the member who asks for it")
    return await _insert_link(db, account, request)


async def _insert_link(db: Db, account: Account,
                       request: LinkRequest) -> tuple[str, datetime]:
    # The file as `get_file` reads it, with the new link's number reserved (`link_numbers`).
    file = await link_numbers.reserve(db, account.id, request.file_id)
    now = utcnow()
    expires_at = now + timedelta(seconds=request.ttl_seconds)
    while True:
        token = new_token()
        generation = link_generations.generation(file)
        doc: LinkDoc = {
            "_id": str(uuid.uuid4()),
            "hash": digest(token),
            "accountId": account.id,
            "fileId": request.file_id,
            "viewerEmail": request.viewer_email,
            "viewerName": request.viewer_name,
            "createdAt": now,
            "expiresAt": expires_at,
            "revoked": False,
            "sessionsOpened": 0,  # kept on write: the sessions themselves are pruned (TTL)
            "seq": int(file["linkSeq"]),
            "shard": link_shards.shard_of(request.file_id, int(file["linkSeq"]),
                                           link_shards.shards_of(file)),
            "listed": "active",
        }
        if generation:
            doc["generation"] = generation
        owner = await owners.link_owner(db, acting())  # whose notifications it feeds
        if owner is not None:
            doc["createdBy"] = owner
        if request.policy is not None:
            doc["policy"] = request.policy
            if "maxOpens" in request.policy:
                doc["opens"] = 0
        held = await webhook_events.view_created(db, doc, file)  # held until the insert
        try:
            await db.links.insert_one(doc)
        except DuplicateKeyError:  # another token, under the same number
            await outbox.discard(db, held)
            continue
        except BaseException:
            await link_numbers.unreserve(db, request.file_id, doc["seq"])
            raise
        if not await _counted(db, doc):  # of a generation revoked as it was made
            await link_numbers.unreserve(db, request.file_id, doc["seq"])  # its record is gone
            await outbox.discard(db, held)
            file = await link_numbers.reserve(db, account.id, request.file_id)  # the next one
            continue
        await outbox.release(db, held)
        return token, expires_at


async def _counted(db: Db, link: LinkDoc) -> bool:
    """The new link counted under its file's generation. False: a revoke-all (or the file's
    deletion) raised the generation since it was read, so the link was born revoked; its record
    goes (its token was never shown) and the caller makes another under the new generation.
    A link's generation never changes once written: a revoke-all's marking may then revoke
    every link it read as older without asking again (`revoke_jobs.mark`)."""
    if await link_counts.added_in_generation(db, link["accountId"], link["fileId"],
                                             link.get("generation", 0), link["expiresAt"]):
        return True
    await db.links.delete_one({"_id": link["_id"]})
    return False


async def read_link(db: Db, query: RawDoc, fields: RawDoc | None = None) -> LinkDoc | None:
    """The link matching `query` (by a unique key), with `revoked` as its file's generation
    says: one `aggregate` joining the file's generation (`link_generations.FILE_STAGE`)."""
    pipeline: list[RawDoc] = [{"$match": query}]
    if fields is not None:
        pipeline.append({"$project": {**fields, "fileId": 1, "generation": 1}})
    pipeline.append(link_generations.FILE_STAGE)
    async for doc in await db.raw(db.links.name).aggregate(pipeline):
        return cast("LinkDoc", link_generations.fold(doc))
    return None


def is_live(link: LinkDoc) -> bool:
    # `exhausted`: an open beyond the policy's maxOpens was refused (services.gates.sessions).
    return (link.get("revoked") is False and link["expiresAt"] > utcnow()
            and not link.get("exhausted"))


async def still_open(db: Db, opened: OpenLink, fresh_for: float = 0.0) -> bool:
    """Whether the link is live now, or was found live less than `fresh_for` seconds ago.

    Pages ask after their render, so a revoke or delete during a slow or queued render still
    stops the page. The link alone tells: deleting a file removes its links before anything."""
    if time.monotonic() - opened.read_at < fresh_for:
        return True
    return await _is_live_now(db, opened.link["_id"])


async def _is_live_now(db: Db, link_id: str) -> bool:
    link = await read_link(db, {"_id": link_id}, LIVENESS_FIELDS)
    return link is not None and is_live(link)


def link_details(opened: OpenLink) -> dict[str, Any]:
    return {
        "fileName": opened.file["name"],
        "pageCount": int(opened.file["pageCount"]),
        "viewerName": opened.link["viewerName"],
        "viewerEmail": opened.link["viewerEmail"],
        "expiresAt": iso_utc(opened.link["expiresAt"]),
        "brand": opened.account.brand,
    }


async def revoke_link(db: Db, account_id: str, token: str) -> None:
    """Revoke one link of this account; revoking twice is fine, a foreign token is NotFound."""
    require_caller(Permission.CHANGE_CONTENT)
    if not is_token(token):
        raise NotFound(LINK_NOT_FOUND)
    link = await read_link(db, {"hash": digest(token), "accountId": account_id})
    await _revoke_found(db, link)


async def revoke_link_id(db: Db, account_id: str, file_id: str, link_id: str) -> None:
    """`revoke_link` by the link's id (as `GET /files/:id/views` lists it), within its file."""
    require_caller(Permission.CHANGE_CONTENT)
    if not is_uuid(file_id) or not is_uuid(link_id):
        raise NotFound(LINK_NOT_FOUND)
    link = await read_link(db, {"_id": link_id.lower(), "accountId": account_id,
                                "fileId": file_id.lower()})
    await _revoke_found(db, link)


async def _revoke_found(db: Db, link: LinkDoc | None) -> None:
    if link is None:
        raise NotFound(LINK_NOT_FOUND)
    if link["revoked"] is not False:
        return  # revoked, by itself or with its file's links
    # Held before the revoke: shared by racing callers (one id), released by the one that won.
    held = await webhook_events.view_revoked(db, link)
    live = is_live(link)  # an expired link already left the count (`services.accounts.link_counts`)
    result = await db.links.update_one(
        {"_id": link["_id"], "revoked": False},
        {"$set": {"revoked": True, "countedOut": live, "listed": "revoked"}})
    if result.modified_count:
        await outbox.release(db, held)
        await link_states.counted_revoke(db, link)
        if live:
            await link_counts.revoked_in_generation(db, link, 1)


async def revoke_file_links(db: Db, account_id: str, file_id: str,
                            owner: str = "vaultd-admin", pace: Pace = UNPACED) -> int:
    """Revoke the file's active links; logs `revoke` when at least one was disabled.

    A job in short batches that recovery finishes if `owner` (an instance id) dies
    (`services.links.revoke_jobs`); its webhook is held before the links change and carries the
    count of links the job revoked."""
    require_caller(Permission.CHANGE_CONTENT)
    if not is_uuid(file_id):
        return 0
    return await revoke_jobs.revoke_all(db, account_id, file_id.lower(), owner, pace)
