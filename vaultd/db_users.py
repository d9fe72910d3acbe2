"""Creating the embedded database's only user (see vaultd.db_credentials)."""

from __future__ import annotations

import logging

from pymongo import MongoClient
from pymongo.errors import OperationFailure

from vaultd.db_credentials import DbCredentials

log = logging.getLogger("vaultd")


def create_only_user(uri: str, credentials: DbCredentials) -> None:
    """Create (or reset) our user; drop any other, which only someone else can have added."""
    client: MongoClient[dict[str, object]] = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    try:
        admin = client.admin
        try:
            admin.command("createUser", credentials.user, pwd=credentials.password,
                          roles=["root"])
        except OperationFailure:  # already there (an earlier start stopped half way)
            admin.command("updateUser", credentials.user, pwd=credentials.password)
        # SecantusDB has no usersInfo forAllDBs: ask every database we can name.
        names = {"admin", "vaultd", "test", *client.list_database_names()}
        for name in sorted(names):
            database = client[name]
            for user in database.command("usersInfo", 1).get("users", []):
                if (name, user.get("user")) != ("admin", credentials.user):
                    database.command("dropUser", user["user"])
                    log.warning("embedded database: dropped unknown user %r of %r",
                                user["user"], name)
    finally:
        client.close()
