#!/usr/bin/env python3
"""Verifies a vaultd audit export offline: one file, the standard library and `cryptography`.

    python audit_verify.py EXPORT.json [--since OLDER.json] [--key VERIFIER_KEY ...]

Checks, naming each failure on its own line, and exits 1 if there is any (0: all hold):
every checkpoint's Ed25519 signature (C2SP signed note) by a key of the export, or only by the
`--key`s given (`<name>+<key id>+<base64>`, as `GET /v1/audit/keys` publishes them); the
checkpoints in increasing size; each entry re-encoded and hashed to its leaf hash (RFC 6962),
none missing; the tree rebuilt from those leaves to every checkpoint's root; each consistency
proof (RFC 9162). With `--since`, an older export the customer kept: its newest checkpoint must
still verify, be no newer than the new one, and its tree be a prefix of the new tree (the
consistency proof between the two checkpoints, and entry by entry).

It imports nothing of vaultd, so a customer can read it whole and run it anywhere
(docs/audit.md, "Verifying an export").
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

FORMAT = "vaultd-audit-export/1"
ED25519 = 1
DASH = "\u2014"


# --- RFC 6962 hashing and RFC 9162 proof verification -----------------------------------------


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_inclusion(index: int, size: int, leaf: bytes, proof: list[bytes], root: bytes) -> bool:
    """RFC 9162 2.1.3.2."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       proof: list[bytes]) -> bool:
    """RFC 9162 2.1.4.2."""
    if first == second:
        return not proof and first_root == second_root
    if not 0 < first < second or not proof:
        return False
    if first & (first - 1) == 0:  # a power of two: the first tree is a node of the second
        proof = [first_root, *proof]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == first_root and sr == second_root


class Tree:
    """Leaf hashes appended one by one; the root of every prefix asked for on the way."""

    def __init__(self) -> None:
        self.size = 0
        self.frontier: list[tuple[int, bytes]] = []

    def append(self, leaf: bytes) -> None:
        level, digest = 0, leaf
        while self.frontier and self.frontier[-1][0] == level:
            digest = node_hash(self.frontier.pop()[1], digest)
            level += 1
        self.frontier.append((level, digest))
        self.size += 1

    def root(self) -> bytes:
        if not self.frontier:
            return hashlib.sha256(b"").digest()
        root = self.frontier[-1][1]
        for _, digest in reversed(self.frontier[:-1]):
            root = node_hash(digest, root)
        return root


# --- the leaf encoding (docs/audit.md, "The leaf") --------------------------------------------


def encode_leaf(kind: str, entry_id: str, account_id: str, entry: Any) -> bytes:
    body = {"account": account_id, "entry": entry, "id": entry_id, "type": kind, "v": 1}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


# --- C2SP signed notes and checkpoints ---------------------------------------------------------


@dataclass(frozen=True)
class VerifierKey:
    name: str
    key_id: bytes
    public: Ed25519PublicKey
    text: str


def parse_verifier_key(text: str) -> VerifierKey:
    name, key_hex, encoded = text.split("+", 2)  # a name has no "+"; base64 may
    raw = base64.b64decode(encoded, validate=True)
    if raw[0] != ED25519 or len(raw) != 33:
        raise ValueError(f"not an Ed25519 verifier key: {text}")
    key_id = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if key_id.hex() != key_hex:
        raise ValueError(f"verifier key id does not match its key: {text}")
    return VerifierKey(name, key_id, Ed25519PublicKey.from_public_bytes(raw[1:]), text)


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    signed_by: str | None  # the verifier key that verified it; None: no known key did


def open_note(note: str, keys: Iterable[VerifierKey]) -> tuple[str, str | None]:
    """The note's text and the first known key whose signature on it verifies."""
    text, sep, signatures = note.rpartition("\n\n")
    if not sep:
        raise ValueError("not a signed note")
    text += "\n"
    for line in signatures.splitlines():
        if not line.startswith(DASH + " "):
            raise ValueError("malformed signature line")
        name, _, blob_text = line[2:].rpartition(" ")
        blob = base64.b64decode(blob_text, validate=True)
        for key in keys:
            if key.name == name and key.key_id == blob[:4]:
                try:
                    key.public.verify(blob[4:], text.encode())
                    return text, key.text
                except InvalidSignature:
                    continue
    return text, None


def parse_checkpoint(note: str, keys: Iterable[VerifierKey]) -> Checkpoint:
    text, signer = open_note(note, keys)
    lines = text.split("\n")
    if len(lines) < 4 or not lines[1].isdigit():
        raise ValueError("not a checkpoint")
    return Checkpoint(lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True), signer)


# --- verifying an export -----------------------------------------------------------------------


@dataclass
class Verified:
    checkpoints: list[Checkpoint]
    leaf_hashes: list[bytes | None]
    problems: list[str]


def _b64(value: str | None) -> bytes | None:
    try:
        return None if value is None else base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _checkpoints(export: dict[str, Any], keys: list[VerifierKey], problems: list[str],
                 ) -> list[Checkpoint]:
    found, previous = [], 0
    for number, note in enumerate(export.get("checkpoints", [])):
        try:
            checkpoint = parse_checkpoint(note, keys)
        except (ValueError, binascii.Error) as error:
            problems.append(f"checkpoint #{number}: malformed ({error})")
            continue
        name = f"checkpoint #{number} (size {checkpoint.size})"
        if checkpoint.signed_by is None:
            problems.append(f"{name}: no trusted key's signature verifies")
        if checkpoint.origin != export.get("origin"):
            problems.append(f"{name}: origin {checkpoint.origin!r} is not this log's")
        if checkpoint.size <= previous:
            problems.append(f"{name}: not newer than the checkpoint before it (replayed)")
        previous = max(previous, checkpoint.size)
        found.append(checkpoint)
    return found


def _entries(export: dict[str, Any], problems: list[str]) -> list[bytes | None]:
    size = int(export.get("treeSize", 0))
    hashes: list[bytes | None] = [None] * size
    seen = [False] * size
    for item in export.get("entries", []):
        index = item.get("index")
        if not isinstance(index, int) or not 0 <= index < size or seen[index]:
            problems.append(f"entry {index}: index outside the log or repeated")
            continue
        seen[index] = True
        name = f"entry {index} ({item.get('type')} {item.get('id')})"
        stored = _b64(item.get("leafHash"))
        if item.get("entry") is None:
            problems.append(f"{name}: the entry is missing (deleted from the database)")
        else:
            leaf = leaf_hash(encode_leaf(item["type"], item["id"], export["account"],
                                     item["entry"]))
            if stored != leaf:
                problems.append(f"{name}: its content does not hash to the tree's leaf "
                                "(edited, or moved to another index)")
        hashes[index] = stored
    problems.extend(f"entry {index}: missing from the export" for index in range(size)
                    if not seen[index])
    return hashes


def _roots(checkpoints: list[Checkpoint], hashes: list[bytes | None],
           problems: list[str]) -> None:
    tree, wanted = Tree(), {c.size: c for c in checkpoints}
    for index, digest in enumerate(hashes):
        if digest is None:
            return  # already named: the roots past it cannot be rebuilt
        tree.append(digest)
        checkpoint = wanted.get(index + 1)
        if checkpoint is not None and tree.root() != checkpoint.root:
            problems.append(f"checkpoint of size {checkpoint.size}: its root is not the root "
                            "of the exported entries' tree")


def _proofs(export: dict[str, Any], checkpoints: list[Checkpoint], problems: list[str]) -> None:
    if not checkpoints:
        return
    newest = checkpoints[-1]
    for checkpoint in checkpoints[:-1]:
        proof = [_b64(h) or b"" for h in export.get("consistency", {}).get(
            str(checkpoint.size), [])]
        if checkpoint.size < newest.size and not verify_consistency(
                checkpoint.size, newest.size, checkpoint.root, newest.root, proof):
            problems.append(f"checkpoint of size {checkpoint.size}: no valid consistency "
                            f"proof to the newest (size {newest.size})")


def verify(export: dict[str, Any], trusted: list[str] | None = None) -> Verified:
    problems: list[str] = []
    if export.get("format") != FORMAT:
        return Verified([], [], [f"not a {FORMAT} export"])
    texts = trusted if trusted else [key["verifierKey"] for key in export.get("keys", [])]
    keys = []
    for text in texts:
        try:
            keys.append(parse_verifier_key(text))
        except (ValueError, binascii.Error) as error:
            problems.append(f"key {text}: {error}")
    checkpoints = _checkpoints(export, keys, problems)
    if not checkpoints:
        problems.append("no checkpoint")
    elif checkpoints[-1].size != export.get("treeSize"):
        problems.append(f"treeSize {export.get('treeSize')} is not the newest checkpoint's")
    hashes = _entries(export, problems)
    _roots(checkpoints, hashes, problems)
    _proofs(export, checkpoints, problems)
    return Verified(checkpoints, hashes, problems)


def verify_since(new: dict[str, Any], old: dict[str, Any],
                 trusted: list[str] | None = None) -> list[str]:
    """`new` verified, then checked against `old`, an export the customer kept."""
    kept_keys = [key["verifierKey"] for key in old.get("keys", [])]
    newer = verify(new, trusted)
    older = verify(old, trusted or kept_keys)
    problems = newer.problems + [f"older export: {p}" for p in older.problems]
    if not newer.checkpoints or not older.checkpoints:
        return problems
    kept, latest = older.checkpoints[-1], newer.checkpoints[-1]
    name = f"the kept checkpoint (size {kept.size})"
    if old.get("origin") != new.get("origin"):
        return [*problems, "the two exports are of different logs"]
    if latest.size < kept.size:
        return [*problems, f"{name} is newer than the new export's newest checkpoint (size "
                f"{latest.size}): an old checkpoint was replayed"]
    proof = [_b64(h) or b"" for h in new.get("consistency", {}).get(str(kept.size), [])]
    if kept.size < latest.size and not verify_consistency(kept.size, latest.size, kept.root,
                                                          latest.root, proof):
        problems.append(f"{name} is not consistent with the newest checkpoint (size "
                        f"{latest.size}): the log was rewritten (a fork)")
    elif kept.size == latest.size and kept.root != latest.root:
        problems.append(f"{name} and the new checkpoint of the same size differ: a fork")
    for index, (was, now) in enumerate(zip(older.leaf_hashes, newer.leaf_hashes, strict=False)):
        if was != now:
            problems.append(f"entry {index}: differs from the kept export (rewritten)")
            break
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify a vaultd audit export offline.")
    parser.add_argument("export", type=Path)
    parser.add_argument("--since", type=Path, help="an older export of the same log, kept")
    parser.add_argument("--key", action="append", help="trust only this verifier key")
    args = parser.parse_args(argv)
    try:
        new = json.loads(args.export.read_text())
        old = json.loads(args.since.read_text()) if args.since else None
    except (OSError, ValueError) as error:
        print(f"cannot read the export: {error}", file=sys.stderr)
        return 2
    problems = (verify_since(new, old, args.key) if old is not None
                else verify(new, args.key).problems)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"ok: {new.get('treeSize')} entries, {len(new.get('checkpoints', []))} checkpoints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
