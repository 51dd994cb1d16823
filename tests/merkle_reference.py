"""An independent reference for the history's Merkle tree: RFC 9162 section 2.1's recursive
definitions (MTH, PATH, SUBPROOF) over a list of leaf data, nothing stored, nothing shared
with walletctl.history.merkle."""

from __future__ import annotations

import hashlib


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class Reference:
    def __init__(self, leaves: list[bytes]) -> None:
        self.d = leaves
        self._mth: dict[tuple[int, int], bytes] = {}

    def mth(self, lo: int, hi: int) -> bytes:
        key = (lo, hi)
        if key not in self._mth:
            n = hi - lo
            if n == 0:
                found = _h(b"")
            elif n == 1:
                found = _h(b"\x00" + self.d[lo])
            else:
                k = _k(n)
                found = _h(b"\x01" + self.mth(lo, lo + k) + self.mth(lo + k, hi))
            self._mth[key] = found
        return self._mth[key]

    def path(self, m: int, lo: int, hi: int) -> list[bytes]:
        n = hi - lo
        if n == 1:
            return []
        k = _k(n)
        if m < k:
            return [*self.path(m, lo, lo + k), self.mth(lo + k, hi)]
        return [*self.path(m - k, lo + k, hi), self.mth(lo, lo + k)]

    def subproof(self, m: int, lo: int, hi: int, b: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if b else [self.mth(lo, hi)]
        k = _k(n)
        if m <= k:
            return [*self.subproof(m, lo, lo + k, b), self.mth(lo + k, hi)]
        return [*self.subproof(m - k, lo + k, hi, False), self.mth(lo, lo + k)]
