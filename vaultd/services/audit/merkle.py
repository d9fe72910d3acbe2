"""RFC 6962 / RFC 9162 Merkle tree hashing, and which subtrees a proof is made of.

A leaf hashes as SHA-256(0x00 || leaf), an interior node as SHA-256(0x01 || left || right); the
tree over n leaves splits at the largest power of two below n. Proofs are lists of subtree
hashes; which subtrees (as leaf ranges `[start, end)`) is pure arithmetic, kept here, so the
store reads exactly those and nothing else (`tree_store`). Verification is the stand-alone
verifier's (`tools/audit_verify.py`), which imports nothing of this.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

Range = tuple[int, int]  # leaves [start, end) of a subtree

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(size: int) -> int:
    """The largest power of two strictly below `size` (size >= 2): where RFC 6962 splits."""
    return 1 << ((size - 1).bit_length() - 1)


def is_complete(start: int, end: int) -> bool:
    """A stored node: a power-of-two run of leaves aligned on its own size."""
    width = end - start
    return width > 0 and width & (width - 1) == 0 and start % width == 0


def node_key(start: int, end: int) -> tuple[int, int]:
    """(level, index) of a complete subtree."""
    level = (end - start).bit_length() - 1
    return level, start >> level


def pieces(start: int, end: int) -> list[Range]:
    """The complete subtrees a range's hash is computed from (itself when complete): at most
    one per level, so O(log n) stored nodes whatever the range."""
    if is_complete(start, end):
        return [(start, end)]
    middle = start + split(end - start)
    return [(start, middle), *pieces(middle, end)]


def range_hash(start: int, end: int, complete: Callable[[int, int], bytes]) -> bytes:
    """MTH(D[start:end]) from the hashes of its complete pieces (`complete(level, index)`);
    the left part of every split is complete, so this recurses down the right edge only."""
    if is_complete(start, end):
        return complete(*node_key(start, end))
    middle = start + split(end - start)
    return node_hash(complete(*node_key(start, middle)), range_hash(middle, end, complete))


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """RFC 9162 2.1.3.1 PATH(m, D[n]), leaf to root, as subtree ranges."""
    if not 0 <= index < size:
        raise ValueError("index outside the tree")
    path: list[Range] = []
    start, end = 0, size
    while end - start > 1:
        middle = start + split(end - start)
        if index < middle:
            path.append((middle, end))
            end = middle
        else:
            path.append((start, middle))
            start = middle
    return path[::-1]


def consistency_ranges(first: int, second: int) -> list[Range]:
    """RFC 9162 2.1.4.1 PROOF(m, D[n]) for 0 < m < n, as subtree ranges, leaf side first."""
    if not 0 < first < second:
        raise ValueError("sizes must satisfy 0 < first < second")
    path: list[Range] = []
    start, end, whole = 0, second, True
    while True:
        if first == end - start:
            if not whole:
                path.append((start, end))
            break
        middle = start + split(end - start)
        if first <= middle - start:
            path.append((middle, end))
            end = middle
        else:
            path.append((start, middle))
            first -= middle - start
            start, whole = middle, False
    return path[::-1]


def needed_nodes(ranges: list[Range]) -> set[tuple[int, int]]:
    """The stored nodes (level, index) the hashes of `ranges` are made of."""
    return {node_key(*piece) for start, end in ranges for piece in pieces(start, end)}


def append(frontier: list[tuple[int, bytes]], size: int, leaf: bytes,
           closed: list[tuple[int, int, bytes]]) -> None:
    """Adds leaf number `size` (its leaf hash) to the compact range `frontier` (the complete
    subtrees of `pieces(0, size)`, as (level, hash), highest level first), and appends to
    `closed` every node it completes, (level, index, hash), the leaf itself included."""
    level, digest = 0, leaf
    closed.append((0, size, digest))
    while frontier and frontier[-1][0] == level:
        _, left = frontier.pop()
        digest = node_hash(left, digest)
        level += 1
        closed.append((level, size >> level, digest))
    frontier.append((level, digest))


def frontier_root(frontier: list[tuple[int, bytes]]) -> bytes:
    """MTH of the whole tree from its compact range."""
    if not frontier:
        return EMPTY_ROOT
    root = frontier[-1][1]
    for _, digest in reversed(frontier[:-1]):
        root = node_hash(digest, root)
    return root
