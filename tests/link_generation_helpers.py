"""What the link-generation tests share (the revoke-all's, the file deletion's and the background
steps'): a tally of the commands sent (the module fixtures `tally`, and `recorder`, which
`tests.recorded_database`'s `db` listens through: a module takes both by name), an account
with a file as an upload leaves it, links made through the service, and how many of them a
page would be served for."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from pymongo import monitoring

from tests.scale_seed import _file
from vaultd.db import Db
from vaultd.secrets import digest
from vaultd.services.accounts import accounts
from vaultd.services.accounts.accounts import Account
from vaultd.services.links import links
from vaultd.timefmt import utcnow

DATA_COMMANDS = {"find", "aggregate", "count", "insert", "update", "delete", "findAndModify"}


@dataclass
class CommandTally(monitoring.CommandListener):
    """Every read and write sent while `recording` is on, by name and collection."""

    recording: bool = False
    sent: Counter[str] = field(default_factory=Counter)

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.recording and event.command_name in DATA_COMMANDS:
            self.sent[f"{event.command_name} {event.command.get(event.command_name)}"] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture(scope="module")
def tally() -> CommandTally:
    return CommandTally()


@pytest.fixture(scope="module")
def recorder(tally: CommandTally) -> CommandTally:
    return tally  # what recorded_database's `db` listens through


async def account_with_file(db: Db, plan: str = "business") -> tuple[Account, str]:
    account = await accounts.create_account(db, "Revoked Co", plan)
    return account, await add_file(db, account)


async def add_file(db: Db, account: Account) -> str:
    doc: dict[str, Any] = _file(account.id, utcnow())
    del doc["linkCount"]  # as an upload writes it: the count appears with the first link
    await db.raw("files").insert_one(doc)
    await db.accounts.update_one({"_id": account.id},
                                 {"$inc": {"usage.documents": 1, "fileSeq": 1}})
    return str(doc["_id"])


async def new_links(db: Db, account: Account, file_id: str, count: int) -> list[str]:
    request = links.LinkRequest(file_id, "kim@example.com", "Kim", 3600)
    return [(await links.create_link(db, account, request))[0] for _ in range(count)]


async def live_by_truth(db: Db, tokens: list[str]) -> int:
    """How many of these links a page would be served for now, each read as pages read it."""
    found = [await links.read_link(db, {"hash": digest(token)}) for token in tokens]
    return sum(link is not None and links.is_live(link) for link in found)
