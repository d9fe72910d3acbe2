"""Encryption at rest for stored blobs: C2SP chunked encryption, Cobblestone-256.

Blob layout (c2sp.org/chunked-encryption, AEAD_AES_256_GCM, HKDF-Expand with SHA-512):

    salt (24 random bytes) || commitment (32) || chunk 0 || chunk 1 || ... || final chunk

Every chunk but the last carries exactly CHUNK_SIZE plaintext bytes (WIRE_CHUNK_SIZE on the wire,
tag included); the final chunk is always short (0..CHUNK_SIZE-1 bytes), so a blob that ends on a
full chunk has been truncated. Chunk `i` uses nonce = base_nonce XOR i (big-endian, last 8 bytes),
so a reordered or transplanted chunk fails authentication.

Streaming (encrypt on upload, `decrypt_all`) goes through cryptography's Cobblestone256
implementation. Random access (page renders, HTTP ranges) uses `ChunkOpener`, which derives the
same keys and opens single chunks. Because a range read never sees the end of the blob, every
random-access entry point first checks the blob length against the plaintext size stored in the
file record and authenticates the final chunk: only then is the message length trustworthy.

Nothing here writes plaintext to disk; decrypted chunks live only in memory.
"""

from __future__ import annotations

# The format is implemented in two modules; this one is the stable import path.
from vaultd.crypto.blob_access import (
    RangeFile,
    RangeReader,
    iter_plaintext_async,
    open_verified_async,
)
from vaultd.crypto.blob_chunks import (
    BLOB_CONTEXT_PREFIX,
    CHUNK_SIZE,
    HEADER_SIZE,
    KEY_SIZE,
    TAG_SIZE,
    WIRE_CHUNK_SIZE,
    BlobCorrupt,
    BlobEncryptor,
    ChunkOpener,
    blob_context,
    ciphertext_size,
    decrypt_all,
    new_data_key,
    plaintext_size_for,
)

__all__ = [
    "BLOB_CONTEXT_PREFIX",
    "CHUNK_SIZE",
    "HEADER_SIZE",
    "KEY_SIZE",
    "TAG_SIZE",
    "WIRE_CHUNK_SIZE",
    "BlobCorrupt",
    "BlobEncryptor",
    "ChunkOpener",
    "RangeFile",
    "RangeReader",
    "blob_context",
    "ciphertext_size",
    "decrypt_all",
    "iter_plaintext_async",
    "new_data_key",
    "open_verified_async",
    "plaintext_size_for",
]
