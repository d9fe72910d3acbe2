"""The sign-in function and sessions against a real embedded SecantusDB: who gets a session,
that a request's session is resolved in one read, and that it ends with its member."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests import recorded_database
from tests.db_reads import QueryRecorder
from tests.member_records import change_member, insert_member
from vaultd.config import load_settings
from vaultd.db import Db
from vaultd.secrets import digest
from vaultd.services.accounts.accounts import create_account
from vaultd.services.common import rolling_limits
from vaultd.services.members import sessions
from vaultd.services.members.sign_in import sign_in_verified_email
from vaultd.timefmt import utcnow

pytestmark = pytest.mark.slow  # its own database server

SETTINGS = load_settings(env={})
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures


async def sign_in(db: Db, email: str) -> sessions.NewSession | None:
    return await sign_in_verified_email(db, SETTINGS, email=email, method="code",
                                        ip="192.0.2.1", user_agent="pytest")


async def test_a_stranger_gets_no_session_and_a_removed_member_none_either(db: Db) -> None:
    account = await create_account(db, "Strangers Ltd")
    gone = await insert_member(db, account.id, "gone@stranger.example")
    await change_member(db, gone, state="removed")
    assert await sign_in(db, "nobody@stranger.example") is None
    assert await sign_in(db, "gone@stranger.example") is None
    assert await db.member_sessions.count_documents({"email": {"$regex": "stranger"}}) == 0


async def test_an_invited_member_signs_in_turns_active_and_has_their_one_account_chosen(
        db: Db) -> None:
    account = await create_account(db, "Invited Co")
    member = await insert_member(db, account.id, "new@invited.example", state="invited",
                                 role="auditor")
    session = await sign_in(db, "New@Invited.example")
    assert session is not None and session.chosen_account_id == account.id
    assert [c.as_json() for c in session.accounts] == [
        {"accountId": account.id, "name": "Invited Co", "role": "auditor"}]
    stored = await db.members.find_one({"_id": member})
    assert stored is not None and stored["state"] == "active"
    # Only the hash of the id is kept; neither the id nor the CSRF token is in the record.
    record = await db.member_sessions.find_one({"_id": digest(session.session_id)})
    assert record is not None
    assert session.session_id not in str(record) and session.csrf_token not in str(record)
    signed_in = await sessions.resolve(db, SETTINGS, session.session_id)
    assert signed_in is not None and signed_in.actor is not None
    assert (signed_in.actor.kind, signed_in.actor.role.value, signed_in.actor.id) == (
        "member", "auditor", member)
    assert signed_in.csrf_token == session.csrf_token


async def test_a_session_is_resolved_in_one_read_and_ends_with_its_members_epoch(
        db: Db, recorder: QueryRecorder) -> None:
    account = await create_account(db, "Epoch Inc")
    member = await insert_member(db, account.id, "e@epoch.example")
    session = await sign_in(db, "e@epoch.example")
    assert session is not None
    with recorder.recorded():
        assert await sessions.resolve(db, SETTINGS, session.session_id) is not None
    assert [q.collection for q in recorder.queries] == ["member_sessions"]
    await change_member(db, member, role="auditor")
    assert await sessions.resolve(db, SETTINGS, session.session_id) is None
    assert await db.member_sessions.find_one({"_id": digest(session.session_id)}) is None


async def test_a_person_in_two_accounts_chooses_and_the_idle_session_ends(db: Db) -> None:
    first = await create_account(db, "Alpha")
    second = await create_account(db, "Beta")
    await insert_member(db, first.id, "two@accounts.example")
    await insert_member(db, second.id, "two@accounts.example", role="member")
    session = await sign_in(db, "two@accounts.example")
    assert session is not None and session.chosen_account_id is None
    signed_in = await sessions.resolve(db, SETTINGS, session.session_id)
    assert signed_in is not None and signed_in.actor is None
    await sessions.choose_account(db, signed_in, second.id)
    chosen = await sessions.resolve(db, SETTINGS, session.session_id)
    assert chosen is not None and chosen.actor is not None
    assert (chosen.account_id, chosen.actor.role.value) == (second.id, "member")
    idle = timedelta(minutes=SETTINGS.auth_session_idle_minutes)
    await db.member_sessions.update_one({"_id": digest(session.session_id)},
                                        {"$set": {"lastSeenAt": utcnow() - idle}})
    assert await sessions.resolve(db, SETTINGS, session.session_id) is None


async def test_a_rolling_limit_refuses_the_event_past_it_until_the_oldest_leaves(db: Db) -> None:
    assert [await rolling_limits.take(db, "test:burst", 3, 3600) for _ in range(4)] == [
        True, True, True, False]
    raw = db.raw(rolling_limits.COLLECTION)
    record = await raw.find_one({"_id": "test:burst"})
    assert record is not None and len(record["hits"]) == 3
    oldest = record["hits"][0]
    await raw.update_one({"_id": "test:burst"},
                         {"$set": {"hits.0": oldest - timedelta(hours=2)}})
    assert await rolling_limits.take(db, "test:burst", 3, 3600)
    assert not await rolling_limits.take(db, "test:burst", 3, 3600)


async def test_a_session_ends_with_its_account(db: Db) -> None:
    account = await create_account(db, "Short Lived")
    await insert_member(db, account.id, "last@short.example")
    session = await sign_in(db, "last@short.example")
    assert session is not None
    assert await sessions.resolve(db, SETTINGS, session.session_id) is not None
    await db.accounts.delete_one({"_id": account.id})
    assert await sessions.resolve(db, SETTINGS, session.session_id) is None
    # And a malformed or unknown id reads nothing.
    assert await sessions.resolve(db, SETTINGS, "not a token") is None
    assert await sessions.resolve(db, SETTINGS, "A" * 43) is None
