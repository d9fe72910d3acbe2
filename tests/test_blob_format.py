"""Blob encryption at rest: Cobblestone-256 vectors, round trips, random access, tampering."""

from __future__ import annotations

import functools
import hashlib
import io
import random
import zlib
from typing import Any

import pytest
from cryptography.cobblestone import Cobblestone256Decryptor
from cryptography.exceptions import AlreadyFinalized, InvalidTag

from tests.wycheproof import vector_params
from vaultd.crypto.blob_format import (
    CHUNK_SIZE,
    HEADER_SIZE,
    TAG_SIZE,
    WIRE_CHUNK_SIZE,
    BlobCorrupt,
    BlobEncryptor,
    ChunkOpener,
    RangeFile,
    RangeReader,
    blob_context,
    ciphertext_size,
    decrypt_all,
    iter_plaintext_async,
    new_data_key,
    open_verified_async,
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
        pytest.fail(f"Wycheproof test vectors not found: {vector['missing']} (expected the "
                    "shared test vectors at ../shared/testvectors/wycheproof from the project "
                    "root)", pytrace=False)
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


def _reader_for(blob: bytes, key: bytes, ctx: bytes, size: int, **kw: Any) -> RangeReader:
    return RangeReader(lambda offset, length: blob[offset:offset + length], len(blob), key, ctx,
                       size, **kw)


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
            reader = _reader_for(ct, key, ctx, size, cache_chunks=4)
            _assert_message(vector, reader.read(0, reader.size))
            _assert_message(vector, reader.read(0, reader.size + 100))  # short at EOF
            continue
        with pytest.raises(BlobCorrupt):
            reader = _reader_for(ct, key, ctx, size)
            reader.read(0, reader.size)


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_authenticates_the_length_when_the_reader_opens(
        vector: dict[str, Any]) -> None:
    # Opening authenticates the final chunk, so of the invalid vectors only ValidFinalChunk
    # ones may open, and only with the size their length implies (final chunk at its index).
    key, ctx, ct = _unpack(vector)
    for size in _stored_sizes(vector, len(ct)):
        if _is_valid(vector):
            _reader_for(ct, key, ctx, size)
        elif "ValidFinalChunk" in vector["flags"]:
            if size == plaintext_size_for(len(ct)):
                _reader_for(ct, key, ctx, size)
        else:
            with pytest.raises(BlobCorrupt):
                _reader_for(ct, key, ctx, size)


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


def _read_range_over(blob: bytes, log: list[tuple[int, int]] | None = None) -> Any:
    async def read_range(offset: int, length: int) -> bytes:
        if log is not None:
            log.append((offset, length))
        return blob[offset:offset + length]
    return read_range


async def _stream_all(blob: bytes, key: bytes, ctx: bytes, size: int, **kw: Any) -> bytes:
    read_range = _read_range_over(blob)
    opener = await open_verified_async(read_range, len(blob), key, ctx, size)
    return b"".join([piece async for piece in iter_plaintext_async(read_range, opener, **kw)])


@pytest.mark.parametrize("vector", VECTORS)
async def test_every_vector_streams_or_is_rejected_through_the_async_path(
        vector: dict[str, Any]) -> None:
    key, ctx, ct = _unpack(vector)
    for size in _stored_sizes(vector, len(ct)):
        if _is_valid(vector):
            _assert_message(vector, await _stream_all(ct, key, ctx, size, segment_chunks=5))
        else:
            with pytest.raises(BlobCorrupt):
                await _stream_all(ct, key, ctx, size)


# --- sizes and identifiers ----------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 16383, 16384, 16385, 3 * 16384, 1_000_003])
def test_ciphertext_size_follows_the_chunk_layout(size: int) -> None:
    n_full = size // CHUNK_SIZE
    assert ciphertext_size(size) == 56 + n_full * 16400 + size % 16384 + 16
    assert plaintext_size_for(ciphertext_size(size)) == size


def test_impossible_blob_lengths_have_no_plaintext_size() -> None:
    for blob_size in [0, 55, 56, 71, 56 + 16400, 56 + 16400 + 15, 56 + 2 * 16400 + 3]:
        with pytest.raises(BlobCorrupt):
            plaintext_size_for(blob_size)
    sizes = {plaintext_size_for(n) for n in range(72, 56 + 3 * 16400) if (n - 56) % 16400 >= 16}
    assert sizes == set(range(3 * CHUNK_SIZE))


def test_blob_context_binds_account_and_file() -> None:
    assert blob_context("acct-1", "file-9") == b"vaultd/blob/v1\x00acct-1\x00file-9"
    assert blob_context("a", "bc") != blob_context("ab", "c")
    with pytest.raises(ValueError):
        blob_context("a\x00b", "c")


def test_new_data_keys_are_32_random_bytes() -> None:
    keys = {new_data_key() for _ in range(16)}
    assert len(keys) == 16 and all(len(k) == 32 for k in keys)


# --- encryption round trips ---------------------------------------------------------------------


def _pattern(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


def _encrypt(plaintext: bytes, key: bytes, ctx: bytes, piece: int = 10_007) -> bytes:
    encryptor = BlobEncryptor(key, ctx)
    out = [encryptor.update(plaintext[i:i + piece]) for i in range(0, len(plaintext), piece)]
    out.append(encryptor.finalize())
    assert encryptor.plaintext_size == len(plaintext)
    return b"".join(out)


@pytest.fixture(scope="module")
def key() -> bytes:
    return new_data_key()


@pytest.fixture(scope="module")
def ctx() -> bytes:
    return blob_context("acct-1", "file-1")


@pytest.fixture(scope="module")
def megabyte(key: bytes, ctx: bytes) -> tuple[bytes, bytes]:
    plaintext = _pattern(1_000_003)
    return plaintext, _encrypt(plaintext, key, ctx)


@pytest.mark.parametrize("size", [0, 1, 16383, 16384, 16385, 3 * 16384, 1_000_003])
async def test_encryption_round_trips_through_every_read_path(size: int, key: bytes,
                                                              ctx: bytes) -> None:
    plaintext = _pattern(size, seed=size)
    blob = _encrypt(plaintext, key, ctx)
    assert len(blob) == ciphertext_size(size)
    assert decrypt_all(key, ctx, blob) == plaintext
    assert _reader_for(blob, key, ctx, size).read(0, size) == plaintext
    assert await _stream_all(blob, key, ctx, size) == plaintext
    assert await _stream_all(blob, key, ctx, size, segment_chunks=1) == plaintext


def test_each_encryption_uses_a_fresh_salt(key: bytes, ctx: bytes) -> None:
    first, second = _encrypt(b"same", key, ctx), _encrypt(b"same", key, ctx)
    assert first[:24] != second[:24] and first != second


def test_encryptor_refuses_a_key_of_the_wrong_size(ctx: bytes) -> None:
    with pytest.raises(ValueError):
        BlobEncryptor(b"\x00" * 16, ctx)


# --- random access ------------------------------------------------------------------------------


def test_hundreds_of_random_ranges_match_the_plaintext(megabyte: tuple[bytes, bytes],
                                                       key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    rng = random.Random(2026)
    size = len(plaintext)
    boundaries = [i * CHUNK_SIZE + d for i in range(1, size // CHUNK_SIZE + 1) for d in (-1, 0, 1)]
    for cache_chunks in (0, 3, 64):
        reader = _reader_for(blob, key, ctx, size, cache_chunks=cache_chunks)
        for _ in range(300):
            offset = rng.choice([rng.randrange(size + 50_000), rng.choice(boundaries)])
            length = rng.choice([0, 1, 2, rng.randrange(40_000), rng.randrange(300_000)])
            assert reader.read(offset, length) == plaintext[offset:offset + length]
        assert reader.read(size, 10) == b""
        assert reader.read(size - 3, 10) == plaintext[-3:]


def test_a_ten_byte_read_in_the_middle_decrypts_at_most_two_chunks(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    reader = _reader_for(blob, key, ctx, len(plaintext))
    for offset in (500_000, 30 * CHUNK_SIZE - 5):  # inside one chunk; across a boundary
        before = dict(reader.stats)
        assert reader.read(offset, 10) == plaintext[offset:offset + 10]
        assert reader.stats["chunks_decrypted"] - before["chunks_decrypted"] <= 2
        assert reader.stats["bytes_read"] - before["bytes_read"] <= 2 * WIRE_CHUNK_SIZE
    before = dict(reader.stats)
    reader.read(500_000, 10)  # cached now
    assert reader.stats["chunks_decrypted"] == before["chunks_decrypted"]
    assert reader.stats["bytes_read"] == before["bytes_read"]


def test_opening_a_reader_reads_only_the_header_and_the_final_chunk(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    reader = _reader_for(blob, key, ctx, len(plaintext))
    final_length = len(plaintext) % CHUNK_SIZE + TAG_SIZE
    assert reader.stats["chunks_decrypted"] == 1
    assert reader.stats["bytes_read"] == HEADER_SIZE + final_length


def test_a_large_read_fetches_runs_of_chunks_in_few_backend_reads(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    reader = _reader_for(blob, key, ctx, len(plaintext), cache_chunks=8)
    before = reader.stats["reads"]
    assert reader.read(0, len(plaintext)) == plaintext
    # 62 chunks, final one cached: a single read of up to 64 chunks.
    assert reader.stats["reads"] - before == 1


def test_range_file_works_with_buffered_reader_and_seek_from_end(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    raw = RangeFile(_reader_for(blob, key, ctx, len(plaintext)))
    with io.BufferedReader(raw, buffer_size=8192) as handle:
        assert handle.seekable() and handle.readable()
        assert handle.seek(-100, io.SEEK_END) == len(plaintext) - 100
        assert handle.read() == plaintext[-100:]
        assert handle.read(10) == b""
        handle.seek(16380)
        assert handle.read(10) == plaintext[16380:16390]
        assert handle.tell() == 16390
        handle.seek(5, io.SEEK_CUR)
        assert handle.read(3) == plaintext[16395:16398]
        handle.seek(len(plaintext) + 10)
        assert handle.read(5) == b""
        with pytest.raises(OSError):
            handle.seek(-1)
    assert raw.closed
    with pytest.raises(ValueError):
        raw.read(1)


def test_range_file_read_and_readall_return_plaintext(key: bytes, ctx: bytes) -> None:
    plaintext = _pattern(50_000)
    blob = _encrypt(plaintext, key, ctx)
    handle = RangeFile(_reader_for(blob, key, ctx, len(plaintext)))
    assert handle.read(7) == plaintext[:7]
    assert handle.readall() == plaintext[7:]
    handle.seek(0)
    assert handle.read() == plaintext
    buffer = bytearray(10)
    handle.seek(-4, io.SEEK_END)
    assert handle.readinto(buffer) == 4 and bytes(buffer[:4]) == plaintext[-4:]


def test_pillow_opens_an_image_through_a_range_file(key: bytes, ctx: bytes) -> None:
    from PIL import Image

    source = Image.frombytes("RGB", (64, 48), _pattern(64 * 48 * 3))
    png = io.BytesIO()
    source.save(png, format="PNG")
    blob = _encrypt(png.getvalue(), key, ctx)
    with Image.open(RangeFile(_reader_for(blob, key, ctx, len(png.getvalue())))) as image:
        assert image.size == (64, 48)
        assert image.convert("RGB").tobytes() == source.tobytes()


def test_pikepdf_and_pdfium_open_a_pdf_through_a_range_file(key: bytes, ctx: bytes) -> None:
    import pikepdf
    import pypdfium2

    document = pikepdf.new()
    for _ in range(400):
        document.add_blank_page(page_size=(200, 300))
    saved = io.BytesIO()
    document.save(saved)
    pdf = saved.getvalue()
    assert len(pdf) > 3 * CHUNK_SIZE
    blob = _encrypt(pdf, key, ctx)
    with pikepdf.open(RangeFile(_reader_for(blob, key, ctx, len(pdf)))) as opened:
        assert len(opened.pages) == 400
    rendered = pypdfium2.PdfDocument(RangeFile(_reader_for(blob, key, ctx, len(pdf))))
    try:
        assert len(rendered) == 400
        assert rendered[399].get_size() == (200, 300)
    finally:
        rendered.close()


# --- tampering, truncation, reordering, moving --------------------------------------------------


@pytest.fixture(scope="module")
def three_chunks(key: bytes, ctx: bytes) -> tuple[bytes, bytes]:
    plaintext = _pattern(2 * CHUNK_SIZE + 1000)
    return plaintext, _encrypt(plaintext, key, ctx)


def _flip(blob: bytes, position: int) -> bytes:
    return blob[:position] + bytes([blob[position] ^ 0x01]) + blob[position + 1:]


@pytest.mark.parametrize("position", [0, 23, 24, 55], ids=["salt", "salt-end", "commit",
                                                            "commit-end"])
def test_a_tampered_header_is_rejected_before_any_byte(three_chunks: tuple[bytes, bytes],
                                                       position: int, key: bytes,
                                                       ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = _flip(blob, position)
    with pytest.raises(BlobCorrupt, match="commitment"):
        _reader_for(bad, key, ctx, len(plaintext))
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, bad)


@pytest.mark.parametrize("position", [HEADER_SIZE, HEADER_SIZE + CHUNK_SIZE + 3,
                                      HEADER_SIZE + WIRE_CHUNK_SIZE - 1,
                                      HEADER_SIZE + WIRE_CHUNK_SIZE + 500],
                         ids=["chunk0-body", "chunk0-tag", "chunk0-tag-end", "chunk1-body"])
def test_a_tampered_chunk_fails_when_read_while_other_chunks_still_read(
        three_chunks: tuple[bytes, bytes], position: int, key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = _flip(blob, position)
    index = (position - HEADER_SIZE) // WIRE_CHUNK_SIZE
    reader = _reader_for(bad, key, ctx, len(plaintext))  # the final chunk is intact
    with pytest.raises(BlobCorrupt, match=f"chunk {index} failed"):
        reader.read(0, reader.size)
    with pytest.raises(BlobCorrupt):
        reader.read(index * CHUNK_SIZE + 10, 1)  # and again: errors are not cached away
    good = 1 - index
    assert reader.read(good * CHUNK_SIZE, 5) == plaintext[good * CHUNK_SIZE:good * CHUNK_SIZE + 5]
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, bad)


@pytest.mark.parametrize("from_end", [1, TAG_SIZE, 1000 + TAG_SIZE])
def test_a_tampered_final_chunk_is_rejected_when_the_reader_opens(
        three_chunks: tuple[bytes, bytes], from_end: int, key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        _reader_for(_flip(blob, len(blob) - from_end), key, ctx, len(plaintext))


@pytest.mark.parametrize("cut", ["one-byte", "one-wire-chunk", "header-only", "empty"])
async def test_a_truncated_blob_is_rejected_before_any_byte(three_chunks: tuple[bytes, bytes],
                                                            cut: str, key: bytes,
                                                            ctx: bytes) -> None:
    plaintext, blob = three_chunks
    keep = {"one-byte": len(blob) - 1, "one-wire-chunk": len(blob) - WIRE_CHUNK_SIZE,
            "header-only": HEADER_SIZE, "empty": 0}[cut]
    truncated = blob[:keep]
    calls: list[tuple[int, int]] = []

    def read_at(offset: int, length: int) -> bytes:
        calls.append((offset, length))
        return truncated[offset:offset + length]

    with pytest.raises(BlobCorrupt, match="length mismatch"):
        RangeReader(read_at, len(truncated), key, ctx, len(plaintext))
    with pytest.raises(BlobCorrupt, match="length mismatch"):
        await open_verified_async(_read_range_over(truncated, calls), len(truncated), key,
                                  ctx, len(plaintext))
    assert calls == []
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, truncated)


def test_truncation_is_caught_by_the_final_chunk_even_if_the_stored_size_agrees(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    _, blob = three_chunks
    truncated = blob[:-1]
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        _reader_for(truncated, key, ctx, plaintext_size_for(len(truncated)))
    # Dropping the whole final chunk leaves a full chunk last: no size can describe that.
    with pytest.raises(BlobCorrupt):
        plaintext_size_for(HEADER_SIZE + 2 * WIRE_CHUNK_SIZE)


def test_a_backend_returning_fewer_bytes_than_its_size_is_rejected_at_open(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    short = blob[:-7]
    with pytest.raises(BlobCorrupt, match="shorter than recorded"):
        RangeReader(lambda o, n: short[o:o + n], len(blob), key, ctx, len(plaintext))


def test_a_length_mismatch_is_detected_before_any_byte_is_read(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    calls: list[tuple[int, int]] = []

    def read_at(offset: int, length: int) -> bytes:
        calls.append((offset, length))
        return blob[offset:offset + length]

    for wrong_size in (len(plaintext) - 1, len(plaintext) + 1, 0, 2 * CHUNK_SIZE):
        with pytest.raises(BlobCorrupt, match="length mismatch"):
            RangeReader(read_at, len(blob), key, ctx, wrong_size)
    assert calls == []


def _swap_chunks(blob: bytes, a: int, b: int) -> bytes:
    def span(i: int) -> slice:
        return slice(HEADER_SIZE + i * WIRE_CHUNK_SIZE, HEADER_SIZE + (i + 1) * WIRE_CHUNK_SIZE)
    out = bytearray(blob)
    out[span(a)], out[span(b)] = blob[span(b)], blob[span(a)]
    return bytes(out)


def test_reordered_chunks_are_detected(key: bytes, ctx: bytes) -> None:
    plaintext = _pattern(3 * CHUNK_SIZE + 10)
    swapped = _swap_chunks(_encrypt(plaintext, key, ctx), 0, 1)
    reader = _reader_for(swapped, key, ctx, len(plaintext))  # final chunk untouched
    with pytest.raises(BlobCorrupt, match="chunk 0 failed"):
        reader.read(0, 10)
    with pytest.raises(BlobCorrupt, match="chunk 1 failed"):
        reader.read(CHUNK_SIZE, 10)
    assert reader.read(2 * CHUNK_SIZE, 10) == plaintext[2 * CHUNK_SIZE:2 * CHUNK_SIZE + 10]
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, swapped)


@pytest.mark.parametrize("other_ctx", [b"other", None], ids=["other-context", "same-context"])
def test_a_chunk_swapped_in_from_another_blob_under_the_same_key_is_detected(
        key: bytes, ctx: bytes, other_ctx: bytes | None) -> None:
    plaintext = _pattern(3 * CHUNK_SIZE + 10)
    mine = _encrypt(plaintext, key, ctx)
    theirs = _encrypt(plaintext, key, blob_context("acct-1", "file-2") if other_ctx else ctx)
    start, end = HEADER_SIZE + WIRE_CHUNK_SIZE, HEADER_SIZE + 2 * WIRE_CHUNK_SIZE
    spliced = mine[:start] + theirs[start:end] + mine[end:]
    reader = _reader_for(spliced, key, ctx, len(plaintext))
    with pytest.raises(BlobCorrupt, match="chunk 1 failed"):
        reader.read(CHUNK_SIZE, 1)
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, spliced)


@pytest.mark.parametrize("moved_to", [("acct-1", "file-2"), ("acct-2", "file-1")])
async def test_a_blob_moved_to_another_record_is_rejected_at_open(
        three_chunks: tuple[bytes, bytes], key: bytes, moved_to: tuple[str, str]) -> None:
    plaintext, blob = three_chunks
    wrong = blob_context(*moved_to)
    with pytest.raises(BlobCorrupt, match="commitment"):
        _reader_for(blob, key, wrong, len(plaintext))
    with pytest.raises(BlobCorrupt, match="commitment"):
        await open_verified_async(_read_range_over(blob), len(blob), key, wrong,
                                  len(plaintext))
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, wrong, blob)


def test_a_wrong_or_malformed_key_is_rejected_at_open(three_chunks: tuple[bytes, bytes],
                                                      key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    for bad_key in (new_data_key(), key[:16], key + b"\x00"):
        with pytest.raises(BlobCorrupt):
            _reader_for(blob, bad_key, ctx, len(plaintext))
        with pytest.raises(BlobCorrupt):
            decrypt_all(bad_key, ctx, blob)


def test_chunk_opener_checks_header_length_and_chunk_lengths(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    with pytest.raises(BlobCorrupt, match="header"):
        ChunkOpener(key, ctx, blob[:HEADER_SIZE - 1], len(plaintext))
    opener = ChunkOpener(key, ctx, blob[:HEADER_SIZE], len(plaintext))
    assert (opener.final_index, opener.n_chunks) == (2, 3)
    assert opener.chunk_span(2) == (HEADER_SIZE + 2 * WIRE_CHUNK_SIZE, 1000 + TAG_SIZE)
    offset, length = opener.chunk_span(0)
    with pytest.raises(BlobCorrupt, match="expected"):
        opener.open_chunk(0, blob[offset:offset + length - 1])
    # A full-size chunk presented as the final chunk is a truncation, not a valid end.
    with pytest.raises(BlobCorrupt, match="expected"):
        opener.open_chunk(2, blob[offset:offset + length])
    with pytest.raises(IndexError):
        opener.chunk_span(3)
    assert opener.chunks_for_range(CHUNK_SIZE - 1, 2) == range(2)
    assert opener.chunks_for_range(len(plaintext), 5) == range(0)
    assert opener.chunks_for_range(10, 10 ** 9) == range(3)


def test_error_messages_never_contain_key_material(three_chunks: tuple[bytes, bytes],
                                                   key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    attempts = [
        lambda: _reader_for(blob, new_data_key(), ctx, len(plaintext)),
        lambda: _reader_for(blob[:-1], key, ctx, len(plaintext)),
        lambda: _reader_for(_flip(blob, len(blob) - 1), key, ctx, len(plaintext)),
        lambda: _reader_for(_flip(blob, 100), key, ctx, len(plaintext)).read(0, 10),
        lambda: decrypt_all(key, ctx, blob[:-1]),
        lambda: decrypt_all(key[:31], ctx, blob),
    ]
    for attempt in attempts:
        with pytest.raises(BlobCorrupt) as caught:
            attempt()
        text = str(caught.value) + repr(caught.value)
        assert key.hex() not in text and repr(key)[2:-1] not in text
        assert len(text) < 300


# --- async --------------------------------------------------------------------------------------


async def test_async_streaming_serves_ranges_in_segments(megabyte: tuple[bytes, bytes],
                                                         key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    calls: list[tuple[int, int]] = []
    read_range = _read_range_over(blob, calls)
    opener = await open_verified_async(read_range, len(blob), key, ctx, len(plaintext))
    assert len(calls) == 2  # header, final chunk
    calls.clear()
    pieces = [p async for p in iter_plaintext_async(read_range, opener, segment_chunks=16)]
    assert b"".join(pieces) == plaintext
    assert len(calls) == len(pieces) == -(-opener.n_chunks // 16)
    assert max(length for _, length in calls) <= 16 * WIRE_CHUNK_SIZE
    for offset, length in [(0, 0), (5, 1), (CHUNK_SIZE - 2, 4), (999_990, 100), (2_000_000, 5),
                           (123_456, 400_000)]:
        pieces = [p async for p in iter_plaintext_async(read_range, opener, offset, length)]
        assert b"".join(pieces) == plaintext[offset:offset + length]


async def test_async_streaming_stops_at_the_first_bad_chunk(key: bytes, ctx: bytes) -> None:
    plaintext = _pattern(5 * CHUNK_SIZE + 10)
    blob = _flip(_encrypt(plaintext, key, ctx), HEADER_SIZE + 2 * WIRE_CHUNK_SIZE + 7)
    read_range = _read_range_over(blob)
    opener = await open_verified_async(read_range, len(blob), key, ctx, len(plaintext))
    received = []
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        async for piece in iter_plaintext_async(read_range, opener, segment_chunks=1):
            received.append(piece)
    assert b"".join(received) == plaintext[:2 * CHUNK_SIZE]


async def test_async_streaming_authenticates_the_length_of_an_unverified_opener(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = _flip(blob, len(blob) - 1)
    opener = ChunkOpener(key, ctx, bad[:HEADER_SIZE], len(plaintext))
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        async for _ in iter_plaintext_async(_read_range_over(bad), opener, 0, 10):
            pass


async def test_async_open_rejects_a_tampered_final_chunk(three_chunks: tuple[bytes, bytes],
                                                         key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = _flip(blob, len(blob) - 3)
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        await open_verified_async(_read_range_over(bad), len(bad), key, ctx, len(plaintext))
