"""RFC 9162 section 2.1: the Merkle tree hash, inclusion and consistency proofs, and their
verification. Pure functions over hashes (bytes); no storage here.

A tree is read through ``get(level, index)``: the hash of the complete subtree of ``2**level``
leaves starting at leaf ``index << level`` (what :mod:`walletctl.history.tree` stores, one
row per node). Every range the RFC's recursions ask for splits into such subtrees, so a
proof reads O(log n) of them; :func:`gather` runs a computation once to learn which
nodes it reads, fetches them all at once, and runs it again.

``pymerkle`` (7.x) was compared: it stores the leaves only and rebuilds a subtree's hash
from them when a proof needs it (its cost grows with the range, not log n), and it has no
PostgreSQL storage; the RFC's algorithms are short enough to keep here, tested against the
published vectors and an independent reference (tests/history/test_merkle.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

NodeGetter = Callable[[int, int], bytes]
T = TypeVar("T")

EMPTY_ROOT = hashlib.sha256(b"").digest()
_PLACEHOLDER = b"\x00" * 32


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two smaller than ``size`` (``size`` >= 2)."""
    return 1 << ((size - 1).bit_length() - 1)


def subtree_hash(get: NodeGetter, start: int, end: int) -> bytes:
    """MTH(D[start:end]) from the stored complete subtrees."""
    size = end - start
    if size <= 0:
        return EMPTY_ROOT
    if size & (size - 1) == 0 and start % size == 0:
        level = size.bit_length() - 1
        return get(level, start >> level)
    k = _split(size)
    return node_hash(subtree_hash(get, start, start + k), subtree_hash(get, start + k, end))


def root_hash(get: NodeGetter, size: int) -> bytes:
    return subtree_hash(get, 0, size)


def inclusion_path(get: NodeGetter, index: int, size: int) -> list[bytes]:
    """PATH(index, D[size]) (RFC 9162 2.1.3.1)."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    path: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            path.append(subtree_hash(get, start + k, end))
            end = start + k
        else:
            path.append(subtree_hash(get, start, start + k))
            start += k
    path.reverse()  # the recursion appends from the leaf up
    return path


def consistency_proof(get: NodeGetter, old: int, new: int) -> list[bytes]:
    """PROOF(old, D[new]) (RFC 9162 2.1.4.1); empty when ``old`` is 0 or ``new``."""
    if not 0 <= old <= new:
        raise ValueError(f"a tree of {old} is not a prefix of one of {new}")
    if old in (0, new):
        return []
    proof: list[bytes] = []
    start, end, m, whole = 0, new, old, True
    while True:
        size = end - start
        if m == size:
            if not whole:
                proof.append(subtree_hash(get, start, end))
            break
        k = _split(size)
        if m <= k:
            proof.append(subtree_hash(get, start + k, end))
            end = start + k
        else:
            proof.append(subtree_hash(get, start, start + k))
            start, m, whole = start + k, m - k, False
    proof.reverse()
    return proof


def gather(compute: Callable[[NodeGetter], T],
           fetch: Callable[[set[tuple[int, int]]], dict[tuple[int, int], bytes]]) -> T:
    """``compute`` with the nodes it reads fetched in one go (a few queries, not one per
    node). A node ``fetch`` does not return raises KeyError."""
    wanted: set[tuple[int, int]] = set()

    def note(level: int, index: int) -> bytes:
        wanted.add((level, index))
        return _PLACEHOLDER

    compute(note)
    found = fetch(wanted)
    return compute(lambda level, index: found[(level, index)])


def _sized(*hashes: bytes) -> bool:
    return all(len(h) == 32 for h in hashes)


def verify_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes],
                     root: bytes) -> bool:
    """RFC 9162 2.1.3.2: whether ``path`` proves ``leaf`` is leaf ``index`` of the tree of
    ``size`` whose hash is ``root``."""
    if not 0 <= index < size or not _sized(leaf, root, *path):
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes,
                       proof: Sequence[bytes]) -> bool:
    """RFC 9162 2.1.4.2: whether ``proof`` shows the tree of ``old`` (``old_root``) is a
    prefix of the tree of ``new`` (``new_root``)."""
    if not 0 < old <= new or not _sized(*proof):  # nothing proves a tree extends the empty one
        return False
    if old == new:
        return not proof and old_root == new_root
    if not proof:
        return False
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


class Frontier:
    """The right edge of a growing tree: the complete subtrees its leaves so far make, the
    largest first (at most log2(n) of them). :meth:`add` appends a leaf and returns the
    nodes it completes, each ``(level, index, hash)``: what is stored per leaf, about two
    on average, never a rebuild."""

    def __init__(self, size: int = 0,
                 nodes: Iterable[tuple[int, int, bytes]] = ()) -> None:
        self.size = size
        self.nodes = list(nodes)

    @staticmethod
    def keys(size: int) -> list[tuple[int, int]]:
        """The (level, index) of the complete subtrees a tree of ``size`` is made of."""
        found: list[tuple[int, int]] = []
        start = 0
        for level in range(size.bit_length() - 1, -1, -1):
            if size >> level & 1:
                found.append((level, start >> level))
                start += 1 << level
        return found

    def add(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        level, index, digest = 0, self.size, leaf
        made = [(0, index, digest)]
        while index & 1:
            _, _, left = self.nodes.pop()
            digest = node_hash(left, digest)
            level, index = level + 1, index >> 1
            made.append((level, index, digest))
        self.nodes.append((level, index, digest))
        self.size += 1
        return made

    def root(self) -> bytes:
        if not self.nodes:
            return EMPTY_ROOT
        digest = self.nodes[-1][2]
        for _, _, left in reversed(self.nodes[:-1]):
            digest = node_hash(left, digest)
        return digest
