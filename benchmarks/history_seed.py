"""A history of N entries built fast, for the scale benchmarks: the rows and Merkle nodes the
product writes (its own :class:`walletctl.history.chain.Tip` hashes every event into the
chain and the tree), in large transactions.

* SQLite: through the store's own transactions (``transaction(chain=True)``), every trigger
  run, 20,000 entries a transaction.
* PostgreSQL: as the database's owner, the events' and the tree's user triggers disabled
  for the load (the maintenance path the schema names), the rows written by ``COPY`` with
  the operator the triggers would have stamped, ``entry_outcome`` written as the trigger
  would have kept it; then the triggers enabled again and the tables analysed.

The history: ORDER-1, the oldest order, has ten entries (a checkout, then refunds, each
completed); then one refund entry per order, begun and completed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from walletctl.history.chain import Tip

MERCHANT, STORE = "M-BENCH", "S-01"
OLDEST = "ORDER-1"
CHUNK = 20_000  # entries a transaction (SQLite) or a COPY (PostgreSQL)


def when(i: int) -> str:
    """Entry ``i``'s time: 90 s apart from 2023-01-01 (1M entries: about three years)."""
    seconds = 1_672_531_200 + 90 * i
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(seconds))


def order_ref(i: int) -> str:
    return OLDEST if i < 10 else f"S{i:08d}"


def begin_row(i: int) -> dict[str, Any]:
    ref = order_ref(i)
    return {"time": when(i), "os_user": "ana", "host": "desk-1", "profile": "bench",
            "base_url": "http://127.0.0.1", "operation": "checkout" if i == 0 else "refund",
            "original_ref": ref, "new_ref": None if i == 0 else f"{ref}-R{i}",
            "amount": "7.50", "currency": "EUR", "merchant_id": MERCHANT, "store_id": STORE,
            "reason": "scale benchmark"}


def complete_row(i: int) -> dict[str, Any]:
    return {"time": when(i), "outcome": "approved", "http_status": 200}


def _events(tip: Tip, first: int, last: int) -> Iterator[tuple[int, int]]:
    """Append entries ``first`` to ``last - 1`` (0-based) to ``tip``: (entry, its
    completion's event number) each."""
    for i in range(first, last):
        entry = tip.append("begin", None, begin_row(i), True)
        tip.append("complete", entry, complete_row(i), True)
        yield entry, tip.seq


def seed_sqlite(store: Any, have: int, size: int) -> None:
    """Grow a SqliteHistory from ``have`` to ``size`` entries."""
    for at in range(have, size, CHUNK):
        with store.transaction(chain=True) as tx:
            assert tx.tip is not None
            for _ in _events(tx.tip, at, min(at + CHUNK, size)):
                pass


def seed_postgresql(owner: Any, operator: str, have: int, size: int) -> None:
    """Grow a shared history from ``have`` to ``size`` entries (``owner``: a psycopg
    connection of the schema's owner, autocommit)."""
    with owner.transaction():
        owner.execute("SET LOCAL search_path = walletctl")
        owner.execute("SET LOCAL statement_timeout = 0")
        owner.execute("ALTER TABLE walletctl.events DISABLE TRIGGER USER")
        owner.execute("ALTER TABLE walletctl.merkle_nodes DISABLE TRIGGER USER")
        cursor = owner.cursor()
        tip = Tip(cursor, lambda sql: sql.replace("?", "%s"), operator, tree=True)
        for at in range(have, size, CHUNK):
            done = list(_events(tip, at, min(at + CHUNK, size)))
            tip.write()
            with cursor.copy("COPY entry_outcome (entry, outcome, last_complete) "
                             "FROM STDIN") as out:
                for entry, seq in done:
                    out.write_row((entry, "approved", seq))
        owner.execute("ALTER TABLE walletctl.events ENABLE TRIGGER USER")
        owner.execute("ALTER TABLE walletctl.merkle_nodes ENABLE TRIGGER USER")
    # what autovacuum has long done to a history grown over years: the rows' visibility is
    # recorded (hint bits, the visibility map) and the planner has statistics; without it,
    # the first commands to read the oldest rows of a fresh million paid for setting them
    owner.execute("VACUUM (ANALYZE) walletctl.events, walletctl.merkle_nodes, "
                  "walletctl.entry_outcome")
