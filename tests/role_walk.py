"""What the route walk of tests/test_roles_http.py calls: every authenticated route of
`vaultd.web.app.all_routes()` with its path filled from one account's real records, and a
fingerprint of everything that account holds (to show a refused call changed nothing)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from tests import documents
from tests.http_helpers import assert_json_error, create_link, created, upload_ok
from tests.room_helpers import add_file, create_room, room_link
from tests.vault_process import VaultProcess
from tests.waiting import wait_until
from vaultd.services.common import log_fence, numbered_log
from vaultd.web.app import all_routes, served_methods

GROUP = re.compile(r"\((?:[^()]|\([^()]*\))*\)")
# What a route needs besides its path to answer 200: the audit log's proofs name an entry.
QUERIES = {"/v1/audit/proof/inclusion": "?index=0", "/v1/audit/proof/consistency": "?from=1",
           "/v1/audit/entries/([^/]+)/proof": "?type=activity"}
# Collections holding an account's records (by `accountId`); their documents, hashed.
ACCOUNT_COLLECTIONS = ("files", "links", "rooms", "room_links", "api_keys", "members",
                       "webhook_endpoints", "agreements", "activity", "access_log")
AUDITOR_CHANGE = "the auditor role cannot change files, links or rooms"
AUDITOR_TRACE = "the auditor role cannot trace leaked images"
AUDITOR_MANAGE = "the auditor role cannot manage members, API keys, webhooks or branding"
MEMBER_MANAGE = "the member role cannot manage members, API keys, webhooks or branding"
ACCOUNT_ROUTES = ("/v1/members", "/v1/keys", "/v1/webhooks")


def is_account_route(pattern: str) -> bool:
    return pattern.startswith(ACCOUNT_ROUTES)


def auditor_refusal(pattern: str) -> str:
    """What an auditor is told at a `/v1` route that changes something."""
    if is_account_route(pattern):
        return AUDITOR_MANAGE
    return AUDITOR_TRACE if pattern == "/v1/trace" else AUDITOR_CHANGE


@dataclass
class Records:
    """One account's records, each route's path parameters filled from them."""

    ids: dict[str, str]

    def path(self, pattern: str) -> str:
        """`/v1/files/([^/]+)/views/([^/]+)` -> `/files/<file id>/views/<link token>`; a
        download's file is a delivery file (a source file is view-only)."""
        if pattern.endswith("/download"):
            pattern = pattern.replace("files/", "delivery/", 1)
        out, last = "", 0
        for match in GROUP.finditer(pattern):
            before = pattern[last:match.start()]
            segment = before.rstrip("/").rsplit("/", 1)[-1]
            out += before + self.ids.get(segment, "x")
            last = match.end()
        path = (out + pattern[last:]).removeprefix("/v1").replace("/delivery/", "/files/")
        return path + QUERIES.get(pattern, "")


def seed(api: httpx.Client) -> Records:
    file = upload_ok(api, documents.pdf(2))
    delivery = upload_ok(api, documents.pdf(1), kind="delivery")
    link = create_link(api, file["id"])
    room = create_room(api)
    item = add_file(api, room["id"], file["id"])
    room_view = room_link(api, room["id"])
    member = created(api.post("/members", json={"email": "walk@example.com",
                                                "role": "member"}))
    key = created(api.post("/keys", json={"name": "spare", "role": "member"}))
    nda = api.post("/agreements", json={"name": "NDA", "text": "Quiet."})
    assert nda.status_code == 201, nda.text
    # An event this walk never causes: nothing is sent, the endpoint's record stays as it is.
    hook = created(api.post("/webhooks", json={"url": "https://hooks.example.com/in",
                                               "events": ["agreement.accepted"]}))
    # The activity log's first entry (the member's addition), once the audit log has signed it.
    entry = api.get("/activity").json()["entries"][-1]["id"]
    wait_until(lambda: api.get(f"/audit/entries/{entry}/proof?type=activity").is_success,
               timeout=30, what="the audit log's checkpoint of the first activity entry")
    return Records({"entries": entry, "files": file["id"], "views": link["token"],
                    "rooms": room["id"], "items": item["id"], "room-views": room_view["token"],
                    "pages": "1", "members": member["id"], "keys": key["id"],
                    "delivery": delivery["id"], "webhooks": hook["id"],
                    "agreements": nda.json()["id"]})


def authenticated_routes() -> list[tuple[str, str]]:
    """(pattern, method) of every route a key is checked on: the `/v1` API's (the console's
    pages are the session's, held to the same table: tests/test_console_files.py)."""
    return [(pattern, method) for pattern, handler in all_routes() if not handler.public
            and pattern.startswith("/v1/") for method in served_methods(handler)]


def call(client: httpx.Client, method: str, path: str) -> httpx.Response:
    if method == "POST" and path == "/files":
        return client.post(path, content=documents.pdf(1),
                           headers={"Content-Type": "application/pdf"})
    body = {} if method in ("POST", "PATCH") else None
    return client.request(method, path, json=body)


# What background steps write on records a request wrote before, left out of the fingerprint:
# a log entry's numbers, and its fence mark lifted, by the audit sequencer's round after the
# insert (`log_numbering`; one ran between the two digests of a refused call in a CI run).
BACKGROUND_FIELDS = {"access_log": {log_fence.FENCED: 0,
                                    **{scope.number: 0 for scope in numbered_log.ALL_SCOPES}}}


def fingerprint(vault: VaultProcess, account_id: str) -> dict[str, str]:
    """A digest of every record the account holds, by collection (BACKGROUND_FIELDS aside)."""
    async def read(db: Any) -> dict[str, str]:
        out = {}
        for name in ACCOUNT_COLLECTIONS:
            docs = await db.raw(name).find({"accountId": account_id},
                                           BACKGROUND_FIELDS.get(name)).to_list()
            docs.sort(key=lambda doc: str(doc["_id"]))
            out[name] = hashlib.sha256(json.dumps(docs, default=str).encode()).hexdigest()
        account = await db.raw("accounts").find_one({"_id": account_id}, {"linkCount": 0})
        out["account"] = hashlib.sha256(json.dumps(account, default=str).encode()).hexdigest()
        return out

    result: dict[str, str] = vault.run_service(read)
    return result


def assert_refused_unchanged(vault: VaultProcess, account_id: str, client: httpx.Client,
                             method: str, path: str, refusal: str) -> None:
    """`client`'s call of `method path` is refused 403 with `refusal`, and nothing the account
    holds changed (the key walk's and the session walk's check)."""
    before = fingerprint(vault, account_id)
    assert_json_error(call(client, method, path), 403, refusal)
    assert fingerprint(vault, account_id) == before
