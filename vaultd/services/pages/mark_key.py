"""The deployment's key for the invisible mark (docs/leak-tracing.md, "A keyed mark").

A page's pixels carry its render id sealed with FF3-1 (NIST SP 800-38G Rev. 1: format-preserving
encryption, here a keyed permutation of the 45-bit ids; the `ff3` package) under a 256-bit key
made once per deployment and stored only wrapped by the master keyring, in `deployment_keys`
(rewrapped with every other key on rotation, `services.storage.rewrap`). The strip still prints the
plain id as the trace code. So knowing the mark's layout does not let anyone forge a mark naming
a view: the value to embed for a given id is unknown without the key, and a value made up
decodes, once opened, to a random id that is no view.

The layout itself (sync template, which chip carries which bit, the chips' polarity) derives
from a **layout subkey**, HMAC-SHA256(mark key, "vaultd mark layout"): one way, so the subkey
does not give the FF3 key. The render workers get the sealed value and the layout subkey only
(`WatermarkSpec.mark_value`, `mark_layout`; the trace task's `layout_key`); the mark key stays
in vaultd and vault-admin. A subkey leaking from a (compromised) worker helps washing marks off,
not forging them (docs/security.md).

The placement mark's seeds (a page view's: HMAC-SHA256 under a third subkey, 16 bytes) reach a
worker one page view at a time (`WatermarkSpec.placement_seed`); the subkey stays here.

A deployment whose mark key predates the keyed layout has served pages in the published layout
(the seed in `render.forensic.layout`). Its key record is stamped `publishedLayoutUntil` the first
time this version loads it, and its traces read an image in the keyed layout, then, if that finds
nothing, in the published one (`MarkCipher.trace_layouts`): a page leaked from before the upgrade
still traces. A deployment made since never reads the published layout.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from ff3 import FF3Cipher
from pymongo.errors import DuplicateKeyError

from render.forensic_wire.evidence import SEED_BYTES
from render.forensic_wire.trace_codes import ID_BITS
from vaultd.crypto.keyring import MasterKeyring, WrappedKey
from vaultd.db import Db
from vaultd.timefmt import utcnow

MARK_KEY_ID = "trace-mark"
_BINDING = "deployment:trace-mark"  # what the wrap is bound to (the keyring's AAD)
_NO_ACCOUNT = "-"
_KEY_BYTES = 32  # AES-256
_TWEAK = "00" * 7  # FF3-1's 56-bit tweak: one permutation for the whole deployment
_LAYOUT_CONTEXT = b"vaultd mark layout"
_PLACEMENT_CONTEXT = b"vaultd placement mark"
_PAGE_PRINT_CONTEXT = b"vaultd page print"
KEYED_LAYOUT = "keyed-v1"  # the layout a key record's pages are marked in (absent: published)


@dataclass(frozen=True)
class MarkCipher:
    """The keyed permutation of render ids: `seal` for the pixels, `open` for a decoded mark;
    `layout_key`, the subkey the workers lay the mark out (and read it) with; and
    `placement_seed`, each page view's seed for the placement mark."""

    _cipher: FF3Cipher
    layout_key: bytes
    _placement_key: bytes
    published_until: datetime | None = None  # pages before it carry the published layout

    @classmethod
    def from_key(cls, key: bytes, published_until: datetime | None = None) -> MarkCipher:
        return cls(FF3Cipher.withCustomAlphabet(key.hex(), _TWEAK, "01"),
                   hmac.new(key, _LAYOUT_CONTEXT, hashlib.sha256).digest(),
                   hmac.new(key, _PLACEMENT_CONTEXT, hashlib.sha256).digest(), published_until)

    @property
    def trace_layouts(self) -> tuple[bytes | None, ...]:
        """The layouts a trace reads an image in, in order (None: the published layout)."""
        return (self.layout_key,) if self.published_until is None else (self.layout_key, None)

    def __repr__(self) -> str:
        return "MarkCipher(<keys hidden>)"  # never a key in a log or a traceback

    def seal(self, render_id: int) -> int:
        return int(self._cipher.encrypt(format(render_id, f"0{ID_BITS}b")), 2)

    def open(self, value: int) -> int:
        return int(self._cipher.decrypt(format(value, f"0{ID_BITS}b")), 2)

    def placement_seed(self, render_id: int) -> bytes:
        """The seed of the render's placement field (`render.forensic.placement`): a worker
        given one page view's seed learns nothing of another's (HMAC under a subkey that no
        worker holds), so it cannot place words naming another view."""
        message = render_id.to_bytes(8, "big")
        return hmac.new(self._placement_key, message, hashlib.sha256).digest()[:SEED_BYTES]

    @property
    def page_print_key(self) -> bytes:
        """The key of the pages' prints (`render.forensic_wire.page_print`), under the
        placement subkey (its message is no render id's 8 bytes): the stored prints say
        nothing of a page without it."""
        return hmac.new(self._placement_key, _PAGE_PRINT_CONTEXT, hashlib.sha256).digest()


async def mark_cipher(db: Db, keyring: MasterKeyring) -> MarkCipher:
    """The deployment's cipher; its key is made and stored on first use (in any process: the
    first insert wins, the others read it)."""
    doc = await db.deployment_keys.find_one({"_id": MARK_KEY_ID})
    if doc is None:
        key = secrets.token_bytes(_KEY_BYTES)
        wrapped = keyring.wrap(key, file_id=_BINDING, account_id=_NO_ACCOUNT)
        try:
            await db.deployment_keys.insert_one({"_id": MARK_KEY_ID, "key": wrapped.to_doc(),
                                                 "layout": KEYED_LAYOUT})
            return MarkCipher.from_key(key)
        except DuplicateKeyError:
            doc = await db.deployment_keys.find_one({"_id": MARK_KEY_ID})
            assert doc is not None  # another process inserted it
    if "layout" not in doc:  # made before the keyed layout: its pages so far are published
        await db.deployment_keys.update_one(
            {"_id": MARK_KEY_ID, "layout": {"$exists": False}},
            {"$set": {"layout": KEYED_LAYOUT, "publishedLayoutUntil": utcnow()}})
        doc = await db.deployment_keys.find_one({"_id": MARK_KEY_ID})
        assert doc is not None
    raw = keyring.unwrap(WrappedKey.from_doc(doc["key"]), file_id=_BINDING,
                         account_id=_NO_ACCOUNT)
    return MarkCipher.from_key(raw, doc.get("publishedLayoutUntil"))


async def rewrap_mark_key(db: Db, ring: MasterKeyring) -> int:
    """The mark key under the ring's current master key (after a rotation); 1 if rewrapped."""
    doc = await db.deployment_keys.find_one({"_id": MARK_KEY_ID})
    if doc is None or doc["key"].get("key_id") == ring.current_id:
        return 0
    new = ring.rewrap(WrappedKey.from_doc(doc["key"]), file_id=_BINDING, account_id=_NO_ACCOUNT)
    result = await db.deployment_keys.update_one({"_id": MARK_KEY_ID, "key": doc["key"]},
                                                 {"$set": {"key": new.to_doc()}})
    return result.modified_count
