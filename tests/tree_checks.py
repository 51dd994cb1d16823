"""Shared by the SQLite and PostgreSQL tree tests: grow a history to 1,000 events in
transactions of varying size, then check every size's root, inclusion and consistency
proofs against the reference computed from the events as read back."""

from __future__ import annotations

from typing import Any

from merkle_reference import Reference
from walletctl.history import merkle
from walletctl.history.chain import ALL, canonical
from walletctl.history.store import HistoryStore, Intent

SIZE = 1000


def intent(n: int) -> Intent:
    return Intent(time=f"2026-01-01T00:00:{n % 60:02d}Z", os_user="ann", host="desk",
                  profile="p", base_url="https://gw", operation="refund",
                  original_ref=f"ORD-{n}", new_ref=f"REF-{n}", amount=f"{n}.00",
                  currency="EUR", merchant_id="m", store_id="s")


def grow(store: HistoryStore, size: int = SIZE) -> None:
    """Append ``size`` events: 1, 2, 3, ... of them per transaction."""
    n, group = 0, 1
    while n < size:
        take = min(group, size - n)
        store.begin_many([intent(n + i) for i in range(take)])
        n += take
        group += 1


def leaves(store: HistoryStore) -> list[bytes]:
    rows: list[tuple[Any, ...]] = list(store.read(
        f"SELECT seq, {', '.join(ALL)} FROM events ORDER BY seq"))  # noqa: S608
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    return [canonical(r[0], r[1:]).encode() for r in rows]


def check_every_size(store: HistoryStore, size: int = SIZE) -> None:
    ref = Reference(leaves(store))
    assert len(ref.d) == size
    for n in range(1, size + 1):
        root = store.tree_root(n)
        assert root == ref.mth(0, n), n
        ms = sorted({0, n // 2, n - 1} | ({n % 7} if n > 7 else set()))
        proofs = store.inclusion_proofs([m + 1 for m in ms], n)
        for m in ms:
            assert proofs[m + 1] == ref.path(m, 0, n), (m, n)
            assert merkle.verify_inclusion(m, n, merkle.leaf_hash(ref.d[m]), proofs[m + 1],
                                           root)
        for old in sorted({1, n // 2, n - 1, n} - {0}):
            proof = store.consistency_proof(old, n)
            assert proof == ref.subproof(old, 0, n, True), (old, n)
            assert merkle.verify_consistency(old, n, ref.mth(0, old), root, proof)


def rebuilt_nodes(rows: list[tuple[Any, ...]]) -> list[tuple[int, int, bytes]]:
    """The tree's nodes recomputed from events (seq, *ALL values), as a determined owner who
    rewrote the events would write them again."""
    from walletctl.history.chain import event_leaf
    from walletctl.history.merkle import Frontier

    frontier = Frontier()
    nodes: list[tuple[int, int, bytes]] = []
    for seq, *values in rows:
        nodes += frontier.add(event_leaf(seq, values))
    return nodes


def rebuild_tree_pg(db: Any) -> None:
    """The owner's maintenance on a shared history: the tree's nodes replaced by ones
    recomputed from the events as they are now (one transaction, the caller's)."""
    rows = db.execute(f"SELECT seq, {', '.join(ALL)} FROM walletctl.events "  # noqa: S608
                      "ORDER BY seq").fetchall()
    db.execute("ALTER TABLE walletctl.merkle_nodes DISABLE TRIGGER merkle_nodes_append_only")
    db.execute("DELETE FROM walletctl.merkle_nodes")
    db.cursor().executemany("INSERT INTO walletctl.merkle_nodes VALUES (%s, %s, %s)",
                            rebuilt_nodes(rows))
    db.execute("ALTER TABLE walletctl.merkle_nodes ENABLE TRIGGER merkle_nodes_append_only")
