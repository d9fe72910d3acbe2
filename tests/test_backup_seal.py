"""The backup manifest's MAC, in process: under a key of its own derived from the master key
(HKDF-SHA256, its own label), over every field but itself; a change to any field, another
vault's key or a stripped MAC fails it (the CLI side: tests/test_backup_tamper.py)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from vaultd.crypto.keyring import KeyUnavailable, MasterKeyring
from vaultd.services.storage.backup_seal import BAD_MAC, NO_MAC, mac_problem, sealed

KEY = bytes(range(32))
RING = MasterKeyring([("mk-a", KEY), ("mk-b", b"\x02" * 32)])
MANIFEST = {"format": "vaultd-backup/1", "files": {"db/api_keys.jsonl": {"sha256": "ab",
                                                                         "size": 10}},
            "blobs": {}, "masterKey": {"currentId": "mk-a"}}


def test_the_mac_is_hmac_sha256_under_an_hkdf_subkey_of_the_current_key() -> None:
    mac = sealed(MANIFEST, RING)["mac"]
    subkey = HKDF(hashes.SHA256(), 32, salt=None,
                  info=b"vaultd/backup-manifest-mac/v1").derive(KEY)
    body = json.dumps(MANIFEST, sort_keys=True, separators=(",", ":")).encode()
    assert mac == {"algorithm": "HMAC-SHA256", "keyId": "mk-a",
                   "value": hmac.new(subkey, body, hashlib.sha256).hexdigest()}
    # Its own key: neither the master key nor the fingerprint's.
    assert mac["value"] != hmac.new(KEY, body, hashlib.sha256).hexdigest()
    assert subkey != KEY and KEY.hex() not in json.dumps(sealed(MANIFEST, RING))


def test_a_sealed_manifest_verifies_after_a_round_trip_through_its_file() -> None:
    written = json.loads(json.dumps(sealed(MANIFEST, RING), indent=2, sort_keys=True))
    assert mac_problem(written, RING) is None


def test_any_change_another_key_or_no_mac_fails() -> None:
    manifest = sealed(MANIFEST, RING)
    changed = json.loads(json.dumps(manifest))
    changed["files"]["db/api_keys.jsonl"]["size"] = 11
    assert mac_problem(changed, RING) == BAD_MAC
    added = {**manifest, "note": "harmless?"}
    assert mac_problem(added, RING) == BAD_MAC
    other_vault = MasterKeyring([("mk-a", b"\x07" * 32)])
    assert mac_problem(manifest, other_vault) == BAD_MAC
    stripped = {key: value for key, value in manifest.items() if key != "mac"}
    assert mac_problem(stripped, RING) == NO_MAC
    assert mac_problem(stripped, RING, accept_unauthenticated=True) is None
    # Accepting a manifest without a MAC never accepts a wrong one.
    assert mac_problem(changed, RING, accept_unauthenticated=True) == BAD_MAC


def test_a_mac_that_is_not_ours_is_named() -> None:
    manifest = sealed(MANIFEST, RING)
    assert mac_problem({**manifest, "mac": "deadbeef"}, RING) == (
        "manifest.json: its MAC is not an HMAC-SHA256 this vaultd reads")
    assert mac_problem({**manifest, "mac": {**manifest["mac"], "keyId": "mk-z"}}, RING) == (
        "manifest.json: its MAC is under master key mk-z, which the supplied keyring does not "
        "hold")


def test_subkeys_differ_by_label_and_key_and_need_the_key() -> None:
    assert RING.subkey("mk-a", b"one") != RING.subkey("mk-a", b"two")
    assert RING.subkey("mk-a", b"one") != RING.subkey("mk-b", b"one")
    with pytest.raises(KeyUnavailable, match="master key 'mk-z' is not in the keyring"):
        RING.subkey("mk-z", b"one")
