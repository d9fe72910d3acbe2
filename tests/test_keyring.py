"""Master keyring and the data-key envelope: Wycheproof AES-GCM, wrapping, rotation, files."""

from __future__ import annotations

import base64
import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

import bson
import pytest
from cryptography.exceptions import InvalidTag

from tests.wycheproof import vector_params
from vaultd.crypto.keyring import (
    ENV_VAR,
    KeyringError,
    KeyUnavailable,
    MasterKeyring,
    WrappedKey,
    WrappedKeyCorrupt,
    aead_open,
    aead_seal,
    wrap_aad,
)

AES_GCM_FILE = "aes_gcm_test.json"


# --- Wycheproof AES-GCM through the exact wrapping code ------------------------------------------


def _aes_gcm_params() -> list[Any]:
    # Only what the envelope uses: AES-256, 96-bit nonce, 128-bit tag.
    return vector_params(AES_GCM_FILE, "AES-GCM", lambda group: (
        group["ivSize"], group["tagSize"], group["keySize"]) == (96, 128, 256))


@pytest.mark.parametrize("vector", _aes_gcm_params())
def test_wycheproof_aes_gcm_vectors_pass_through_aead_seal_and_open(
        vector: dict[str, Any]) -> None:
    if "missing" in vector:
        pytest.fail(f"Wycheproof test vectors not found: {vector['missing']} (expected them "
                    "in tests/vectors/wycheproof, copied from C2SP/wycheproof)", pytrace=False)
    key, iv, aad, msg = (bytes.fromhex(vector[name]) for name in ("key", "iv", "aad", "msg"))
    sealed = bytes.fromhex(vector["ct"]) + bytes.fromhex(vector["tag"])
    result = vector["result"]
    assert result in ("valid", "invalid", "acceptable")
    if result == "valid":
        assert aead_seal(key, iv, msg, aad) == sealed
        assert aead_open(key, iv, sealed, aad) == msg
    elif result == "invalid":
        with pytest.raises(InvalidTag):
            aead_open(key, iv, sealed, aad)
        assert aead_seal(key, iv, msg, aad) != sealed
    else:  # acceptable: either outcome, but a successful open must give the message back
        with contextlib.suppress(InvalidTag):
            assert aead_open(key, iv, sealed, aad) == msg


def test_aead_functions_refuse_other_key_and_nonce_sizes() -> None:
    for key, nonce in [(b"k" * 16, b"n" * 12), (b"k" * 24, b"n" * 12), (b"k" * 32, b"n" * 16),
                       (b"k" * 32, b"n" * 8)]:
        with pytest.raises(ValueError):
            aead_seal(key, nonce, b"data", b"")
        with pytest.raises(ValueError):
            aead_open(key, nonce, b"x" * 32, b"")
    with pytest.raises(InvalidTag):
        aead_open(b"k" * 32, b"n" * 12, b"short", b"")


# --- the envelope -------------------------------------------------------------------------------


DATA_KEY = bytes(range(32))


@pytest.fixture
def ring() -> MasterKeyring:
    return MasterKeyring.generate()


def test_a_wrapped_data_key_unwraps_for_its_own_file_and_account(ring: MasterKeyring) -> None:
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    assert wrapped.key_id == ring.current_id
    assert len(wrapped.nonce) == 12 and len(wrapped.ciphertext) == 48
    assert ring.unwrap(wrapped, file_id="f1", account_id="a1") == DATA_KEY


def test_wrapping_twice_uses_fresh_nonces(ring: MasterKeyring) -> None:
    first = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    second = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    assert first.nonce != second.nonce and first.ciphertext != second.ciphertext


def test_the_aad_binds_key_id_file_and_account() -> None:
    assert wrap_aad("mk-1", "f1", "a1") == b"vaultd/data-key/v1\x00mk-1\x00f1\x00a1"
    with pytest.raises(ValueError):
        wrap_aad("mk-1", "f\x001", "a1")


@pytest.mark.parametrize("moved", [{"file_id": "f2", "account_id": "a1"},
                                   {"file_id": "f1", "account_id": "a2"},
                                   {"file_id": "a1", "account_id": "f1"}])
def test_a_wrapped_key_copied_to_another_file_or_account_does_not_unwrap(
        ring: MasterKeyring, moved: dict[str, str]) -> None:
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    with pytest.raises(WrappedKeyCorrupt) as caught:
        ring.unwrap(wrapped, **moved)
    assert ring.current_id in str(caught.value)


@pytest.mark.parametrize("field", ["nonce", "ciphertext"])
def test_a_tampered_wrapped_key_does_not_unwrap(ring: MasterKeyring, field: str) -> None:
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    value = bytearray(getattr(wrapped, field))
    value[-1] ^= 1
    doc = wrapped.to_doc() | {field: bytes(value)}
    with pytest.raises(WrappedKeyCorrupt):
        ring.unwrap(WrappedKey.from_doc(doc), file_id="f1", account_id="a1")


def test_a_wrapped_key_relabelled_with_another_key_id_does_not_unwrap() -> None:
    ring = MasterKeyring.generate().with_new_current()
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    relabelled = WrappedKey(ring.ids[1], wrapped.nonce, wrapped.ciphertext)
    with pytest.raises(WrappedKeyCorrupt):
        ring.unwrap(relabelled, file_id="f1", account_id="a1")


def test_an_unknown_key_id_raises_key_unavailable_naming_only_the_id(ring: MasterKeyring) -> None:
    other = MasterKeyring.generate()
    wrapped = other.wrap(DATA_KEY, file_id="f1", account_id="a1")
    with pytest.raises(KeyUnavailable) as caught:
        ring.unwrap(wrapped, file_id="f1", account_id="a1")
    assert type(caught.value) is KeyUnavailable
    assert str(caught.value) == f"master key {wrapped.key_id!r} is not in the keyring"


def test_wrap_refuses_data_keys_that_are_not_32_bytes(ring: MasterKeyring) -> None:
    for bad in (b"", DATA_KEY[:16], DATA_KEY + b"x"):
        with pytest.raises(ValueError):
            ring.wrap(bad, file_id="f1", account_id="a1")


def test_a_wrapped_key_round_trips_through_a_bson_document(ring: MasterKeyring) -> None:
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    stored = bson.decode(bson.encode({"wrapped_key": wrapped.to_doc()}))["wrapped_key"]
    assert isinstance(stored["nonce"], bytes) and isinstance(stored["ciphertext"], bytes)
    restored = WrappedKey.from_doc(stored)
    assert restored == wrapped
    assert ring.unwrap(restored, file_id="f1", account_id="a1") == DATA_KEY


@pytest.mark.parametrize("doc", [{}, {"v": 1, "key_id": "mk", "nonce": "text", "ciphertext": b""},
                                 {"v": 2, "key_id": "mk", "nonce": b"", "ciphertext": b""},
                                 {"key_id": "mk", "nonce": b"", "ciphertext": b""}, None])
def test_a_malformed_wrapped_key_document_is_rejected(doc: Any) -> None:
    with pytest.raises(WrappedKeyCorrupt):
        WrappedKey.from_doc(doc)


def test_a_wrapped_key_with_a_bad_nonce_length_does_not_unwrap(ring: MasterKeyring) -> None:
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    with pytest.raises(WrappedKeyCorrupt):
        ring.unwrap(WrappedKey(wrapped.key_id, wrapped.nonce[:8], wrapped.ciphertext),
                    file_id="f1", account_id="a1")


# --- rotation -----------------------------------------------------------------------------------


def test_rotation_keeps_old_wrapped_keys_readable_and_rewraps_them(ring: MasterKeyring) -> None:
    old = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    rotated = ring.with_new_current()
    assert rotated.current_id != ring.current_id
    assert rotated.ids == (rotated.current_id, ring.current_id)
    assert ring.ids == (ring.current_id,)  # the original ring is unchanged
    assert rotated.unwrap(old, file_id="f1", account_id="a1") == DATA_KEY
    assert rotated.wrap(DATA_KEY, file_id="f2", account_id="a1").key_id == rotated.current_id

    rewrapped = rotated.rewrap(old, file_id="f1", account_id="a1")
    assert rewrapped.key_id == rotated.current_id
    retired = rotated.without([ring.current_id])
    assert retired.ids == (rotated.current_id,)
    assert retired.unwrap(rewrapped, file_id="f1", account_id="a1") == DATA_KEY
    with pytest.raises(KeyUnavailable):
        retired.unwrap(old, file_id="f1", account_id="a1")


def test_the_current_key_and_unknown_ids_cannot_be_removed(ring: MasterKeyring) -> None:
    rotated = ring.with_new_current()
    with pytest.raises(KeyringError, match="current"):
        rotated.without([rotated.current_id])
    with pytest.raises(KeyringError, match="unknown"):
        rotated.without(["mk-nope"])


def test_rewrap_under_another_file_fails(ring: MasterKeyring) -> None:
    old = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    with pytest.raises(WrappedKeyCorrupt):
        ring.with_new_current().rewrap(old, file_id="f2", account_id="a1")


# --- text format --------------------------------------------------------------------------------


KEY_A = bytes(range(32))
KEY_B = bytes(range(100, 132))
B64_A = base64.urlsafe_b64encode(KEY_A).rstrip(b"=").decode()
B64_B = base64.urlsafe_b64encode(KEY_B).rstrip(b"=").decode()


def test_parse_reads_comments_blank_lines_commas_and_newlines() -> None:
    text = f"# keys\n\n  mk-20261122-ab12cd:{B64_A} \n# old\nmk-old_1.x:{B64_B},\n"
    ring = MasterKeyring.parse(text, "master.key")
    assert ring.ids == ("mk-20261122-ab12cd", "mk-old_1.x")
    assert ring.current_id == "mk-20261122-ab12cd"
    one_line = MasterKeyring.parse(f"k1:{B64_A}, k2:{B64_B}", ENV_VAR)
    assert one_line.ids == ("k1", "k2")


def test_serialize_round_trips_in_both_forms(ring: MasterKeyring) -> None:
    rotated = ring.with_new_current()
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    for text in (rotated.serialize(), rotated.serialize(one_line=True)):
        parsed = MasterKeyring.parse(text, "test")
        assert parsed.ids == rotated.ids
        assert parsed.unwrap(wrapped, file_id="f1", account_id="a1") == DATA_KEY
    assert "\n" not in rotated.serialize(one_line=True)


SECRET_TEXT = B64_A  # must never show up in an error message


@pytest.mark.parametrize("text, expected", [
    ("", "no keys found"),
    ("# only a comment\n\n", "no keys found"),
    (SECRET_TEXT, "entry 1 is not of the form"),
    (f"k1:{B64_B}\n{SECRET_TEXT}", "entry 2 is not of the form"),
    (f"bad id:{SECRET_TEXT}", "entry 1 has an invalid key id"),
    (f"{'x' * 65}:{SECRET_TEXT}", "entry 1 has an invalid key id"),
    (f"a/b:{SECRET_TEXT}", "entry 1 has an invalid key id"),
    (f":{SECRET_TEXT}", "entry 1 has an invalid key id"),
    (f"k1:{B64_B},k2:{SECRET_TEXT[:-1]}", "entry 2 is not 32 bytes of base64url"),
    (f"k1:{SECRET_TEXT}AAAA", "entry 1 is not 32 bytes of base64url"),
    (f"k1:{SECRET_TEXT}=", "entry 1 is not 32 bytes of base64url"),
    (f"k1:{base64.b64encode(bytes([0xfb]) * 32).decode().rstrip('=')}",
     "entry 1 is not 32 bytes of base64url"),  # standard alphabet (+ /)
    (f"k1:{SECRET_TEXT[:-1]}B", "entry 1 is not 32 bytes of base64url"),  # non-canonical
    (f"k1:{SECRET_TEXT[:20]} {SECRET_TEXT[20:]}", "entry 1 is not 32 bytes of base64url"),
    (f"k1:{SECRET_TEXT}\nk1:{B64_B}", "entries 1 and 2 have the same key id"),
])
def test_parse_errors_are_one_line_naming_the_source_without_key_text(text: str,
                                                                      expected: str) -> None:
    with pytest.raises(KeyringError) as caught:
        MasterKeyring.parse(text, ENV_VAR)
    message = str(caught.value)
    assert message.startswith(f"master key ({ENV_VAR}): ")
    assert expected in message
    assert "\n" not in message
    for secret in (SECRET_TEXT, B64_B):
        for start in range(len(secret) - 8):
            assert secret[start:start + 8] not in message
    # Nothing chained underneath that a traceback could print.
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None or caught.value.__suppress_context__


def test_repr_and_str_never_show_key_bytes() -> None:
    ring = MasterKeyring.parse(f"k1:{B64_A}\nk0:{B64_B}", "test")
    wrapped = ring.wrap(DATA_KEY, file_id="f1", account_id="a1")
    texts = [repr(ring), str(ring), repr(wrapped), str(wrapped), f"{ring!r} {wrapped}"]
    secrets = [B64_A, B64_B, KEY_A.hex(), KEY_B.hex(), repr(KEY_A), repr(KEY_B),
               wrapped.ciphertext.hex(), repr(wrapped.ciphertext), repr(DATA_KEY)]
    for text in texts:
        for secret in secrets:
            assert secret not in text
    assert "k1" in repr(ring) and "k0" in repr(ring)
    assert "k1" in repr(wrapped) and "48 bytes" in repr(wrapped)


def test_the_ring_rejects_empty_duplicate_and_malformed_entries() -> None:
    with pytest.raises(KeyringError):
        MasterKeyring([])
    with pytest.raises(KeyringError):
        MasterKeyring([("k1", KEY_A), ("k1", KEY_B)])
    with pytest.raises(KeyringError):
        MasterKeyring([("k1", KEY_A[:16])])
    with pytest.raises(KeyringError):
        MasterKeyring([("bad id", KEY_A)])


def test_generated_key_ids_look_like_mk_date_suffix(ring: MasterKeyring) -> None:
    import re

    assert re.fullmatch(r"mk-\d{8}-[0-9a-f]{6}", ring.current_id)


# --- key files ----------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_load_or_create_creates_a_0600_file_and_loads_it_back(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    created = MasterKeyring.load_or_create(path)
    assert created.created and created.warnings == ()
    assert _mode(path) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["master.key"]  # no temp files left
    loaded = MasterKeyring.load_or_create(path)
    assert not loaded.created and loaded.warnings == ()
    assert loaded.ids == created.ids
    wrapped = created.wrap(DATA_KEY, file_id="f1", account_id="a1")
    assert loaded.unwrap(wrapped, file_id="f1", account_id="a1") == DATA_KEY


def test_load_or_create_never_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    path.write_text(f"k1:{B64_A}\n")
    path.chmod(0o600)
    assert MasterKeyring.load_or_create(path).ids == ("k1",)
    assert path.read_text() == f"k1:{B64_A}\n"


def test_concurrent_first_starts_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    barrier = threading.Barrier(8)
    results: list[str] = []

    def start() -> None:
        barrier.wait()
        results.append(MasterKeyring.load_or_create(path).current_id)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and len(set(results)) == 1
    assert MasterKeyring.load(path).current_id == results[0]


def test_a_key_file_readable_by_others_still_loads_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    path.write_text(f"# comment\nk1:{B64_A}\n")
    path.chmod(0o644)
    ring = MasterKeyring.load_or_create(path)
    assert ring.ids == ("k1",)
    assert len(ring.warnings) == 1
    assert "0644" in ring.warnings[0] and "chmod 600" in ring.warnings[0]
    assert B64_A not in ring.warnings[0]


def test_a_bad_key_file_names_the_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "master.key"
    path.write_text(f"k1:{B64_A}\nk2:{B64_B[:-3]}\n")
    with pytest.raises(KeyringError) as caught:
        MasterKeyring.load_or_create(path)
    assert str(caught.value) == (f"master key ({path}): entry 2 is not 32 bytes of base64url "
                                 "(43 characters, no padding)")
    path.write_bytes(b"k1:\xff\xfe\n")
    with pytest.raises(KeyringError, match="not UTF-8"):
        MasterKeyring.load(path)


def test_load_or_create_refuses_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(KeyringError, match="does not exist"):
        MasterKeyring.load_or_create(tmp_path / "typo" / "master.key")
    assert not (tmp_path / "typo").exists()


def test_save_replaces_the_file_atomically_with_mode_0600(tmp_path: Path,
                                                          ring: MasterKeyring) -> None:
    path = tmp_path / "master.key"
    path.write_text(f"k1:{B64_A}\n")
    path.chmod(0o644)
    rotated = ring.with_new_current()
    rotated.save(path)
    assert _mode(path) == 0o600
    assert MasterKeyring.load(path).ids == rotated.ids
    assert sorted(p.name for p in tmp_path.iterdir()) == ["master.key"]
