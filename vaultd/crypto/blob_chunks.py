"""The blob format's core (see `vaultd.crypto.blob_format` for the layout): sizes, the streaming
encryptor, and `ChunkOpener`, the sans-I/O opener of single chunks."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from cryptography.cobblestone import Cobblestone256Decryptor, Cobblestone256Encryptor
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

SALT_SIZE = 24
COMMITMENT_SIZE = 32
HEADER_SIZE = SALT_SIZE + COMMITMENT_SIZE  # 56
CHUNK_SIZE = 16384
TAG_SIZE = 16
WIRE_CHUNK_SIZE = CHUNK_SIZE + TAG_SIZE  # 16400
KEY_SIZE = 32
NONCE_SIZE = 12

BLOB_CONTEXT_PREFIX = b"vaultd/blob/v1\x00"
_HKDF_LABEL = b"c2sp.org/chunked-encryption@v1+AEAD_AES_256_GCM\x00"
_OKM_SIZE = KEY_SIZE + NONCE_SIZE + COMMITMENT_SIZE  # 76

ReadAt = Callable[[int, int], bytes]
ReadRange = Callable[[int, int], Awaitable[bytes]]


class BlobCorrupt(Exception):
    """Blob fails authentication, has the wrong length, or was truncated/reordered.

    Messages name offsets, sizes and chunk indices only, never key material or plaintext.
    """


# --- sizes and identifiers -------------------------------------------------------------------


def ciphertext_size(plaintext_size: int) -> int:
    """Exact blob size for `plaintext_size` bytes of plaintext (the final chunk is always short)."""
    if plaintext_size < 0:
        raise ValueError("plaintext size must be >= 0")
    n_full, final_len = divmod(plaintext_size, CHUNK_SIZE)
    return HEADER_SIZE + n_full * WIRE_CHUNK_SIZE + final_len + TAG_SIZE


def plaintext_size_for(blob_size: int) -> int:
    """Inverse of `ciphertext_size`; BlobCorrupt if no plaintext size yields `blob_size`."""
    body = blob_size - HEADER_SIZE
    if body < TAG_SIZE:
        raise BlobCorrupt(f"blob of {blob_size} bytes is too short to be valid")
    n_full, rest = divmod(body, WIRE_CHUNK_SIZE)
    if rest < TAG_SIZE:  # a final chunk always has at least a tag
        raise BlobCorrupt(f"blob of {blob_size} bytes has an impossible length (truncated?)")
    return n_full * CHUNK_SIZE + rest - TAG_SIZE


def blob_context(account_id: str, file_id: str) -> bytes:
    """Cobblestone context binding a blob to its record, so a blob moved elsewhere won't open."""
    for name, value in (("account_id", account_id), ("file_id", file_id)):
        # NUL is the separator; allowing it would let two different (account, file) pairs collide.
        if "\x00" in value:
            raise ValueError(f"{name} must not contain NUL")
    return BLOB_CONTEXT_PREFIX + account_id.encode() + b"\x00" + file_id.encode()


def new_data_key() -> bytes:
    """A fresh random 32-byte data key (one per blob; wrapped by the master keyring)."""
    return Cobblestone256Encryptor.generate_key()


def _require_key(key: bytes) -> None:
    if len(key) != KEY_SIZE:
        raise BlobCorrupt(f"data key must be {KEY_SIZE} bytes")


# --- streaming --------------------------------------------------------------------------------


class BlobEncryptor:
    """Streaming encryption of one blob. Output is the exact wire format; feed any chunk sizes."""

    def __init__(self, key: bytes, context: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise ValueError(f"data key must be {KEY_SIZE} bytes")
        self._enc = Cobblestone256Encryptor(key, context)
        self.plaintext_size = 0  # bytes fed so far; stored in the record to authenticate length

    def update(self, data: bytes) -> bytes:
        out = self._enc.update(data)
        self.plaintext_size += memoryview(data).nbytes
        return out

    def finalize(self) -> bytes:
        return self._enc.finalize()

    def __repr__(self) -> str:
        return f"BlobEncryptor(plaintext_size={self.plaintext_size})"


def decrypt_all(key: bytes, context: bytes, blob: bytes) -> bytes:
    """Decrypt a whole blob in memory (tools, tests). BlobCorrupt on any failure."""
    _require_key(key)
    try:
        dec = Cobblestone256Decryptor(key, context)
        return dec.update(blob) + dec.finalize()
    except InvalidTag:
        # The library does not say which check failed; neither do we (no oracle, no key material).
        raise BlobCorrupt("blob failed authentication (corrupt, truncated, "
                          "reordered, or wrong key/context)") from None


# --- random access: the sans-I/O core --------------------------------------------------------


def _derive(key: bytes, context: bytes, salt: bytes) -> bytes:
    """HKDF-Expand(SHA-512, key, label||salt||context) = aead_key || base_nonce || commitment."""
    return HKDFExpand(hashes.SHA512(), _OKM_SIZE, _HKDF_LABEL + salt + context).derive(key)


class ChunkOpener:
    """Opens single chunks of one blob whose plaintext size is known from its record.

    Does no I/O: callers fetch the bytes `chunk_span` names and hand them to `open_chunk`.
    """

    def __init__(self, key: bytes, context: bytes, header: bytes, plaintext_size: int) -> None:
        _require_key(key)
        if len(header) != HEADER_SIZE:
            raise BlobCorrupt(f"blob header is {len(header)} bytes, expected {HEADER_SIZE}")
        okm = _derive(key, context, bytes(header[:SALT_SIZE]))
        # Key commitment: a wrong key or context (blob moved to another record) fails here,
        # before any chunk is opened. Constant-time so the check leaks nothing about okm.
        if not hmac.compare_digest(okm[KEY_SIZE + NONCE_SIZE:], bytes(header[SALT_SIZE:])):
            raise BlobCorrupt("blob header commitment mismatch (wrong key or context, "
                              "or corrupted header)")
        self._setup(okm[:KEY_SIZE], okm[KEY_SIZE:KEY_SIZE + NONCE_SIZE], plaintext_size)

    @classmethod
    def from_raw(cls, aead_key: bytes, base_nonce: bytes, plaintext_size: int) -> ChunkOpener:
        """Raw mode (no header): the derived AEAD key and base nonce are given directly.

        For test vectors and tools; chunk offsets still count the 56-byte header.
        """
        if len(aead_key) != KEY_SIZE or len(base_nonce) != NONCE_SIZE:
            raise BlobCorrupt("raw mode needs a 32-byte AEAD key and a 12-byte base nonce")
        opener = cls.__new__(cls)
        opener._setup(aead_key, base_nonce, plaintext_size)
        return opener

    def _setup(self, aead_key: bytes, base_nonce: bytes, plaintext_size: int) -> None:
        if plaintext_size < 0:
            raise BlobCorrupt("stored plaintext size is negative")
        self._aead = AESGCM(aead_key)
        self._nonce_prefix = base_nonce[:4]
        self._nonce_counter = int.from_bytes(base_nonce[4:], "big")
        self.plaintext_size = plaintext_size
        self.final_index = plaintext_size // CHUNK_SIZE
        self.n_chunks = self.final_index + 1
        self.final_length = plaintext_size - self.final_index * CHUNK_SIZE
        self.blob_size = ciphertext_size(plaintext_size)
        self.final_verified = False  # set once the final chunk authenticated: length is trusted

    def __repr__(self) -> str:
        return (f"ChunkOpener(plaintext_size={self.plaintext_size}, n_chunks={self.n_chunks}, "
                f"final_verified={self.final_verified})")

    def _nonce(self, index: int) -> bytes:
        # The counter is XORed into the last 8 bytes (big-endian) of the base nonce.
        return self._nonce_prefix + (self._nonce_counter ^ index).to_bytes(8, "big")

    def chunk_span(self, index: int) -> tuple[int, int]:
        """(offset, length) of wire chunk `index` in the blob."""
        if not 0 <= index <= self.final_index:
            raise IndexError(f"chunk {index} out of range 0..{self.final_index}")
        offset = HEADER_SIZE + index * WIRE_CHUNK_SIZE
        if index == self.final_index:
            return offset, self.final_length + TAG_SIZE
        return offset, WIRE_CHUNK_SIZE

    def open_chunk(self, index: int, wire: bytes | memoryview) -> bytes:
        """Decrypt and authenticate chunk `index`; BlobCorrupt if its length or tag is wrong."""
        expected = self.chunk_span(index)[1]
        if len(wire) != expected:
            # The stored plaintext size fixes every chunk's length; any other length is truncation.
            raise BlobCorrupt(f"chunk {index} is {len(wire)} bytes, expected {expected}")
        try:
            plaintext = self._aead.decrypt(self._nonce(index), wire, None)
        except InvalidTag:
            raise BlobCorrupt(f"chunk {index} failed authentication") from None
        if index == self.final_index:
            self.final_verified = True
        return plaintext

    def chunks_for_range(self, offset: int, length: int) -> range:
        """Indices of the chunks holding plaintext bytes [offset, offset+length), clipped at EOF."""
        if offset < 0 or length < 0:
            raise ValueError("offset and length must be >= 0")
        end = min(offset + length, self.plaintext_size)
        if offset >= end:
            return range(0)
        return range(offset // CHUNK_SIZE, (end - 1) // CHUNK_SIZE + 1)

    def wire_span(self, chunks: range) -> tuple[int, int]:
        """(offset, length) of the contiguous ciphertext holding `chunks` (one backend read)."""
        start = self.chunk_span(chunks[0])[0]
        last_offset, last_length = self.chunk_span(chunks[-1])
        return start, last_offset + last_length - start

    def open_chunks(self, chunks: range, wire: bytes) -> list[bytes]:
        """Open consecutive chunks from the bytes `wire_span(chunks)` named."""
        view = memoryview(wire)
        base, total = self.wire_span(chunks)
        if len(view) != total:
            raise BlobCorrupt(f"read of chunks {chunks.start}..{chunks[-1]} came back short")
        out = []
        for index in chunks:
            offset, length = self.chunk_span(index)
            out.append(self.open_chunk(index, view[offset - base:offset - base + length]))
        return out


def _check_blob_size(blob_size: int, plaintext_size: int) -> None:
    """Checked before any read: the record's plaintext size must account for the whole blob."""
    if plaintext_size < 0:
        raise BlobCorrupt("stored plaintext size is negative")
    expected = ciphertext_size(plaintext_size)
    if blob_size != expected:
        raise BlobCorrupt(f"length mismatch: blob is {blob_size} bytes, the stored plaintext "
                          f"size {plaintext_size} implies {expected}")


def _segments(chunks: range, segment_chunks: int) -> list[range]:
    """Split a run of chunk indices into runs of at most `segment_chunks` (one read each)."""
    step = max(1, segment_chunks)
    return [range(i, min(i + step, chunks.stop)) for i in range(chunks.start, chunks.stop, step)]


def _trim(plaintext: bytes, chunks: range, offset: int, end: int) -> bytes:
    """Cut the joined plaintext of `chunks` down to bytes [offset, end) of the message."""
    base = chunks.start * CHUNK_SIZE
    return plaintext[max(offset - base, 0):end - base]
