"""The checkpoint signing keys, kept as the master key keeps data keys.

Each key is an Ed25519 seed stored only wrapped by the master keyring (rewrapped with the
others on a master-key rotation), in `audit_keys`. Rotating makes a new current key and
retires the old one: its wrapped seed is deleted, its public half stays published
(`GET /v1/audit/keys`), so the checkpoints it signed still verify and no new ones can be.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from vaultd.crypto.keyring import MasterKeyring, WrappedKey
from vaultd.db import Db
from vaultd.records.audit import AuditKeyDoc
from vaultd.services.audit import notes
from vaultd.timefmt import iso_utc, utcnow

_NO_ACCOUNT = "-"
_SEED_BYTES = 32


def _binding(key_id: str) -> str:
    return f"deployment:audit-signing:{key_id}"  # the wrap is bound to this key alone


@dataclass(frozen=True, repr=False)
class Signer:
    """The current signing key; its seed never appears in a repr or a log."""

    key_id: str
    name: str
    private_key: Ed25519PrivateKey

    def __repr__(self) -> str:
        return f"Signer({self.name}+{self.key_id}, <private key hidden>)"

    def sign(self, text: str) -> str:
        return notes.sign(text, self.name, self.private_key)


def _new_key_doc(keyring: MasterKeyring, name: str) -> tuple[AuditKeyDoc, Ed25519PrivateKey]:
    seed = secrets.token_bytes(_SEED_BYTES)
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes_raw()
    key_id = notes.key_id(name, public).hex()
    wrapped = keyring.wrap(seed, file_id=_binding(key_id), account_id=_NO_ACCOUNT)
    doc: AuditKeyDoc = {"_id": key_id, "name": name, "publicKey": public,
                        "createdAt": utcnow(), "key": wrapped.to_doc()}
    return doc, private


async def _current_doc(db: Db) -> AuditKeyDoc | None:
    # Few keys ever exist (one per rotation): this reads them all, newest first.
    async for doc in db.audit_keys.find({}).sort("createdAt", DESCENDING):
        if "key" in doc:
            return doc
    return None


async def current_signer(db: Db, keyring: MasterKeyring, name: str) -> Signer:
    """The current key; made on first use (in any process: the first insert wins)."""
    doc = await _current_doc(db)
    if doc is None:
        new, private = _new_key_doc(keyring, name)
        try:
            await db.audit_keys.insert_one(new)
            return Signer(new["_id"], name, private)
        except DuplicateKeyError:
            doc = await _current_doc(db)
            assert doc is not None
    seed = keyring.unwrap(WrappedKey.from_doc(doc["key"]), file_id=_binding(doc["_id"]),
                          account_id=_NO_ACCOUNT)
    return Signer(doc["_id"], doc["name"], Ed25519PrivateKey.from_private_bytes(seed))


async def rotate(db: Db, keyring: MasterKeyring, name: str) -> AuditKeyDoc:
    """A new current key; every older one retired (its seed deleted, its public key kept)."""
    new, _private = _new_key_doc(keyring, name)
    await db.audit_keys.insert_one(new)
    await db.audit_keys.update_many({"_id": {"$ne": new["_id"]}, "key": {"$exists": True}},
                                    {"$unset": {"key": ""}, "$set": {"retiredAt": utcnow()}})
    return new


async def rewrap(db: Db, ring: MasterKeyring) -> int:
    """The current signing key under the ring's current master key; 1 if rewrapped."""
    doc = await _current_doc(db)
    if doc is None or doc["key"].get("key_id") == ring.current_id:
        return 0
    new = ring.rewrap(WrappedKey.from_doc(doc["key"]), file_id=_binding(doc["_id"]),
                      account_id=_NO_ACCOUNT)
    result = await db.audit_keys.update_one({"_id": doc["_id"], "key": doc["key"]},
                                            {"$set": {"key": new.to_doc()}})
    return result.modified_count


def key_json(doc: AuditKeyDoc) -> dict[str, Any]:
    out: dict[str, Any] = {"keyId": doc["_id"], "name": doc["name"],
                           "verifierKey": notes.verifier_key(doc["name"], doc["publicKey"]),
                           "createdAt": iso_utc(doc["createdAt"]), "current": "key" in doc}
    if "retiredAt" in doc:
        out["retiredAt"] = iso_utc(doc["retiredAt"])
    return out


async def published(db: Db) -> list[dict[str, Any]]:
    """Every key, current and retired, oldest first."""
    return [key_json(doc) async for doc in db.audit_keys.find({}).sort("createdAt", 1)]
