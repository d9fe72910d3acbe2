"""Limits that two vaultd processes sharing one database enforce once, not twice: the hourly
trace rate (`services.tracing.trace_rate`, kept in the database) and a revoke-all (the file's
link generation: the other process answers for its links, and counts them, at once); and the
access log's window hint, kept on the file's record, so that a poll through the other process
is one round trip too (`services.common.access_log`); and the files' numbers in their account,
given by one counter in the database whichever process uploads (`services.common.numbered`);
and the OIDC sign-ins one address may start, one conditional update (`members.oidc_pending`).
Process A starts the embedded database; B is pointed at it through VAULTD_MONGODB_URI, as a
second node of one deployment would be (each with blobs of its own: nothing here reads
another's)."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests import documents as docs
from tests.db_commands import CommandCounter, sent
from tests.http_helpers import LINK_GONE, assert_json_error, create_link, upload_ok
from tests.trace_helpers import blank_png, post_png
from tests.vault_process import VaultProcess, vault_pair
from vaultd.crypto.keyring import MasterKeyring
from vaultd.errors import TooManyRequests
from vaultd.services.members import oidc_pending

pytestmark = pytest.mark.slow  # starts its own servers (see docs/testing.md)

PER_HOUR = 2
LIMITED = re.compile(r"too many images traced for this account \(at most 2 an hour\); "
                     r"retry in \d+ s")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VaultProcess, VaultProcess]]:
    env = {"VAULTD_MASTER_KEY": MasterKeyring.generate().serialize(one_line=True),
           "VAULTD_RENDER_WORKERS": "1",
           "VAULTD_TRACE_MAX_IMAGES_PER_HOUR_PER_ACCOUNT": str(PER_HOUR),
           # No audit sequencer: its reads of new log entries would be counted with a poll's.
           "VAULTD_AUDIT_ENABLED": "false"}
    with vault_pair(tmp_path_factory.mktemp("limits"), env) as pair:
        yield pair


def _trace(api: httpx.Client) -> httpx.Response:
    return post_png(api, blank_png())


def test_the_hourly_trace_rate_holds_across_both_processes(
        pair: tuple[VaultProcess, VaultProcess]) -> None:
    a, b = pair
    _, key = a.new_account("Tracing Twice Ltd")
    with a.client(key) as api_a, b.client(key) as api_b:
        assert _trace(api_a).status_code == 200
        assert _trace(api_b).status_code == 200
        # The hour's two images are spent, whichever process is asked next.
        for api in (api_a, api_b):
            refused = _trace(api)
            assert_json_error(refused, 429, LIMITED)
            assert 3500 <= int(refused.headers["Retry-After"]) <= 3600


def test_a_revoke_all_through_one_process_is_whole_in_the_other_at_once(
        pair: tuple[VaultProcess, VaultProcess]) -> None:
    a, b = pair
    _, key = a.new_account("Revoking Twice Ltd", plan="business")
    with a.client(key) as api_a, b.client(key) as api_b:
        file_id = upload_ok(api_a, docs.pdf())["id"]
        tokens = [create_link(api_a, file_id, f"v{n}@example.com")["token"] for n in range(30)]
        a.secrets += tokens
        assert api_b.get("/account").json()["usage"]["activeLinks"] == 30
        assert api_b.get(f"/views/{tokens[0]}").status_code == 200  # kept by B for a second
        assert api_a.post(f"/files/{file_id}/revoke-views").json() == {"revoked": 30}
        # At once in B, before any link record is marked: the links, and the counts.
        for token in (tokens[0], tokens[-1]):
            assert_json_error(api_b.get(f"/views/{token}"), 404, LINK_GONE)
        assert api_b.get("/account").json()["usage"]["activeLinks"] == 0
        listed = api_b.get(f"/files/{file_id}/views?state=active").json()
        assert listed["total"] == 0


def test_a_poll_of_the_access_log_is_one_window_in_either_process(
        pair: tuple[VaultProcess, VaultProcess]) -> None:
    a, b = pair
    account_id, key = a.new_account("Polling Twice Ltd")
    counter = CommandCounter.of(a.data_dir / "db")
    try:
        with a.client(key) as api_a, b.client(key) as api_b:
            file_id = upload_ok(api_a, docs.pdf())["id"]
            now = datetime.now(UTC)
            # A month of views, one every 40 minutes: a walk from a one-second window takes
            # several round trips to reach 200 of them.
            entries = [{"_id": str(uuid.uuid4()), "accountId": account_id, "fileId": file_id,
                        "action": "view", "at": now - timedelta(minutes=40 * n + 1)}
                       for n in range(1000)]
            vault = counter.client["vaultd"]
            vault["access_log"].insert_many(entries)
            # As if uploaded before them: a file's log is read back to its upload only.
            vault["files"].update_one({"_id": file_id},
                                      {"$set": {"createdAt": now - timedelta(days=40)}})

            def poll(api: httpx.Client, query: str = "") -> tuple[list[str], int, int]:
                before = counter.snapshot()
                response = api.get(f"/files/{file_id}/access-log{query}")
                assert response.status_code == 200, response.text
                commands = sent(before, counter.snapshot(), {"access_log", "files"})
                return ([entry["at"] for entry in response.json()],
                        commands["access_log queries"], commands["files update"])

            cold, cold_reads, _ = poll(api_a)
            assert len(cold) == 200 and cold_reads >= 4, cold_reads  # A walked, and kept
            warm, warm_reads, written = poll(api_b)
            assert warm == cold
            assert (warm_reads, written) == (1, 0)  # B started from A's span: one window
            # A log not yet read in full by anyone (one action): B walks, as A did above.
            _, walked, _ = poll(api_b, "?action=view")
            assert walked >= 4, walked
            _, hinted, _ = poll(api_a, "?action=view")
            assert hinted == 1, hinted
    finally:
        counter.close()


def test_uploads_through_both_processes_are_numbered_once_and_listed_newest_first(
        pair: tuple[VaultProcess, VaultProcess]) -> None:
    a, b = pair
    _, key = a.new_account("Numbering Twice Ltd")
    with a.client(key) as api_a, b.client(key) as api_b:
        uploaded = [upload_ok(api, docs.pdf(), name=f"n{turn}.pdf")["id"]
                    for turn, api in enumerate((api_a, api_b) * 3)]
        counter = CommandCounter.of(a.data_dir / "db")
        try:
            numbers = {doc["_id"]: doc["seq"] for doc in counter.client["vaultd"]["files"].find(
                {"_id": {"$in": uploaded}}, {"seq": 1})}
        finally:
            counter.close()
        # One counter in the database: each upload its own number, in the order they came.
        assert [numbers[file_id] for file_id in uploaded] == list(range(1, 7))
        for api in (api_a, api_b):
            listing = api.get("/files?page=1&perPage=4").json()
            assert listing["total"] == 6
            assert [file["id"] for file in listing["files"]] == uploaded[::-1][:4]
            second = api.get("/files?page=2&perPage=4").json()
            assert [file["id"] for file in second["files"]] == uploaded[::-1][4:]


def test_starts_racing_in_one_event_loop_cannot_pass_the_cap_together(
        pair: tuple[VaultProcess, VaultProcess]) -> None:
    # The cap on OIDC sign-ins started from one address (`members.oidc_pending`): eighty starts
    # awaited together, as two processes' would interleave; a count and then an insert would
    # let every one of them see the address below the cap.
    async def race(db: Any) -> list[bool]:
        async def one() -> bool:
            try:
                await oidc_pending.begin(db, oidc_pending.new_browser_secret(), "192.0.2.7")
            except TooManyRequests:
                return False
            return True
        try:
            return list(await asyncio.gather(*(one() for _ in range(80))))
        finally:
            await db.raw("rate_limits").delete_one(
                {"_id": oidc_pending.start_limit_key("192.0.2.7")})
            await db.database["oidc_pending"].delete_many({"ip": "192.0.2.7"})

    assert sorted(pair[0].run_service(race)) == [False] * 20 + [True] * 60
