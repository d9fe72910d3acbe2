"""What a page costs the database, in commands counted by the database (`tests.db_commands`):
the gates' cost criterion (gates are judged in the authorise stage from the link check's own
round trip: a link without a policy sends what it sent before gates) and the rooms' (a room
link's page reads its link, the file's place and the key in one round trip, as a file link's
page does).

A page whose link, file and account were read in the last second (`services.common.recent`) sends:
one `aggregate` (the key with the link, `api_keys.check_key`) and the log entry. A page read
after they expired, or confirmed after a render slower than 0.25 s, sends more. On a loaded
host most pages rendered slower than that, so the module widens both windows (`wide_windows`):
every page is then the common page, which is what is checked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests import db_commands
from tests import documents as docs
from tests.db_commands import CommandCounter, sent
from tests.http_helpers import create_link, upload_ok
from tests.room_helpers import add_file, add_folder, create_room, room_link
from tests.vault_process import VaultProcess
from vaultd.services.common.recent import RecentRecords
from vaultd.services.pages import page_path

PAGES = 12
# The collections a page's request may touch (the server's background work writes elsewhere:
# heartbeats, analytics flushes, the webhook outbox).
PAGE_COLLECTIONS = {"links", "api_keys", "access_log", "files", "accounts", "viewer_sessions",
                    "gate_counters", "room_links", "room_items", "rooms"}
LINK_CHECK_AND_ENTRY = Counter({"links commands": 1, "access_log insert": 1})
PASSCODE = "open sesame"
WIDE_SECONDS = 120.0
counter = db_commands.counter  # this module's fixture, counting its vault's database


@pytest.fixture(autouse=True)
def wide_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's vaultd serves from this process: its link is confirmed after a render
    slower than `WIDE_SECONDS`, its records kept as long (a property over every instance's
    `ttl`, the page path's made at its start among them)."""
    monkeypatch.setattr(page_path, "LINK_FRESH_SECONDS", WIDE_SECONDS)
    monkeypatch.setattr(RecentRecords, "ttl", property(lambda _records: WIDE_SECONDS,
                                                       lambda _records, _ttl: None),
                        raising=False)


@pytest.fixture
def pdf_file(api: httpx.Client) -> dict[str, Any]:
    return upload_ok(api, docs.pdf(pages=2), name="Deal.pdf")


def page_commands(counter: CommandCounter, get: Callable[[int], httpx.Response]
                  ) -> list[Counter[str]]:
    """The commands each of PAGES pages sent, after one untimed page (the records read)."""
    assert get(1).status_code == 200
    pages = []
    for turn in range(PAGES):
        before = counter.snapshot()
        response = get(turn % 2 + 1)
        assert response.status_code == 200, response.text
        pages.append(sent(before, counter.snapshot(), PAGE_COLLECTIONS))
    return pages


def most_pages(pages: list[Counter[str]]) -> Counter[str]:
    """What most pages sent (at least half of them)."""
    shapes = Counter(frozenset(page.items()) for page in pages)
    shape, times = shapes.most_common(1)[0]
    assert times * 2 >= len(pages), pages
    return Counter(dict(shape))


def test_a_link_without_a_policy_sends_the_link_check_and_the_log_entry_only(
        api: httpx.Client, counter: CommandCounter, pdf_file: dict[str, Any]) -> None:
    token = create_link(api, pdf_file["id"])["token"]
    pages = page_commands(counter, lambda n: api.get(f"/views/{token}/pages/{n}"))
    assert most_pages(pages) == LINK_CHECK_AND_ENTRY
    # No page of it reads a session or a gate's counter, whatever the records' age.
    touched = {key.split(" ")[0] for page in pages for key in page}
    assert not touched & {"viewer_sessions", "gate_counters"}, pages


def test_a_gated_link_adds_its_session_read_only(
        api: httpx.Client, counter: CommandCounter, pdf_file: dict[str, Any],
        vault: VaultProcess) -> None:
    token = create_link(api, pdf_file["id"], policy={"passcode": PASSCODE})["token"]
    vault.secrets.append(token)
    opened = api.post(f"/views/{token}/sessions")
    assert opened.status_code == 201, opened.text
    session = opened.json()["sessionId"]
    vault.secrets.append(session)
    passed = api.post(f"/views/{token}/sessions/{session}/passcode", json={"passcode": PASSCODE})
    assert passed.status_code == 200, passed.text
    session = passed.json()["sessionId"]  # renewed as the gate was passed
    vault.secrets.append(session)
    pages = page_commands(counter, lambda n: api.get(
        f"/views/{token}/pages/{n}", headers={"x-viewer-session": session}))
    assert most_pages(pages) == LINK_CHECK_AND_ENTRY + Counter({"viewer_sessions queries": 1})


def test_a_room_links_page_reads_the_link_the_place_and_the_key_in_one_round_trip(
        api: httpx.Client, counter: CommandCounter, pdf_file: dict[str, Any],
        vault: VaultProcess) -> None:
    room = create_room(api)["id"]
    folder = add_folder(api, room, "Financials")["id"]
    add_file(api, room, pdf_file["id"], folder)
    whole = room_link(api, room)["token"]
    scoped = room_link(api, room, folderIds=[folder])["token"]
    vault.secrets += [whole, scoped]
    for token in (whole, scoped):
        pages = page_commands(counter, lambda n, token=token: api.get(
            f"/room-views/{token}/files/{pdf_file['id']}/pages/{n}"))
        # The file sits directly in the scope's folder: no folder above it is read.
        assert most_pages(pages) == Counter({"room_links commands": 1,
                                             "access_log insert": 1}), token == whole


def test_the_joined_fields_have_the_single_field_indexes_the_join_needs(
        counter: CommandCounter) -> None:
    """The page's combined reads join by equality `$lookup`s (`api_keys._read_key_and_link`,
    `rooms.page_read`): SecantusDB probes the joined collection per document only when its
    foreign field has a single-field index, and loads the whole collection otherwise (as it
    always does for a `$unionWith`). Dropping or widening these indexes would make every page
    read every key or every room's items."""
    database = counter.client[counter.database]
    for collection, field in (("api_keys", "hash"), ("room_items", "fileId")):
        keys = [info["key"] for info in database[collection].index_information().values()]
        assert [(field, 1)] in keys, (collection, keys)
