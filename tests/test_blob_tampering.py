"""Blob encryption at rest refuses tampered, truncated, reordered and moved blobs."""

from __future__ import annotations

import pytest

from tests.blob_helpers import (
    encrypt,
    flip,
    pattern,
    read_range_over,
    reader_for,
)
from vaultd.crypto.blob_format import (
    CHUNK_SIZE,
    HEADER_SIZE,
    TAG_SIZE,
    WIRE_CHUNK_SIZE,
    BlobCorrupt,
    ChunkOpener,
    RangeReader,
    blob_context,
    decrypt_all,
    iter_plaintext_async,
    new_data_key,
    open_verified_async,
    plaintext_size_for,
)

# --- tampering, truncation, reordering, moving --------------------------------------------------


@pytest.mark.parametrize("position", [0, 23, 24, 55], ids=["salt", "salt-end", "commit",
                                                            "commit-end"])
def test_a_tampered_header_is_rejected_before_any_byte(three_chunks: tuple[bytes, bytes],
                                                       position: int, key: bytes,
                                                       ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = flip(blob, position)
    with pytest.raises(BlobCorrupt, match="commitment"):
        reader_for(bad, key, ctx, len(plaintext))
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, bad)


@pytest.mark.parametrize("position", [HEADER_SIZE, HEADER_SIZE + CHUNK_SIZE + 3,
                                      HEADER_SIZE + WIRE_CHUNK_SIZE - 1,
                                      HEADER_SIZE + WIRE_CHUNK_SIZE + 500],
                         ids=["chunk0-body", "chunk0-tag", "chunk0-tag-end", "chunk1-body"])
def test_a_tampered_chunk_fails_when_read_while_other_chunks_still_read(
        three_chunks: tuple[bytes, bytes], position: int, key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = flip(blob, position)
    index = (position - HEADER_SIZE) // WIRE_CHUNK_SIZE
    reader = reader_for(bad, key, ctx, len(plaintext))  # the final chunk is intact
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
        reader_for(flip(blob, len(blob) - from_end), key, ctx, len(plaintext))


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
        await open_verified_async(read_range_over(truncated, calls), len(truncated), key,
                                  ctx, len(plaintext))
    assert calls == []
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, ctx, truncated)


def test_truncation_is_caught_by_the_final_chunk_even_if_the_stored_size_agrees(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    _, blob = three_chunks
    truncated = blob[:-1]
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        reader_for(truncated, key, ctx, plaintext_size_for(len(truncated)))
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
    plaintext = pattern(3 * CHUNK_SIZE + 10)
    swapped = _swap_chunks(encrypt(plaintext, key, ctx), 0, 1)
    reader = reader_for(swapped, key, ctx, len(plaintext))  # final chunk untouched
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
    plaintext = pattern(3 * CHUNK_SIZE + 10)
    mine = encrypt(plaintext, key, ctx)
    theirs = encrypt(plaintext, key, blob_context("acct-1", "file-2") if other_ctx else ctx)
    start, end = HEADER_SIZE + WIRE_CHUNK_SIZE, HEADER_SIZE + 2 * WIRE_CHUNK_SIZE
    spliced = mine[:start] + theirs[start:end] + mine[end:]
    reader = reader_for(spliced, key, ctx, len(plaintext))
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
        reader_for(blob, key, wrong, len(plaintext))
    with pytest.raises(BlobCorrupt, match="commitment"):
        await open_verified_async(read_range_over(blob), len(blob), key, wrong,
                                  len(plaintext))
    with pytest.raises(BlobCorrupt):
        decrypt_all(key, wrong, blob)


def test_a_wrong_or_malformed_key_is_rejected_at_open(three_chunks: tuple[bytes, bytes],
                                                      key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    for bad_key in (new_data_key(), key[:16], key + b"\x00"):
        with pytest.raises(BlobCorrupt):
            reader_for(blob, bad_key, ctx, len(plaintext))
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
        lambda: reader_for(blob, new_data_key(), ctx, len(plaintext)),
        lambda: reader_for(blob[:-1], key, ctx, len(plaintext)),
        lambda: reader_for(flip(blob, len(blob) - 1), key, ctx, len(plaintext)),
        lambda: reader_for(flip(blob, 100), key, ctx, len(plaintext)).read(0, 10),
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
    read_range = read_range_over(blob, calls)
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
    plaintext = pattern(5 * CHUNK_SIZE + 10)
    blob = flip(encrypt(plaintext, key, ctx), HEADER_SIZE + 2 * WIRE_CHUNK_SIZE + 7)
    read_range = read_range_over(blob)
    opener = await open_verified_async(read_range, len(blob), key, ctx, len(plaintext))
    received = []
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        async for piece in iter_plaintext_async(read_range, opener, segment_chunks=1):
            received.append(piece)
    assert b"".join(received) == plaintext[:2 * CHUNK_SIZE]


async def test_async_streaming_authenticates_the_length_of_an_unverified_opener(
        three_chunks: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = flip(blob, len(blob) - 1)
    opener = ChunkOpener(key, ctx, bad[:HEADER_SIZE], len(plaintext))
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        async for _ in iter_plaintext_async(read_range_over(bad), opener, 0, 10):
            pass


async def test_async_open_rejects_a_tampered_final_chunk(three_chunks: tuple[bytes, bytes],
                                                         key: bytes, ctx: bytes) -> None:
    plaintext, blob = three_chunks
    bad = flip(blob, len(blob) - 3)
    with pytest.raises(BlobCorrupt, match="chunk 2 failed"):
        await open_verified_async(read_range_over(bad), len(bad), key, ctx, len(plaintext))
