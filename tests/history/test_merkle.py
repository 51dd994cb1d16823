"""RFC 9162 section 2.1 (walletctl.history.merkle): the published vectors, and every tree
size 1..1000 against a reference written straight from the RFC's recursive definitions."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from walletctl.history import merkle

VECTORS = json.loads((Path(__file__).parent / "data" / "rfc6962_vectors.json").read_text())
# RFC 6962's reference leaves (Certificate Transparency's tests, transparency-dev/merkle)
LEAVES = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243",
                                     "5051525354555657", "606162636465666768696a6b6c6d6e6f")]
ROOTS = ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
         "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
         "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
         "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
         "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
         "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
         "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
         "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"]


# ------------------------------------------------------------ the reference (RFC 9162 2.1)
# Written from the RFC's recursive definitions over D[lo:hi] of the leaves D (no stored
# nodes, no iteration): MTH, PATH and SUBPROOF.
def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


@cache
def ref_mth(lo: int, hi: int) -> bytes:
    d = _leaves()
    n = hi - lo
    if n == 0:
        return _h(b"")
    if n == 1:
        return _h(b"\x00" + d[lo])
    k = _k(n)
    return _h(b"\x01" + ref_mth(lo, lo + k) + ref_mth(lo + k, hi))


def ref_path(m: int, lo: int, hi: int) -> list[bytes]:
    n = hi - lo
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*ref_path(m, lo, lo + k), ref_mth(lo + k, hi)]
    return [*ref_path(m - k, lo + k, hi), ref_mth(lo, lo + k)]


def ref_subproof(m: int, lo: int, hi: int, b: bool) -> list[bytes]:
    n = hi - lo
    if m == n:
        return [] if b else [ref_mth(lo, hi)]
    k = _k(n)
    if m <= k:
        return [*ref_subproof(m, lo, lo + k, b), ref_mth(lo + k, hi)]
    return [*ref_subproof(m - k, lo + k, hi, False), ref_mth(lo, lo + k)]


def _ref_root(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return _h(b"\x00" + leaves[0])
    k = _k(len(leaves))
    return _h(b"\x01" + _ref_root(leaves[:k]) + _ref_root(leaves[k:]))


# ------------------------------------------------------------------------ the vectors
def test_reference_leaves_give_the_published_roots() -> None:
    frontier = merkle.Frontier()
    for n, leaf in enumerate(LEAVES, 1):
        frontier.add(merkle.leaf_hash(leaf))
        assert frontier.root().hex() == ROOTS[n - 1] == _ref_root(LEAVES[:n]).hex()
    assert merkle.Frontier().root() == merkle.EMPTY_ROOT


def _hexes(values: list[str] | None) -> list[bytes]:
    return [bytes.fromhex(v) for v in values or []]


@pytest.mark.parametrize("case", VECTORS["inclusion"], ids=lambda c: c["desc"])
def test_inclusion_vectors(case: dict[str, Any]) -> None:
    found = merkle.verify_inclusion(case["leaf_index"], case["tree_size"],
                                    bytes.fromhex(case["leaf_hash"] or ""),
                                    _hexes(case["proof"]), bytes.fromhex(case["root"] or ""))
    assert found is case["ok"]


@pytest.mark.parametrize("case", VECTORS["consistency"], ids=lambda c: c["desc"])
def test_consistency_vectors(case: dict[str, Any]) -> None:
    found = merkle.verify_consistency(case["size1"], case["size2"],
                                      bytes.fromhex(case["root1"] or ""),
                                      bytes.fromhex(case["root2"] or ""),
                                      _hexes(case["proof"]))
    assert found is case["ok"]


def test_vectors_hold_both_kinds_of_case() -> None:
    for kind in ("inclusion", "consistency"):
        assert {c["ok"] for c in VECTORS[kind]} == {True, False}


# ------------------------------------------------- every size 1..1000 against the reference
SIZES = 1000


@cache
def _leaves() -> tuple[bytes, ...]:
    return tuple(f"event {i}".encode() for i in range(SIZES))


@cache
def _nodes() -> dict[tuple[int, int], bytes]:
    frontier = merkle.Frontier()
    stored: dict[tuple[int, int], bytes] = {}
    for leaf in _leaves():
        for level, index, digest in frontier.add(merkle.leaf_hash(leaf)):
            assert (level, index) not in stored  # each node written once, never again
            stored[(level, index)] = digest
    return stored


def test_nodes_stored_stay_linear() -> None:
    assert len(_nodes()) < 2 * SIZES


def test_every_size_root_inclusion_and_consistency() -> None:
    d = _leaves()
    nodes = _nodes()

    def get(level: int, index: int) -> bytes:
        return nodes[(level, index)]

    for n in range(1, SIZES + 1):
        root = merkle.root_hash(get, n)
        assert root == ref_mth(0, n), n
        indexes = range(n) if n <= 64 else sorted({0, 1, n // 3, n // 2, n - 2, n - 1})
        for m in indexes:
            path = merkle.inclusion_path(get, m, n)
            assert path == ref_path(m, 0, n), (m, n)
            assert merkle.verify_inclusion(m, n, merkle.leaf_hash(d[m]), path, root)
            assert not merkle.verify_inclusion(m, n, merkle.leaf_hash(b"other"), path, root)
        olds = range(1, n + 1) if n <= 64 else sorted({1, 2, n // 3, n // 2, n - 1, n})
        for m in olds:
            proof = merkle.consistency_proof(get, m, n)
            assert proof == ref_subproof(m, 0, n, True), (m, n)
            old_root = ref_mth(0, m)
            assert merkle.verify_consistency(m, n, old_root, root, proof)
            if m < n:
                assert not merkle.verify_consistency(m, n, ref_mth(1, m + 1), root, proof)


def test_gather_reads_each_node_once() -> None:
    asked: list[set[tuple[int, int]]] = []

    def fetch(keys: set[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        asked.append(keys)
        return {k: _nodes()[k] for k in keys}

    path = merkle.gather(lambda get: merkle.inclusion_path(get, 5, 999), fetch)
    assert path == ref_path(5, 0, 999)
    assert len(asked) == 1
    assert len(asked[0]) < 40
