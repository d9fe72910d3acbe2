"""Blob encryption at rest: sizes, round trips and random access."""

from __future__ import annotations

import io
import random

import pytest

from tests.blob_helpers import (
    encrypt,
    pattern,
    reader_for,
    stream_all,
)
from vaultd.crypto.blob_format import (
    CHUNK_SIZE,
    HEADER_SIZE,
    TAG_SIZE,
    WIRE_CHUNK_SIZE,
    BlobCorrupt,
    BlobEncryptor,
    RangeFile,
    blob_context,
    ciphertext_size,
    decrypt_all,
    new_data_key,
    plaintext_size_for,
)

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


@pytest.mark.parametrize("size", [0, 1, 16383, 16384, 16385, 3 * 16384, 1_000_003])
async def test_encryption_round_trips_through_every_read_path(size: int, key: bytes,
                                                              ctx: bytes) -> None:
    plaintext = pattern(size, seed=size)
    blob = encrypt(plaintext, key, ctx)
    assert len(blob) == ciphertext_size(size)
    assert decrypt_all(key, ctx, blob) == plaintext
    assert reader_for(blob, key, ctx, size).read(0, size) == plaintext
    assert await stream_all(blob, key, ctx, size) == plaintext
    assert await stream_all(blob, key, ctx, size, segment_chunks=1) == plaintext


def test_each_encryption_uses_a_fresh_salt(key: bytes, ctx: bytes) -> None:
    first, second = encrypt(b"same", key, ctx), encrypt(b"same", key, ctx)
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
        reader = reader_for(blob, key, ctx, size, cache_chunks=cache_chunks)
        for _ in range(300):
            offset = rng.choice([rng.randrange(size + 50_000), rng.choice(boundaries)])
            length = rng.choice([0, 1, 2, rng.randrange(40_000), rng.randrange(300_000)])
            assert reader.read(offset, length) == plaintext[offset:offset + length]
        assert reader.read(size, 10) == b""
        assert reader.read(size - 3, 10) == plaintext[-3:]


def test_a_ten_byte_read_in_the_middle_decrypts_at_most_two_chunks(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    reader = reader_for(blob, key, ctx, len(plaintext))
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
    reader = reader_for(blob, key, ctx, len(plaintext))
    final_length = len(plaintext) % CHUNK_SIZE + TAG_SIZE
    assert reader.stats["chunks_decrypted"] == 1
    assert reader.stats["bytes_read"] == HEADER_SIZE + final_length


def test_a_large_read_fetches_runs_of_chunks_in_few_backend_reads(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    reader = reader_for(blob, key, ctx, len(plaintext), cache_chunks=8)
    before = reader.stats["reads"]
    assert reader.read(0, len(plaintext)) == plaintext
    # 62 chunks, final one cached: a single read of up to 64 chunks.
    assert reader.stats["reads"] - before == 1


def test_range_file_works_with_buffered_reader_and_seek_from_end(
        megabyte: tuple[bytes, bytes], key: bytes, ctx: bytes) -> None:
    plaintext, blob = megabyte
    raw = RangeFile(reader_for(blob, key, ctx, len(plaintext)))
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
    plaintext = pattern(50_000)
    blob = encrypt(plaintext, key, ctx)
    handle = RangeFile(reader_for(blob, key, ctx, len(plaintext)))
    assert handle.read(7) == plaintext[:7]
    assert handle.readall() == plaintext[7:]
    handle.seek(0)
    assert handle.read() == plaintext
    buffer = bytearray(10)
    handle.seek(-4, io.SEEK_END)
    assert handle.readinto(buffer) == 4 and bytes(buffer[:4]) == plaintext[-4:]


def test_pillow_opens_an_image_through_a_range_file(key: bytes, ctx: bytes) -> None:
    from PIL import Image

    source = Image.frombytes("RGB", (64, 48), pattern(64 * 48 * 3))
    png = io.BytesIO()
    source.save(png, format="PNG")
    blob = encrypt(png.getvalue(), key, ctx)
    with Image.open(RangeFile(reader_for(blob, key, ctx, len(png.getvalue())))) as image:
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
    blob = encrypt(pdf, key, ctx)
    with pikepdf.open(RangeFile(reader_for(blob, key, ctx, len(pdf)))) as opened:
        assert len(opened.pages) == 400
    rendered = pypdfium2.PdfDocument(RangeFile(reader_for(blob, key, ctx, len(pdf))))
    try:
        assert len(rendered) == 400
        assert rendered[399].get_size() == (200, 300)
    finally:
        rendered.close()


