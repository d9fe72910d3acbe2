"""The deployment's key for hashing email codes (HMAC-SHA256), stored like the mark key: made
once, kept only wrapped by the master keyring in `deployment_keys`. The link gates' codes and
the members' sign-in codes both use it, each hashing its own prefix with the code.

A six-digit code has a million values: a plain hash of it would be reversed at once by whoever
reads the database. Keyed, it cannot be without the master key. Codes live 10 minutes, so a key
whose master key left the ring (a finished rotation) is simply replaced: codes sent under the
old one fail and readers ask for a new code."""

from __future__ import annotations

import logging
import secrets

from pymongo.errors import DuplicateKeyError

from vaultd.crypto.keyring import KeyUnavailable, MasterKeyring, WrappedKey
from vaultd.db import Db

log = logging.getLogger("vaultd.gates")

CODE_KEY_ID = "email-codes"
_BINDING = "deployment:email-codes"
_NO_ACCOUNT = "-"


async def code_key(db: Db, keyring: MasterKeyring) -> bytes:
    doc = await db.deployment_keys.find_one({"_id": CODE_KEY_ID})
    if doc is not None:
        try:
            return keyring.unwrap(WrappedKey.from_doc(doc["key"]), file_id=_BINDING,
                                  account_id=_NO_ACCOUNT)
        except KeyUnavailable:
            log.warning("the email-code key's master key is gone: a new key is made")
            await db.deployment_keys.delete_one({"_id": CODE_KEY_ID, "key": doc["key"]})
    key = secrets.token_bytes(32)
    wrapped = keyring.wrap(key, file_id=_BINDING, account_id=_NO_ACCOUNT)
    try:
        await db.deployment_keys.insert_one({"_id": CODE_KEY_ID, "key": wrapped.to_doc()})
        return key
    except DuplicateKeyError:  # another process made it first: theirs is the key
        return await code_key(db, keyring)
