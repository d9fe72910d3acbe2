"""Master keys and the data-key envelope.

Every blob has its own random data key (see blob_format). The data key is stored in the file's
database record wrapped (AES-256-GCM) under a master key; the master keys live outside the
database, in a key file (mode 0600) or the VAULTD_MASTER_KEY environment variable.

A keyring is an ordered list of `<id>:<base64url 32 bytes>` entries. The first entry is current
and wraps new data keys; older entries stay so that records wrapped under them still unwrap until
they have been rewrapped. The wrap's associated data binds the key id, the file id and the
account id, so a wrapped key copied onto another record does not unwrap.

Key bytes never appear in repr(), str() or any error message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from vaultd.crypto.key_files import permission_warnings, write_atomic

__all__ = [
    "ENV_VAR",
    "KeyUnavailable",
    "KeyringError",
    "MasterKeyring",
    "WrappedKey",
    "WrappedKeyCorrupt",
    "aead_open",
    "aead_seal",
    "wrap_aad",
]

ENV_VAR = "VAULTD_MASTER_KEY"
KEY_SIZE = 32
NONCE_SIZE = 12
TAG_SIZE = 16
DATA_KEY_SIZE = 32
KEY_ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_B64_KEY = re.compile(r"[A-Za-z0-9_-]{43}")  # 32 bytes, base64url without padding
_AAD_PREFIX = b"vaultd/data-key/v1\x00"
_FINGERPRINT_LABEL = b"vaultd/master-key-fingerprint/v1"
_DOC_VERSION = 1
_FILE_HEADER = (
    "# vaultd master keyring: <id>:<base64url 32-byte key>, one per line.\n"
    "# The FIRST entry is current (wraps new data keys); keep older ones until every file\n"
    "# has been rewrapped. Losing a key loses every file wrapped under it: back this file up.\n"
)


class KeyringError(Exception):
    """The keyring could not be loaded or changed. The message is one line, without key bytes."""


class KeyUnavailable(Exception):
    """A wrapped data key cannot be unwrapped with this keyring (its master key id is unknown)."""


class WrappedKeyCorrupt(KeyUnavailable):
    """The wrapped data key failed authentication: corrupted, or copied from another record."""


# --- the AEAD step (kept separate so Wycheproof vectors exercise exactly this code) ------------


def aead_seal(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-256-GCM with a 96-bit nonce; returns ciphertext || 16-byte tag."""
    _check_aead_params(key, nonce)
    return AESGCM(key).encrypt(nonce, plaintext, aad)


def aead_open(key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
    """Inverse of aead_seal; raises cryptography.exceptions.InvalidTag on any mismatch."""
    _check_aead_params(key, nonce)
    if len(ciphertext) < TAG_SIZE:
        raise InvalidTag()
    return AESGCM(key).decrypt(nonce, ciphertext, aad)


def _check_aead_params(key: bytes, nonce: bytes) -> None:
    # Only AES-256 with 12-byte nonces is ever used: refuse anything else rather than adapt.
    if len(key) != KEY_SIZE:
        raise ValueError(f"AEAD key must be {KEY_SIZE} bytes")
    if len(nonce) != NONCE_SIZE:
        raise ValueError(f"AEAD nonce must be {NONCE_SIZE} bytes")


def wrap_aad(key_id: str, file_id: str, account_id: str) -> bytes:
    """Associated data binding a wrapped data key to its master key id, file and account."""
    for name, value in (("file_id", file_id), ("account_id", account_id)):
        # NUL separates the fields; allowing it would let two different records share an AAD.
        if "\x00" in value:
            raise ValueError(f"{name} must not contain NUL")
    return (_AAD_PREFIX + key_id.encode() + b"\x00" + file_id.encode() + b"\x00"
            + account_id.encode())


# --- the envelope -------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class WrappedKey:
    """A data key wrapped under master key `key_id`; stored in the file record."""

    key_id: str
    nonce: bytes
    ciphertext: bytes

    def __repr__(self) -> str:
        return (f"WrappedKey(key_id={self.key_id!r}, nonce=<{len(self.nonce)} bytes>, "
                f"ciphertext=<{len(self.ciphertext)} bytes>)")

    __str__ = __repr__

    def to_doc(self) -> dict[str, Any]:
        """MongoDB sub-document; bytes stay bytes (BSON binary)."""
        return {"v": _DOC_VERSION, "key_id": self.key_id, "nonce": self.nonce,
                "ciphertext": self.ciphertext}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> WrappedKey:
        """Parse `to_doc` output; WrappedKeyCorrupt if the document is malformed."""
        try:
            key_id, nonce, ciphertext = doc["key_id"], doc["nonce"], doc["ciphertext"]
            version = doc.get("v")
        except (KeyError, TypeError, AttributeError):
            raise WrappedKeyCorrupt("wrapped data key document is malformed") from None
        if version != _DOC_VERSION or not isinstance(key_id, str) \
                or not isinstance(nonce, (bytes, bytearray)) \
                or not isinstance(ciphertext, (bytes, bytearray)):
            raise WrappedKeyCorrupt("wrapped data key document is malformed")
        # bson.Binary is a bytes subclass; normalise so equality and hashing behave.
        return cls(key_id=key_id, nonce=bytes(nonce), ciphertext=bytes(ciphertext))


# --- the keyring --------------------------------------------------------------------------------


def new_key_id(existing: Iterable[str] = ()) -> str:
    """`mk-YYYYMMDD-xxxxxx` (UTC date, random suffix), unique within `existing`."""
    taken = set(existing)
    while True:
        key_id = f"mk-{datetime.now(UTC):%Y%m%d}-{secrets.token_hex(3)}"
        if key_id not in taken:
            return key_id


def _encode_key(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).rstrip(b"=").decode("ascii")


def _decode_key(text: str) -> bytes | None:
    """32 bytes from canonical unpadded base64url, or None."""
    if not _B64_KEY.fullmatch(text):
        return None
    try:
        key = base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError):
        return None
    # Reject non-canonical encodings (stray low bits in the last character).
    return key if _encode_key(key) == text else None


def _split_entries(text: str) -> list[str]:
    """Entries separated by commas or newlines; blank and '#' lines skipped."""
    entries: list[str] = []
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        entries.extend(piece.strip() for piece in line.split(",") if piece.strip())
    return entries


def _parse_entry(entry: str, number: int, where: str) -> tuple[str, bytes]:
    # Messages name the entry by position only: an id-shaped string might be a misplaced key.
    key_id, colon, encoded = entry.partition(":")
    key_id, encoded = key_id.strip(), encoded.strip()
    if not colon:
        raise KeyringError(f"{where}: entry {number} is not of the form <id>:<base64url key>")
    if not KEY_ID_PATTERN.fullmatch(key_id):
        raise KeyringError(f"{where}: entry {number} has an invalid key id "
                           "(expected 1-64 characters of A-Z a-z 0-9 _ . -)")
    key = _decode_key(encoded)
    if key is None:
        raise KeyringError(f"{where}: entry {number} is not 32 bytes of base64url "
                           "(43 characters, no padding)")
    return key_id, key


class MasterKeyring:
    """Ordered master keys; the first is current. Immutable: changes return a new ring."""

    def __init__(self, entries: Iterable[tuple[str, bytes]], *,
                 warnings: Iterable[str] = (), created: bool = False) -> None:
        self._entries = tuple((key_id, bytes(key)) for key_id, key in entries)
        self._keys = dict(self._entries)
        if not self._entries:
            raise KeyringError("master keyring is empty")
        if len(self._keys) != len(self._entries):
            raise KeyringError("master keyring has duplicate key ids")
        for key_id, key in self._entries:
            if not KEY_ID_PATTERN.fullmatch(key_id) or len(key) != KEY_SIZE:
                raise KeyringError("master keyring entry has an invalid id or key size")
        self.warnings = tuple(warnings)  # e.g. loose file permissions; for the caller to log
        self.created = created  # True if load_or_create generated a new key file

    # -- inspection (never shows key bytes)

    @property
    def current_id(self) -> str:
        return self._entries[0][0]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(key_id for key_id, _ in self._entries)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __len__(self) -> int:
        return len(self._entries)

    def fingerprints(self) -> dict[str, str]:
        """Key id -> fingerprint: HMAC-SHA256 keyed by the master key over a fixed label, first
        16 bytes as hex. A MAC under the key, not a hash of it, so it tells nothing about the
        key and says only whether another copy of the keyring holds the same key."""
        return {key_id: hmac.new(key, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()[:32]
                for key_id, key in self._entries}

    def __repr__(self) -> str:
        return f"MasterKeyring(current={self.current_id!r}, ids={self.ids!r})"

    __str__ = __repr__

    # -- text format

    @classmethod
    def parse(cls, text: str, source_name: str) -> MasterKeyring:
        """Parse `<id>:<base64url>` entries; KeyringError with one line naming `source_name`."""
        where = f"master key ({source_name})"
        entries = [_parse_entry(e, n, where) for n, e in enumerate(_split_entries(text), 1)]
        if not entries:
            raise KeyringError(f"{where}: no keys found")
        seen: dict[str, int] = {}
        for number, (key_id, _) in enumerate(entries, 1):
            if key_id in seen:
                raise KeyringError(f"{where}: entries {seen[key_id]} and {number} "
                                   "have the same key id")
            seen[key_id] = number
        return cls(entries)

    def serialize(self, *, one_line: bool = False) -> str:
        """Key-file text (or a comma-separated line for VAULTD_MASTER_KEY). Contains the keys!"""
        entries = [f"{key_id}:{_encode_key(key)}" for key_id, key in self._entries]
        if one_line:
            return ",".join(entries)
        return _FILE_HEADER + "".join(entry + "\n" for entry in entries)

    # -- files

    @classmethod
    def generate(cls) -> MasterKeyring:
        """A ring with one new random key."""
        return cls([(new_key_id(), secrets.token_bytes(KEY_SIZE))])

    @classmethod
    def load(cls, path: Path) -> MasterKeyring:
        """Read a key file. FileNotFoundError if it is missing; KeyringError if unusable."""
        path = Path(path)
        where = f"master key ({path})"
        try:
            mode = os.stat(path).st_mode
            raw = path.read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise KeyringError(f"{where}: cannot read: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise KeyringError(f"{where}: not UTF-8 text") from None
        ring = cls.parse(text, str(path))
        ring.warnings = permission_warnings(path, mode)
        return ring

    @classmethod
    def load_or_create(cls, path: Path) -> MasterKeyring:
        """Load the key file, or create it (0600) with one new key if it does not exist.

        The new file is published without overwriting: if another process created it first,
        that file wins and is loaded, so two processes never end up with different keys.
        """
        path = Path(path)
        try:
            return cls.load(path)
        except FileNotFoundError:
            pass
        if not path.parent.is_dir():
            # A missing directory is more likely a typo than a first start: don't invent keys.
            raise KeyringError(f"master key ({path}): directory {path.parent} does not exist")
        ring = cls.generate()
        try:
            write_atomic(path, ring.serialize(), replace=False)
        except FileExistsError:
            return cls.load(path)
        ring.created = True
        return ring

    def save(self, path: Path) -> None:
        """Atomically replace the key file (mode 0600). Back up the old file first."""
        write_atomic(Path(path), self.serialize(), replace=True)

    # -- rotation

    def with_new_current(self) -> MasterKeyring:
        """A new ring whose current key is fresh; the existing keys stay for unwrapping."""
        fresh = (new_key_id(self.ids), secrets.token_bytes(KEY_SIZE))
        return MasterKeyring((fresh, *self._entries))

    def without(self, ids: Iterable[str]) -> MasterKeyring:
        """A new ring without `ids` (after every record wrapped under them was rewrapped)."""
        drop = set(ids)
        unknown = drop - set(self._keys)
        if unknown:
            raise KeyringError(f"cannot remove unknown key ids: {', '.join(sorted(unknown))}")
        if self.current_id in drop:
            raise KeyringError(f"cannot remove the current key {self.current_id}; "
                               "add a new current key first")
        return MasterKeyring(entry for entry in self._entries if entry[0] not in drop)

    # -- the envelope

    def wrap(self, data_key: bytes, *, file_id: str, account_id: str) -> WrappedKey:
        """Wrap `data_key` under the current master key, bound to this file and account."""
        if len(data_key) != DATA_KEY_SIZE:
            raise ValueError(f"data key must be {DATA_KEY_SIZE} bytes")
        key_id, key = self._entries[0]
        # Random 96-bit nonces: safe far beyond the number of files one master key will wrap.
        nonce = secrets.token_bytes(NONCE_SIZE)
        sealed = aead_seal(key, nonce, data_key, wrap_aad(key_id, file_id, account_id))
        return WrappedKey(key_id=key_id, nonce=nonce, ciphertext=sealed)

    def unwrap(self, wrapped: WrappedKey, *, file_id: str, account_id: str) -> bytes:
        """The data key; KeyUnavailable if its master key is gone, WrappedKeyCorrupt if forged."""
        key = self._keys.get(wrapped.key_id)
        if key is None:
            raise KeyUnavailable(f"master key {wrapped.key_id!r} is not in the keyring")
        try:
            data_key = aead_open(key, wrapped.nonce, wrapped.ciphertext,
                                 wrap_aad(wrapped.key_id, file_id, account_id))
        except (InvalidTag, ValueError):
            raise WrappedKeyCorrupt(f"data key wrapped under master key {wrapped.key_id!r} "
                                    "failed authentication (corrupted, or belongs to "
                                    "another file/account)") from None
        if len(data_key) != DATA_KEY_SIZE:
            raise WrappedKeyCorrupt(f"data key wrapped under master key {wrapped.key_id!r} "
                                    "has the wrong size")
        return data_key

    def rewrap(self, wrapped: WrappedKey, *, file_id: str, account_id: str) -> WrappedKey:
        """Re-wrap under the current master key (rotation). Callers may skip keys already
        wrapped under `current_id`."""
        data_key = self.unwrap(wrapped, file_id=file_id, account_id=account_id)
        return self.wrap(data_key, file_id=file_id, account_id=account_id)

    # -- subkeys

    def subkey(self, key_id: str, label: bytes) -> bytes:
        """A 256-bit key of its own for one purpose, HKDF-SHA256 (RFC 5869, no salt) of master
        key `key_id` with `label` as its info: one way, so it gives neither the master key nor
        another label's subkey. KeyUnavailable if the ring does not hold `key_id`."""
        key = self._keys.get(key_id)
        if key is None:
            raise KeyUnavailable(f"master key {key_id!r} is not in the keyring")
        return HKDF(hashes.SHA256(), KEY_SIZE, salt=None, info=label).derive(key)
