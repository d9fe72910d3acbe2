"""What the tests of a file's links by state share (`tests/test_links_by_state*.py`, their
database and recorder from `tests.recorded_database`: `recorder`, `worker_db`): an account with
a file, the listing as the route calls it, and what it must answer, worked out from the records
alone.

The expected states are read as a page request reads one link (`links.read_link`: its record,
its file's generation), not from what the listing keeps (`listed`, the file's notes): a link of
an older generation than its file's, or marked revoked, is revoked; one past its expiry or
spent is expired; the rest are active. Newest first is highest number first.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from tests.db_reads import QueryRecorder, total_examined
from vaultd.db import Db
from vaultd.services.accounts import accounts
from vaultd.services.accounts.accounts import Account
from vaultd.services.analytics import link_listing
from vaultd.timefmt import utcnow

STATES: tuple[link_listing.State, ...] = ("active", "expired", "revoked")


async def account_with_file(db: Db, name: str) -> tuple[Account, str]:
    """An account and one stored file of it with no link, counted as uploads count it."""
    account = await accounts.create_account(db, name, "business")
    file_id = str(uuid.uuid4())
    created = utcnow() - timedelta(days=60)
    await db.raw(db.files.name).insert_one({
        "_id": file_id, "accountId": account.id, "name": "deck.pdf", "kind": "view",
        "contentType": "application/pdf", "size": 1000, "pageCount": 3,
        "createdAt": created, "state": "stored",
        "blob": {"name": f"seeded-{file_id}", "size": 1000, "key": {}},
        "linkCount": {"live": 0, "sweptAt": created}})
    return account, file_id


async def expected(db: Db, file_id: str) -> dict[link_listing.State, list[str]]:
    """The file's link ids in each state, newest first, from the records alone."""
    file = await db.files.find_one({"_id": file_id}, {"linkGeneration": 1})
    assert file is not None
    generation = int(file.get("linkGeneration") or 0)
    now = utcnow()
    found: dict[link_listing.State, list[tuple[int, str]]] = {state: [] for state in STATES}
    async for link in db.links.find({"fileId": file_id}):
        if link["revoked"] is not False or int(link.get("generation") or 0) < generation:
            state: link_listing.State = "revoked"
        elif link["expiresAt"] <= now or link.get("exhausted"):
            state = "expired"
        else:
            state = "active"
        found[state].append((int(link["seq"]), link["_id"]))
    return {state: [link_id for _, link_id in sorted(pairs, reverse=True)]
            for state, pairs in found.items()}


async def listed(db: Db, recorder: QueryRecorder, account_id: str, file_id: str,
                 state: link_listing.State | None, page: int, per_page: int
                 ) -> tuple[list[str], int, int]:
    """The ids a page of `state` returns, its total, and the documents its queries made the
    database walk."""
    with recorder.recorded():
        listing = await link_listing.list_file_links(db, account_id, file_id, page, per_page,
                                                     state)
    assert state is None or all(view["state"] == state for view in listing["views"])
    return ([view["id"] for view in listing["views"]], listing["total"],
            await total_examined(db, list(recorder.queries)))


async def every_page(db: Db, recorder: QueryRecorder, account_id: str, file_id: str,
                     state: link_listing.State, per_page: int) -> tuple[list[str], int]:
    """Every page of `state` one after the other (until one comes back short), and the total
    each gave (all the same)."""
    ids: list[str] = []
    totals: set[int] = set()
    page = 1
    while True:
        shown, total, _ = await listed(db, recorder, account_id, file_id, state, page,
                                       per_page)
        ids += shown
        totals.add(total)
        if len(shown) < per_page:
            break
        page += 1
    assert len(totals) == 1, f"{state}: the total moved between pages: {totals}"
    return ids, totals.pop()
