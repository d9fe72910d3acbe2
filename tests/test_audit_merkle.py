"""The audit log's hashing, proofs and signed notes against published vectors (RFC 6962 as the
Certificate Transparency projects publish it; the Go and C2SP signed-note examples), and the
service's proofs checked by the stand-alone verifier over every pair of sizes up to 40."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from admin_cli import audit_verify
from vaultd.services.audit import merkle, notes

VECTORS = Path(__file__).parent / "vectors"
REFERENCE = json.loads((VECTORS / "rfc6962" / "reference.json").read_text())
NOTES = json.loads((VECTORS / "signed_note" / "vectors.json").read_text())
LEAVES = [bytes.fromhex(leaf) for leaf in REFERENCE["leaves_hex"]]


def b64(text: str) -> bytes:
    return base64.b64decode(text)


def built(leaves: list[bytes]) -> dict[tuple[int, int], bytes]:
    """Every complete subtree of a tree of these leaves, as the sequencer stores them."""
    frontier: list[tuple[int, bytes]] = []
    closed: list[tuple[int, int, bytes]] = []
    for index, leaf in enumerate(leaves):
        merkle.append(frontier, index, merkle.leaf_hash(leaf), closed)
    return {(level, index): digest for level, index, digest in closed}


def proof(nodes: dict[tuple[int, int], bytes], ranges: list[merkle.Range]) -> list[bytes]:
    return [merkle.range_hash(start, end, lambda level, index: nodes[(level, index)])
            for start, end in ranges]


@pytest.mark.parametrize("size", range(len(LEAVES) + 1))
def test_roots_match_the_reference_tree(size: int) -> None:
    frontier: list[tuple[int, bytes]] = []
    closed: list[tuple[int, int, bytes]] = []
    verifier_tree = audit_verify.Tree()
    for index, leaf in enumerate(LEAVES[:size]):
        merkle.append(frontier, index, merkle.leaf_hash(leaf), closed)
        verifier_tree.append(audit_verify.leaf_hash(leaf))
    assert merkle.frontier_root(frontier).hex() == REFERENCE["roots_hex"][size]
    assert verifier_tree.root().hex() == REFERENCE["roots_hex"][size]


@pytest.mark.parametrize("vector", REFERENCE["inclusion"], ids=lambda v: v["desc"])
def test_inclusion_vectors(vector: dict[str, object]) -> None:
    index, size = int(vector["leafIdx"]), int(vector["treeSize"])  # type: ignore[call-overload]
    expected = [b64(h) for h in vector["proof"]]  # type: ignore[attr-defined]
    ok = audit_verify.verify_inclusion(index, size, b64(vector["leafHash"]),  # type: ignore[arg-type]
                                       expected, b64(vector["root"]))  # type: ignore[arg-type]
    assert ok is not vector["wantErr"]
    nodes = built(LEAVES[:size])
    assert proof(nodes, merkle.inclusion_ranges(index, size)) == expected


@pytest.mark.parametrize("vector", REFERENCE["consistency"], ids=lambda v: v["desc"])
def test_consistency_vectors(vector: dict[str, object]) -> None:
    first, second = int(vector["size1"]), int(vector["size2"])  # type: ignore[call-overload]
    expected = [b64(h) for h in vector["proof"]]  # type: ignore[attr-defined]
    ok = audit_verify.verify_consistency(first, second, b64(vector["root1"]),  # type: ignore[arg-type]
                                         b64(vector["root2"]), expected)  # type: ignore[arg-type]
    assert ok is not vector["wantErr"]
    nodes = built(LEAVES[:second])
    assert proof(nodes, merkle.consistency_ranges(first, second)) == expected


def test_every_proof_up_to_forty_leaves_verifies_and_a_flipped_bit_does_not() -> None:
    leaves = [f"entry {n}".encode() for n in range(40)]
    nodes = built(leaves)
    roots = [merkle.range_hash(0, n, lambda level, index: nodes[(level, index)]) if n else
             merkle.EMPTY_ROOT for n in range(41)]
    for size in range(1, 41):
        for index in range(size):
            path = proof(nodes, merkle.inclusion_ranges(index, size))
            leaf = merkle.leaf_hash(leaves[index])
            assert audit_verify.verify_inclusion(index, size, leaf, path, roots[size])
            assert not audit_verify.verify_inclusion(index, size, leaf[::-1], path, roots[size])
        for first in range(1, size):
            path = proof(nodes, merkle.consistency_ranges(first, size))
            assert audit_verify.verify_consistency(first, size, roots[first], roots[size], path)
            assert not audit_verify.verify_consistency(first, size, roots[first - 1] if first > 1
                                                       else roots[size], roots[size], path)


def test_a_proof_reads_only_logarithmically_many_nodes() -> None:
    size = 10**6 + 12345
    ranges = merkle.inclusion_ranges(777_777, size) + merkle.consistency_ranges(999_999, size)
    assert len(merkle.needed_nodes(ranges)) <= 2 * 2 * size.bit_length()


def test_the_go_reference_note_is_reproduced_byte_for_byte() -> None:
    vector = NOTES["go_sumdb_note"]
    seed = base64.b64decode(vector["signer_key"].split("+", 4)[4])[1:]
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes_raw()
    assert notes.verifier_key("PeterNeumann", public) == vector["verifier_key"]
    assert notes.sign(vector["text"], "PeterNeumann", private) == vector["note"]
    key = audit_verify.parse_verifier_key(vector["verifier_key"])
    assert audit_verify.open_note(vector["note"], [key]) == (vector["text"], key.text)


def test_the_c2sp_example_note_verifies_and_a_changed_byte_does_not() -> None:
    vector = NOTES["c2sp_signed_note"]
    key = audit_verify.parse_verifier_key(vector["verifier_key"])
    assert audit_verify.open_note(vector["note"], [key])[1] == key.text
    forged = vector["note"].replace("example message", "example massage")
    assert audit_verify.open_note(forged, [key])[1] is None


def test_a_checkpoint_names_origin_size_and_root() -> None:
    private = Ed25519PrivateKey.generate()
    public = private.public_key().public_bytes_raw()
    root = bytes(range(32))
    note = notes.sign(notes.checkpoint_body("vaultd.test/audit/acct", 42, root), "k", private)
    key = audit_verify.parse_verifier_key(notes.verifier_key("k", public))
    checkpoint = audit_verify.parse_checkpoint(note, [key])
    assert (checkpoint.origin, checkpoint.size, checkpoint.root) == ("vaultd.test/audit/acct",
                                                                     42, root)
    assert checkpoint.signed_by == key.text
