"""Members through the services on a real embedded SecantusDB: invite, list, change a role,
remove; the exact refusals (400, 404, 409, 403 naming the role); the last admin kept under
concurrent demotions and removals; each change in the activity log with its actor; the epoch
that ends a member's sessions raised on every role change and removal."""

from __future__ import annotations

import asyncio

import pytest

from tests import recorded_database
from vaultd.db import Db
from vaultd.errors import Conflict, Forbidden, InvalidRequest, NotFound
from vaultd.services.accounts.accounts import create_account
from vaultd.services.members import activity, members
from vaultd.services.members.actor import Actor, operator
from vaultd.services.members.roles import Role

pytestmark = pytest.mark.slow  # starts its own embedded database
server, recorder, db = (recorded_database.server, recorded_database.recorder,
                        recorded_database.db)  # this module's fixtures

LAST_ADMIN = "an account keeps at least one admin"


async def new_account(db: Db) -> str:
    return (await create_account(db, "Acme", "pro")).id


def as_member(account_id: str, role: Role, member_id: str = "m-1") -> Actor:
    return Actor(account_id=account_id, role=role, kind="member", id=member_id,
                 label=f"{role.value}@example.com")


async def test_an_invited_member_is_normalised_listed_and_logged(db: Db) -> None:
    account_id = await new_account(db)
    doc = await members.add_member(db, operator(account_id), "  Ada.Lovelace@Example.COM ",
                                   role=Role.AUDITOR, name="Ada")
    assert (doc["email"], doc["role"], doc["state"], doc["sessionEpoch"]) == (
        "ada.lovelace@example.com", "auditor", "invited", 0)
    listed = await members.list_members(db, account_id)
    assert [m["email"] for m in listed] == ["ada.lovelace@example.com"]
    page = await activity.page(db, account_id)
    assert [(e["action"], e["target"], e["actor"], e.get("detail")) for e in page.entries] == [
        ("member.added", "ada.lovelace@example.com",
         {"kind": "operator", "id": "operator", "label": "operator"}, {"role": "auditor"})]


@pytest.mark.parametrize(("email", "message"), [
    ("not an address", "email must be a valid email address"),
    ("", "email must be a valid email address"),
    (None, "email must be a valid email address"),
])
async def test_bad_emails_are_refused(db: Db, email: object, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        members.parse_email(email)
    assert refused.value.message == message


def test_bad_roles_and_names_are_refused() -> None:
    for role in ("owner", "", None, 1, "ADMIN"):
        with pytest.raises(InvalidRequest) as refused:
            members.parse_role(role)
        assert refused.value.message == "role must be one of admin, member, auditor"
    for name in ("x" * 201, 7, None):
        with pytest.raises(InvalidRequest) as refused:
            members.parse_name(name)
        assert refused.value.message == "name must be text of at most 200 characters"
    assert members.parse_name("  Ada\n\tLovelace\x00 ") == "Ada Lovelace\ufffd"


async def test_a_duplicate_is_a_conflict_and_a_removed_member_comes_back(db: Db) -> None:
    account_id = await new_account(db)
    admin = operator(account_id)
    await members.add_member(db, admin, "root@example.com", role=Role.ADMIN)
    first = await members.add_member(db, admin, "bob@example.com", role=Role.MEMBER)
    with pytest.raises(Conflict) as duplicate:
        await members.add_member(db, admin, "BOB@example.com", role=Role.AUDITOR)
    assert duplicate.value.message == "a member with this email already belongs to this account"
    await members.remove_member(db, admin, first["_id"])
    assert [m["email"] for m in await members.list_members(db, account_id)] == [
        "root@example.com"]
    again = await members.add_member(db, admin, "bob@example.com", role=Role.AUDITOR)
    assert (again["_id"], again["state"], again["role"]) == (first["_id"], "invited", "auditor")
    assert again["sessionEpoch"] == 2  # removed (1), then invited again (2): old sessions end


async def test_a_person_belongs_to_several_accounts(db: Db) -> None:
    first, second, third = [await new_account(db) for _ in range(3)]
    for account_id in (first, second, third):
        await members.add_member(db, operator(account_id), "Pat@Example.com", role=Role.MEMBER)
    gone = await members.member_by_email(db, third, "pat@example.com")
    await members.remove_member(db, operator(third), gone["_id"])
    found = await members.memberships(db, "PAT@example.com")
    assert [m["accountId"] for m in found] == sorted([first, second])


async def test_another_accounts_member_is_not_found(db: Db) -> None:
    mine, theirs = await new_account(db), await new_account(db)
    other = await members.add_member(db, operator(theirs), "x@example.com", role=Role.MEMBER)
    for attempt in (members.set_role(db, operator(mine), other["_id"], Role.ADMIN),
                    members.remove_member(db, operator(mine), other["_id"])):
        with pytest.raises(NotFound) as missing:
            await attempt
        assert missing.value.message == "member not found"
    assert (await members.get_member(db, theirs, other["_id"]))["role"] == "member"


async def test_only_an_admin_manages_members_whatever_the_service_is_called_with(db: Db) -> None:
    account_id = await new_account(db)
    target = await members.add_member(db, operator(account_id), "t@example.com",
                                      role=Role.MEMBER)
    for role in (Role.MEMBER, Role.AUDITOR):
        caller = as_member(account_id, role, target["_id"])  # escalating their own role
        for attempt in (members.set_role(db, caller, target["_id"], Role.ADMIN),
                        members.add_member(db, caller, "new@example.com", role=Role.ADMIN),
                        members.remove_member(db, caller, target["_id"])):
            with pytest.raises(Forbidden) as refused:
                await attempt
            assert refused.value.message == (
                f"the {role.value} role cannot manage members, API keys, webhooks or branding")
    assert (await members.get_member(db, account_id, target["_id"]))["role"] == "member"
    assert len(await members.list_members(db, account_id)) == 1


async def test_the_last_admin_can_be_neither_demoted_nor_removed(db: Db) -> None:
    account_id = await new_account(db)
    admin = operator(account_id)
    only = await members.add_member(db, admin, "only@example.com", role=Role.ADMIN)
    for attempt in (members.set_role(db, admin, only["_id"], Role.MEMBER),
                    members.remove_member(db, admin, only["_id"])):
        with pytest.raises(Conflict) as refused:
            await attempt
        assert refused.value.message == LAST_ADMIN
    kept = await members.get_member(db, account_id, only["_id"])
    assert (kept["role"], kept["state"], kept["sessionEpoch"]) == ("admin", "invited", 0)
    # With a second admin, either may go.
    second = await members.add_member(db, admin, "second@example.com", role=Role.MEMBER)
    await members.set_role(db, admin, second["_id"], Role.ADMIN)
    demoted = await members.set_role(db, admin, only["_id"], Role.AUDITOR)
    assert (demoted["role"], demoted["sessionEpoch"]) == ("auditor", 1)
    with pytest.raises(Conflict):
        await members.remove_member(db, admin, second["_id"])


async def test_concurrent_demotions_of_the_last_two_admins_leave_one(db: Db) -> None:
    for _ in range(5):
        account_id = await new_account(db)
        admin = operator(account_id)
        a = await members.add_member(db, admin, "a@example.com", role=Role.ADMIN)
        b = await members.add_member(db, admin, "b@example.com", role=Role.ADMIN)
        results = await asyncio.gather(
            members.set_role(db, admin, a["_id"], Role.MEMBER),
            members.remove_member(db, admin, b["_id"]), return_exceptions=True)
        refused = [r for r in results if isinstance(r, Conflict)]
        assert len(refused) == 1 and refused[0].message == LAST_ADMIN, results
        admins = [m for m in await members.list_members(db, account_id) if m["role"] == "admin"]
        assert len(admins) == 1


async def test_many_concurrent_demotions_leave_exactly_one_admin(db: Db) -> None:
    account_id = await new_account(db)
    admin = operator(account_id)
    added = [await members.add_member(db, admin, f"a{n}@example.com", role=Role.ADMIN)
             for n in range(6)]
    results = await asyncio.gather(*(members.set_role(db, admin, doc["_id"], Role.AUDITOR)
                                     for doc in added), return_exceptions=True)
    assert sum(isinstance(r, Conflict) for r in results) == 1, results
    admins = [m for m in await members.list_members(db, account_id) if m["role"] == "admin"]
    assert len(admins) == 1
    account = await db.accounts.find_one({"_id": account_id})
    assert account is not None and account["adminCount"] == 1


async def test_each_change_is_logged_newest_first_with_its_actor(db: Db) -> None:
    account_id = await new_account(db)
    admin = operator(account_id)
    await members.add_member(db, admin, "root@example.com", role=Role.ADMIN)
    bob = await members.add_member(db, admin, "bob@example.com", role=Role.MEMBER)
    by_root = as_member(account_id, Role.ADMIN, "root-id")
    await members.set_role(db, by_root, bob["_id"], Role.AUDITOR, ip="203.0.113.9")
    await members.set_role(db, by_root, bob["_id"], Role.AUDITOR)  # no change: nothing logged
    await members.remove_member(db, by_root, bob["_id"])
    entries = (await activity.page(db, account_id)).entries
    assert [(e["action"], e["actor"]["id"], e.get("detail"), e.get("ip")) for e in entries] == [
        ("member.removed", "root-id", None, None),
        ("member.role_changed", "root-id", {"from": "member", "to": "auditor"}, "203.0.113.9"),
        ("member.added", "operator", {"role": "member"}, None),
        ("member.added", "operator", {"role": "admin"}, None),
    ]


async def test_an_unknown_activity_action_is_a_programming_error(db: Db) -> None:
    account_id = await new_account(db)
    with pytest.raises(ValueError, match=r"unknown activity action 'member\.promoted'"):
        await activity.record(db, operator(account_id), "member.promoted")
    assert (await activity.page(db, account_id)).entries == []
