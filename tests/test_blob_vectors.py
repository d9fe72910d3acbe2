"""Blob encryption at rest against the Cobblestone-256 (C2SP chunked encryption) vectors:
every read path decrypts each valid vector and rejects each invalid one."""

from __future__ import annotations

import functools
import hashlib
import zlib
from typing import Any

import pytest
from cryptography.cobblestone import Cobblestone256Decryptor
from cryptography.exceptions import AlreadyFinalized, InvalidTag

from tests.blob_helpers import (
    reader_for,
    stream_all,
)
from tests.wycheproof import vector_params
from vaultd.crypto.blob_format import (
    CHUNK_SIZE,
    HEADER_SIZE,
    TAG_SIZE,
    WIRE_CHUNK_SIZE,
    BlobCorrupt,
    ChunkOpener,
    decrypt_all,
    plaintext_size_for,
)

COBBLESTONE_FILE = "c2sp_chunked_encryption_aes_256_gcm_test.json"


# --- Wycheproof vectors -------------------------------------------------------------------------


def _is_cobblestone_256(group: dict[str, Any]) -> bool:
    assert group["aead"] == "AEAD_AES_256_GCM" and group["sha"] == "SHA-512"
    return True


def _vector_params() -> list[Any]:
    return vector_params(COBBLESTONE_FILE, "Cobblestone-256", _is_cobblestone_256)


VECTORS = _vector_params()


def _need(vector: dict[str, Any]) -> dict[str, Any]:
    if "missing" in vector:
        pytest.fail(f"Wycheproof test vectors not found: {vector['missing']} (expected them "
                    "in tests/vectors/wycheproof, copied from C2SP/wycheproof)", pytrace=False)
    return vector


@functools.cache
def _ciphertext(tc_id: int, ct_hex: str) -> bytes:
    # `ct` is zlib-compressed, then hex-encoded (the counter-rollover vectors are 4 MiB).
    return zlib.decompress(bytes.fromhex(ct_hex))


def _unpack(vector: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    vector = _need(vector)
    key, ctx = bytes.fromhex(vector["key"]), bytes.fromhex(vector["ctx"])
    return key, ctx, _ciphertext(vector["tcId"], vector["ct"])


def _is_valid(vector: dict[str, Any]) -> bool:
    assert vector["result"] in ("valid", "invalid")
    return vector["result"] == "valid"


def _assert_message(vector: dict[str, Any], message: bytes) -> None:
    assert len(message) == vector["msgLength"]
    assert hashlib.sha512(message).hexdigest() == vector["msgSha512"]


def _plausible_size(blob_size: int) -> int:
    """A plaintext size a record could claim for this blob (nearest one if none fits exactly)."""
    try:
        return plaintext_size_for(blob_size)
    except BlobCorrupt:
        n_full, rest = divmod(max(blob_size - HEADER_SIZE, 0), WIRE_CHUNK_SIZE)
        return n_full * CHUNK_SIZE + max(rest - TAG_SIZE, 0)


def _stored_sizes(vector: dict[str, Any], blob_size: int) -> list[int]:
    """Valid: the real size. Invalid: the size the length suggests and the valid-prefix size."""
    if _is_valid(vector):
        return [vector["msgLength"]]
    sizes = {_plausible_size(blob_size)}
    if "msgLength" in vector:
        sizes.add(vector["msgLength"])
    return sorted(sizes)


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_decrypts_or_is_rejected_by_decrypt_all(vector: dict[str, Any]) -> None:
    key, ctx, ct = _unpack(vector)
    if _is_valid(vector):
        _assert_message(vector, decrypt_all(key, ctx, ct))
    else:
        with pytest.raises(BlobCorrupt):
            decrypt_all(key, ctx, ct)


def _odd_pieces(data: bytes) -> list[bytes]:
    sizes = [1, 55, 7, 16399, 2, 16401, 4093, 65537]
    pieces, pos, i = [], 0, 0
    while pos < len(data):
        pieces.append(data[pos:pos + sizes[i % len(sizes)]])
        pos += sizes[i % len(sizes)]
        i += 1
    return pieces


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_streams_through_the_library_decryptor_fed_in_odd_pieces(
        vector: dict[str, Any]) -> None:
    key, ctx, ct = _unpack(vector)
    if "InvalidKeySize" in vector["flags"]:
        with pytest.raises(ValueError):
            Cobblestone256Decryptor(key, ctx)
        return
    decryptor = Cobblestone256Decryptor(key, ctx)
    out = bytearray()
    try:
        for piece in _odd_pieces(ct):
            out += decryptor.update(piece)
        out += decryptor.finalize()
    except InvalidTag:
        assert not _is_valid(vector), "valid vector failed to decrypt"
        # Never more than the validly encrypted prefix, and the prefix must be the real one.
        prefix = vector.get("msgLength", 0)
        assert len(out) <= prefix
        if len(out) == prefix and "msgSha512" in vector:
            assert hashlib.sha512(out).hexdigest() == vector["msgSha512"]
        # ... and the error sticks: no clean end-of-message after a failure.
        with pytest.raises((InvalidTag, AlreadyFinalized)):
            decryptor.update(b"")
        with pytest.raises((InvalidTag, AlreadyFinalized)):
            decryptor.finalize()
        return
    assert _is_valid(vector), "invalid vector decrypted without error"
    _assert_message(vector, bytes(out))


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_reads_whole_or_is_rejected_through_the_range_reader(
        vector: dict[str, Any]) -> None:
    key, ctx, ct = _unpack(vector)
    for size in _stored_sizes(vector, len(ct)):
        if _is_valid(vector):
            reader = reader_for(ct, key, ctx, size, cache_chunks=4)
            _assert_message(vector, reader.read(0, reader.size))
            _assert_message(vector, reader.read(0, reader.size + 100))  # short at EOF
            continue
        with pytest.raises(BlobCorrupt):
            reader = reader_for(ct, key, ctx, size)
            reader.read(0, reader.size)


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_authenticates_the_length_when_the_reader_opens(
        vector: dict[str, Any]) -> None:
    # Opening authenticates the final chunk, so of the invalid vectors only ValidFinalChunk
    # ones may open, and only with the size their length implies (final chunk at its index).
    key, ctx, ct = _unpack(vector)
    for size in _stored_sizes(vector, len(ct)):
        if _is_valid(vector):
            reader_for(ct, key, ctx, size)
        elif "ValidFinalChunk" in vector["flags"]:
            if size == plaintext_size_for(len(ct)):
                reader_for(ct, key, ctx, size)
        else:
            with pytest.raises(BlobCorrupt):
                reader_for(ct, key, ctx, size)


def _raw_decrypt(ct: bytes, opener: ChunkOpener) -> bytes:
    if len(ct) != opener.blob_size:
        raise BlobCorrupt("length mismatch")
    parts = []
    for index in range(opener.n_chunks):
        offset, length = opener.chunk_span(index)
        parts.append(opener.open_chunk(index, ct[offset:offset + length]))
    return b"".join(parts)


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_without_header_failure_applies_in_raw_mode(vector: dict[str, Any]) -> None:
    key, ctx, ct = _unpack(vector)
    if "HeaderFailure" in vector["flags"]:
        assert "aeadKey" not in vector and "baseNonce" not in vector
        return
    aead_key, base_nonce = bytes.fromhex(vector["aeadKey"]), bytes.fromhex(vector["baseNonce"])
    for size in _stored_sizes(vector, len(ct)):
        opener = ChunkOpener.from_raw(aead_key, base_nonce, size)
        if _is_valid(vector):
            _assert_message(vector, _raw_decrypt(ct, opener))
            # The header-derived opener must agree with the raw one.
            derived = ChunkOpener(key, ctx, ct[:HEADER_SIZE], size)
            _assert_message(vector, _raw_decrypt(ct, derived))
        else:
            with pytest.raises(BlobCorrupt):
                _raw_decrypt(ct, opener)


@pytest.mark.parametrize("vector", VECTORS)
async def test_every_vector_streams_or_is_rejected_through_the_async_path(
        vector: dict[str, Any]) -> None:
    key, ctx, ct = _unpack(vector)
    for size in _stored_sizes(vector, len(ct)):
        if _is_valid(vector):
            _assert_message(vector, await stream_all(ct, key, ctx, size, segment_chunks=5))
        else:
            with pytest.raises(BlobCorrupt):
                await stream_all(ct, key, ctx, size)


