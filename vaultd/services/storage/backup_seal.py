"""The backup manifest's MAC: what makes a backup's checksums worth trusting.

The manifest names the sha256 and size of every other file of the backup; anyone who can write
the backup's directory can change a file and write its new checksum too. So the manifest is
signed: HMAC-SHA256 over its canonical JSON (keys sorted, no spaces, ASCII; every field but
`mac`) under a key of its own, HKDF-SHA256 of the master key current when the backup was made
with the label `vaultd/backup-manifest-mac/v1` (`MasterKeyring.subkey`). A backup holds no key,
so only a holder of the master key can make a manifest that verifies; and a manifest made under
one vault's key does not verify under another's.

A manifest without a MAC (a backup written by an older vaultd, or one whose MAC was stripped)
is refused unless the operator says `--accept-unauthenticated` (docs/operations.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from vaultd.crypto.keyring import MasterKeyring

MAC_FIELD = "mac"
MAC_ALGORITHM = "HMAC-SHA256"
MAC_LABEL = b"vaultd/backup-manifest-mac/v1"
MANIFEST = "manifest.json"

NO_MAC = (f"{MANIFEST}: carries no MAC, so nothing shows it is the manifest vaultd wrote (a "
          "backup of an older vaultd, or one stripped of its MAC): refused; "
          "--accept-unauthenticated reads it anyway")
BAD_MAC = (f"{MANIFEST}: MAC mismatch: changed since the backup was made, or not made under "
           "this master key")


def signed_bytes(manifest: Mapping[str, Any]) -> bytes:
    body = {key: value for key, value in manifest.items() if key != MAC_FIELD}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _mac(ring: MasterKeyring, key_id: str, manifest: Mapping[str, Any]) -> str:
    key = ring.subkey(key_id, MAC_LABEL)
    return hmac.new(key, signed_bytes(manifest), hashlib.sha256).hexdigest()


def sealed(manifest: Mapping[str, Any], ring: MasterKeyring) -> dict[str, Any]:
    """The manifest with its MAC, under the ring's current key."""
    mac = {"algorithm": MAC_ALGORITHM, "keyId": ring.current_id,
           "value": _mac(ring, ring.current_id, manifest)}
    return {**manifest, MAC_FIELD: mac}


def mac_problem(manifest: Mapping[str, Any], ring: MasterKeyring,
                accept_unauthenticated: bool = False) -> str | None:
    """None when the MAC holds (or is absent and accepted), else the one line that says why
    not."""
    mac = manifest.get(MAC_FIELD)
    if mac is None:
        return None if accept_unauthenticated else NO_MAC
    if not isinstance(mac, dict) or mac.get("algorithm") != MAC_ALGORITHM or not isinstance(
            mac.get("value"), str) or not isinstance(mac.get("keyId"), str):
        return f"{MANIFEST}: its MAC is not an {MAC_ALGORITHM} this vaultd reads"
    if mac["keyId"] not in ring:
        return (f"{MANIFEST}: its MAC is under master key {mac['keyId']}, which the supplied "
                "keyring does not hold")
    if not hmac.compare_digest(_mac(ring, mac["keyId"], manifest), mac["value"]):
        return BAD_MAC
    return None
