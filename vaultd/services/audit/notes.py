"""C2SP signed notes and tlog checkpoints (c2sp.org/signed-note, c2sp.org/tlog-checkpoint).

A checkpoint's body is three lines: the origin, the tree size in decimal, the root hash in
standard base64. The note appends an empty line and one signature line per key:
`— <key name> <base64(key id || Ed25519 signature)>`, the key id being the first four bytes of
SHA-256(key name || 0x0A || 0x01 || public key). The verifier key is published as
`<name>+<key id hex>+<base64(0x01 || public key)>`.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ED25519 = b"\x01"  # the signed-note algorithm byte for Ed25519
DASH = "\u2014"


def key_id(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + ED25519 + public_key).digest()[:4]


def verifier_key(name: str, public_key: bytes) -> str:
    encoded = base64.b64encode(ED25519 + public_key).decode()
    return f"{name}+{key_id(name, public_key).hex()}+{encoded}"


def checkpoint_body(origin: str, size: int, root: bytes) -> str:
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def sign(text: str, name: str, private_key: Ed25519PrivateKey) -> str:
    """The signed note of `text` (which ends in a newline) under one key."""
    public = private_key.public_key().public_bytes_raw()
    signature = private_key.sign(text.encode())
    blob = base64.b64encode(key_id(name, public) + signature).decode()
    return f"{text}\n{DASH} {name} {blob}\n"
