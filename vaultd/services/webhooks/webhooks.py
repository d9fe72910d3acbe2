"""Webhook endpoints of an account: create (secret shown once), list, delete, delivery history.

The signing secret is 32 random bytes, handed out once as `whsec_<base64>` (the Standard
Webhooks form) and stored only wrapped by the master keyring, bound to the endpoint and account,
exactly like a file's data key.
"""

from __future__ import annotations

import base64
import re
import secrets
import uuid
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import urlsplit

from pymongo.errors import DuplicateKeyError

from vaultd.crypto.keyring import DATA_KEY_SIZE, MasterKeyring, WrappedKey
from vaultd.db import Db
from vaultd.errors import InvalidRequest, NotFound, PlanLimitReached
from vaultd.records import DeliveryDoc, WebhookEndpointDoc
from vaultd.services.accounts.accounts import Account
from vaultd.services.common.numbered import newest_numbered
from vaultd.services.members.callers import require_caller
from vaultd.services.members.roles import Permission
from vaultd.services.webhooks import delivery_numbers
from vaultd.services.webhooks.webhook_failures import tenant_error
from vaultd.timefmt import iso_utc, utcnow

EVENTS = ("file.uploaded", "file.deleted", "view.created", "view.opened", "view.revoked",
          "view.completed", "file.downloaded", "view.verified", "agreement.accepted",
          "room.opened", "room.revoked", "audit.checkpoint")
MAX_ENDPOINTS = 10
MAX_URL_LENGTH = 2000
LATEST_DELIVERIES = 50
PLANS_WITH_WEBHOOKS = frozenset({"pro", "business"})
SECRET_PREFIX = "whsec_"
ENDPOINT_NOT_FOUND = "webhook endpoint not found"
_ENDPOINT_ID = re.compile(r"^ep_[0-9a-f]{32}$")


class EndpointJson(TypedDict):
    id: str
    url: str
    events: list[str]
    createdAt: str


class CreatedEndpointJson(EndpointJson):
    secret: str


class DeliveryJson(TypedDict):
    messageId: str
    type: str
    attempt: int
    at: str
    status: int | None
    ok: bool
    durationMs: int
    error: str | None


@dataclass(frozen=True)
class EndpointRequest:
    url: str
    events: tuple[str, ...]


def parse_endpoint_request(body: dict[str, Any]) -> EndpointRequest:
    return EndpointRequest(parse_url(body.get("url")), parse_events(body.get("events")))


def parse_url(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest("url is required: an http:// or https:// address")
    url = value
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise InvalidRequest("url must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        raise InvalidRequest("url is not a valid http:// or https:// address") from None
    if len(url) > MAX_URL_LENGTH or parts.scheme not in ("http", "https") \
            or not parts.hostname or not port_ok:
        raise InvalidRequest("url is not a valid http:// or https:// address")
    if parts.username is not None or parts.password is not None:
        # Credentials would sit in the database in clear; the signature authenticates us.
        raise InvalidRequest("url must not contain a user name or password")
    return url


def parse_events(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or \
            not all(isinstance(item, str) for item in value):
        raise InvalidRequest(f"events must be a non-empty list among: {', '.join(EVENTS)}")
    unknown = [item for item in value if item not in EVENTS]
    if unknown:
        raise InvalidRequest(f"unknown event {unknown[0]!r}; events: {', '.join(EVENTS)}")
    return tuple(dict.fromkeys(value))


def require_webhook_plan(account: Account) -> None:
    if account.plan.id not in PLANS_WITH_WEBHOOKS:
        raise PlanLimitReached(
            f"webhooks need the Pro or Business plan (account is on {account.plan.name})")


def endpoint_json(doc: WebhookEndpointDoc) -> EndpointJson:
    return {"id": doc["_id"], "url": doc["url"], "events": list(doc["events"]),
            "createdAt": iso_utc(doc["createdAt"])}


def webhook_binding(endpoint_id: str) -> str:
    # The keyring binds wrapped keys to a "file id": a namespace keeps the two kinds apart.
    return f"webhook:{endpoint_id}"


def encode_secret(raw: bytes) -> str:
    return SECRET_PREFIX + base64.b64encode(raw).decode("ascii")


def endpoint_secret(keyring: MasterKeyring, doc: WebhookEndpointDoc) -> str:
    """The endpoint's `whsec_` secret, unwrapped for signing; never stored or logged."""
    wrapped = WrappedKey.from_doc(doc["secret"])
    raw = keyring.unwrap(wrapped, file_id=webhook_binding(doc["_id"]),
                         account_id=doc["accountId"])
    return encode_secret(raw)


async def create_endpoint(db: Db, keyring: MasterKeyring, account: Account,
                          request: EndpointRequest) -> CreatedEndpointJson:
    require_caller(Permission.MANAGE_ACCOUNT)
    require_webhook_plan(account)
    endpoint_id = "ep_" + uuid.uuid4().hex
    raw = secrets.token_bytes(DATA_KEY_SIZE)
    wrapped = keyring.wrap(raw, file_id=webhook_binding(endpoint_id), account_id=account.id)
    doc: WebhookEndpointDoc = {
        "_id": endpoint_id, "accountId": account.id, "slot": 0, "url": request.url,
        "events": list(request.events), "secret": wrapped.to_doc(), "createdAt": utcnow()}
    await _insert_in_free_slot(db, doc)
    return {**endpoint_json(doc), "secret": encode_secret(raw)}


async def _insert_in_free_slot(db: Db, doc: WebhookEndpointDoc) -> None:
    """Take one of the account's slots 0..MAX_ENDPOINTS-1; (accountId, slot) is unique, so
    concurrent creates can never hold more than MAX_ENDPOINTS endpoints between them."""
    while True:
        taken = {row["slot"] async for row in db.webhook_endpoints.find(
            {"accountId": doc["accountId"]}, {"slot": 1})}
        free = [slot for slot in range(MAX_ENDPOINTS) if slot not in taken]
        if not free:
            raise PlanLimitReached(f"at most {MAX_ENDPOINTS} webhook endpoints per account")
        doc["slot"] = free[0]
        try:
            await db.webhook_endpoints.insert_one(doc)
            return
        except DuplicateKeyError:  # another create took that slot first: look again
            continue


async def list_endpoints(db: Db, account_id: str) -> list[EndpointJson]:
    cursor = db.webhook_endpoints.find({"accountId": account_id}).sort("createdAt", 1)
    return [endpoint_json(doc) async for doc in cursor]


async def get_endpoint(db: Db, account_id: str, endpoint_id: str) -> WebhookEndpointDoc:
    doc = None
    if _ENDPOINT_ID.match(endpoint_id):
        doc = await db.webhook_endpoints.find_one({"_id": endpoint_id, "accountId": account_id})
    if doc is None:
        raise NotFound(ENDPOINT_NOT_FOUND)
    return doc


async def delete_endpoint(db: Db, account_id: str, endpoint_id: str) -> None:
    """Remove the endpoint; messages still waiting for it are cancelled, never sent."""
    require_caller(Permission.MANAGE_ACCOUNT)
    doc = await get_endpoint(db, account_id, endpoint_id)
    await db.webhook_endpoints.delete_one({"_id": doc["_id"]})
    await db.webhook_outbox.update_many(
        {"endpointId": doc["_id"], "state": {"$in": ["held", "pending"]}},
        {"$set": {"state": "cancelled", "finishedAt": utcnow()}})


async def latest_deliveries(db: Db, account_id: str, endpoint_id: str) -> list[DeliveryJson]:
    """The endpoint's latest deliveries, newest first: ranges of their numbers in the endpoint
    (`delivery_numbers`, `services.common.numbered`), so neither a busy month nor a burst of
    retries is read for 50."""
    doc = await get_endpoint(db, account_id, endpoint_id)
    top, floor = await delivery_numbers.bounds(db, doc["_id"])
    rows = await newest_numbered(db.webhook_deliveries, {"endpointId": doc["_id"]}, "seq",
                                 count=LATEST_DELIVERIES, top=top, floor=floor)
    return [delivery_json(row) for row in rows]


def delivery_json(row: DeliveryDoc) -> DeliveryJson:
    return {"messageId": row["messageId"], "type": row["type"], "attempt": int(row["attempt"]),
            "at": iso_utc(row["at"]), "status": row["status"], "ok": bool(row["ok"]),
            "durationMs": int(row["durationMs"]), "error": tenant_error(row["error"])}
