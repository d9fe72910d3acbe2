"""The placement mark over a year of views (docs/leak-tracing.md, "A year of views"): a page's
print is kept when it is first served; a washed leak of a view from eleven months ago, behind
thousands of newer views of the same page and of others, is named through its page's views of
the year, read by an index range a chunk at a time; without the page's print it is not (the
account's newest views do not reach back that far); and the trace's reads are bounded."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from PIL import Image

from bench.corpus import small_pdf
from bench.leakmark_wash import WASHES
from render.forensic import decode
from render.forensic.layout import keyed
from render.forensic.served import LONG_SIDE
from render.forensic_wire.page_print import BANDS
from tests.access_log import access_log_entries
from tests.db_commands import CommandCounter
from tests.http_helpers import create_link, page_images, upload_ok
from tests.trace_helpers import png, traced
from tests.vault_process import VaultProcess, running_vault
from tests.waiting import wait_until
from vaultd.services.tracing.candidates import CHUNK, NEWEST
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # starts its own vaultd

NEWER_VIEWS_OF_THE_PAGE = CHUNK + 200  # the leaked view is in the page's second chunk
OTHER_VIEWS = 1000  # of other files, over the whole year
LEAKED_DAYS_AGO = 330
WASH = "observed chips, no key"


# The audit sequencer's rounds read the access log too, a round each merge delay (1 s by
# default): a trace that took 27 s on a loaded host counted 27 of the rounds' reads with its
# own 27 (54 against the bound of 40). A round a minute leaves the count to the trace, whose
# reads (the page's views by time, `services.tracing.candidates`) need no round.
ROUNDS_APART = {"VAULTD_AUDIT_MERGE_DELAY_SECONDS": "60"}


@pytest.fixture(scope="module")
def year_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    with running_vault(tmp_path_factory.mktemp("year") / "data", **ROUNDS_APART) as server:
        yield server


def _prints(vault: VaultProcess, file_id: str) -> list[dict[str, Any]]:
    async def read(db: Any) -> list[dict[str, Any]]:
        return [doc async for doc in db.page_prints.find({"fileId": file_id})]
    found: list[dict[str, Any]] = vault.run_service(read)
    return found


def _seed_a_year(vault: VaultProcess, account_id: str, leaked: dict[str, Any]) -> None:
    """The leaked view moved LEAKED_DAYS_AGO back; NEWER_VIEWS_OF_THE_PAGE views of its page
    since, and OTHER_VIEWS of other files' pages over the year, written as the page path
    writes them."""
    now, rng = utcnow(), random.Random(50)
    ids: set[int] = set()

    def entry(number: int, file_id: str, page: int, days_ago: float) -> dict[str, Any]:
        render_id = rng.getrandbits(45)
        while render_id in ids:
            render_id = rng.getrandbits(45)
        ids.add(render_id)
        return {"_id": f"seeded-{number:07d}", "accountId": account_id, "fileId": file_id,
                "action": "page", "at": now - timedelta(days=days_ago), "page": page,
                "viewerEmail": f"viewer{number % 97}@example.com", "ip": "198.51.100.7",
                "renderId": f"{render_id:012x}", "viewerName": "Seeded Viewer"}

    newer = [entry(n, leaked["fileId"], 1, rng.uniform(0, LEAKED_DAYS_AGO - 1))
             for n in range(NEWER_VIEWS_OF_THE_PAGE)]
    others = [entry(NEWER_VIEWS_OF_THE_PAGE + n, f"other-file-{n % 40}", 1 + n % 9,
                    rng.uniform(0, 364)) for n in range(OTHER_VIEWS)]

    # The log's validator takes a fenced entry (`services.common.log_fence`) only at a time
    # after the fence: the leaked view is written again, unfenced, as an entry of that day was.
    moved = {name: value for name, value in leaked.items() if name != "fenced"}
    moved["at"] = now - timedelta(days=LEAKED_DAYS_AGO)

    async def write(db: Any) -> None:
        await db.access_log.delete_one({"_id": leaked["_id"]})
        await db.access_log.insert_one(moved)
        docs = newer + others
        for first in range(0, len(docs), 500):
            await db.access_log.insert_many(docs[first: first + 500])
    vault.run_service(write)


def _washed(vault: VaultProcess, page: Image.Image) -> bytes:
    washed = WASHES[WASH](page, LONG_SIDE, keyed(None))
    assert decode(washed, keyed(vault.mark_cipher().layout_key)) is None  # the mark is gone
    return png(washed)


def test_a_washed_leak_of_a_view_from_eleven_months_ago_is_named(year_vault: VaultProcess
                                                                 ) -> None:
    vault = year_vault
    account_id, key = vault.new_account("Year Co")
    with vault.client(key) as client:
        file = upload_ok(client, small_pdf().data, name="Annual report.pdf")
        link = create_link(client, file["id"], "old@example.com", viewerName="Old Viewer")
        vault.secrets.append(link["token"])
        pages = page_images(client, link["token"], 2)
        # Each page's print is kept once it is served: bits and their bands, no picture.
        prints = wait_until(lambda: len(found := _prints(vault, file["id"])) == 2 and found,
                            what="both pages' prints")
        assert sorted(doc["page"] for doc in prints) == [1, 2]
        assert all(len(doc["bands"]) == BANDS and len(doc["bits"]) == 64 for doc in prints)
        assert {doc["accountId"] for doc in prints} == {account_id}
        leaked = access_log_entries(vault, file["id"])[0]
        assert leaked["page"] == 1
        _seed_a_year(vault, account_id, leaked)
        assert len(access_log_entries(vault, file["id"])) == NEWER_VIEWS_OF_THE_PAGE + 2
        leak = _washed(vault, pages[0])

        counter = CommandCounter.of_vault(vault)
        try:
            before = counter.snapshot()
            answer = traced(client, leak)
            spent = counter.snapshot() - before
        finally:
            counter.close()
        match, = answer["matches"]
        assert match["renderId"] == leaked["renderId"] and match["evidence"] == "placement"
        assert match["viewerEmail"] == "old@example.com" and match["page"] == 1
        # A handful of index-range reads: the print's bands, the page's windows of the year.
        assert spent["page_prints queries"] == 1
        assert 2 <= spent["access_log queries"] <= 40, spent

        # Without the page's print the candidates are the account's NEWEST views, which do not
        # reach back eleven months: the narrowing is what names the view.
        assert NEWER_VIEWS_OF_THE_PAGE + OTHER_VIEWS > NEWEST
        vault.run_service(lambda db: db.page_prints.delete_many({"fileId": file["id"]}))
        assert traced(client, leak) == {"found": False}


def test_the_page_s_year_is_read_by_an_index_range(year_vault: VaultProcess) -> None:
    """The read of one page's views of the year walks the page's index range: it examines
    that page's views, not the account's."""
    vault = year_vault
    account_id, _ = vault.new_account("Explained Co")

    async def explain(db: Any) -> dict[str, Any]:
        now = utcnow()
        views = [{"_id": f"explained-{n}", "accountId": account_id, "action": "page",
                  "fileId": f"explained-file-{n % 4}", "page": 1 + n % 5,
                  "at": now - timedelta(days=n % 365), "renderId": f"{n:012x}"}
                 for n in range(400)]
        await db.access_log.insert_many(views)
        query = {"accountId": account_id, "fileId": "explained-file-1", "page": 2,
                 "action": "page", "at": {"$gte": now - timedelta(days=365)}}
        found: dict[str, Any] = await db.database.command(
            "explain", {"find": "access_log", "filter": query}, verbosity="executionStats")
        return found

    explained = vault.run_service(explain)
    plan = explained["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "IXSCAN", plan
    assert plan["inputStage"]["indexName"] == "accountId_1_fileId_1_action_1_page_1_at_-1"
    stats = explained["executionStats"]
    assert stats["nReturned"] == 20  # n = 1 mod 4 and 2 mod 5: 20 of the 400
    assert stats["totalDocsExamined"] == 20
