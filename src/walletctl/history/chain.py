"""The history's event log and its hash chain: columns, schema, hashing and appending.

Every event carries ``hash = sha256(prev_hash + canonical(event))``. The canonical form is
the JSON list ``[seq, kind, entry, <COLUMNS[2:]>...]``, followed by the :data:`LATER`
groups of columns up to the last group in which the event has a value: events written
before a group existed hash exactly as they did, so an upgraded file still verifies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from walletctl.history.merkle import Frontier, leaf_hash

GENESIS = "0" * 64

# Columns hashed, in this order (the chain's canonical form); `seq` is hashed too, so
# swapping two events' contents or renumbering them is detected.
COLUMNS: tuple[str, ...] = (
    "kind", "entry", "time", "os_user", "host", "profile", "base_url", "operation",
    "original_ref", "new_ref", "amount", "currency", "outcome", "http_status", "exit_code",
    "batch_id", "batch_row", "reason", "note",
)
# Added later, in groups, hashed after COLUMNS up to the last group with a value: the
# intent's identity at the gateway; the database role that wrote the event (PostgreSQL);
# the approval (four eyes) a movement spent, or an approval step's request.
LATER_GROUPS: tuple[tuple[str, ...], ...] = (
    ("merchant_id", "store_id"), ("operator",), ("approval",))
LATER: tuple[str, ...] = tuple(c for group in LATER_GROUPS for c in group)
ALL: tuple[str, ...] = COLUMNS + LATER
OPERATOR_AT = ALL.index("operator")  # its position in an event's values
_INTEGERS = ("entry", "http_status", "exit_code", "batch_row", "approval")
# each LATER group's (start, end) in an event's values
_LATER_SPANS = tuple((ALL.index(group[0]), ALL.index(group[-1]) + 1) for group in LATER_GROUPS)
# json.dumps(..., separators=(",", ":")), its encoder made once (a verify hashes millions)
_CANONICAL = json.JSONEncoder(separators=(",", ":")).encode


def insert_sql(rows: int = 1) -> str:
    """The INSERT of ``rows`` events (one statement), ``?`` placeholders; built from the
    constant column names above only: no value ever enters SQL text."""
    one = f"({', '.join(['?'] * (len(ALL) + 3))})"
    return (f"INSERT INTO events (seq, {', '.join(ALL)}, prev_hash, hash) "  # noqa: S608
            f"VALUES {', '.join([one] * rows)}")


INSERT_ROWS = 200  # events per INSERT statement (within every backend's parameter limit)


# the events after a number (0: all of them), in order: the chain as it is walked
SELECT_EVENTS = (f"SELECT seq, {', '.join(ALL)}, prev_hash, hash FROM events "  # noqa: S608
                 "WHERE seq > ? ORDER BY seq")
COLUMN_TYPES: dict[str, str] = {c: "INTEGER" if c in _INTEGERS else "TEXT" for c in ALL}


def canonical(seq: int, values: Sequence[Any]) -> str:
    """An event's canonical form (``values``: every column of :data:`ALL`, in order): what
    the chain hashes after the previous hash, and the Merkle tree's leaf data (UTF-8)."""
    keep = len(COLUMNS)
    for start, end in _LATER_SPANS:
        if values[start:end].count(None) != end - start:  # the group has a value
            keep = end
    return _CANONICAL([seq, *values[:keep]])


def event_hash(prev_hash: str, seq: int, values: Sequence[Any]) -> str:
    """``values``: every column of :data:`ALL`, in order."""
    return hashlib.sha256((prev_hash + canonical(seq, values)).encode()).hexdigest()


def event_leaf(seq: int, values: Sequence[Any]) -> bytes:
    """The event's leaf hash in the history's Merkle tree (leaf ``seq - 1``)."""
    return leaf_hash(canonical(seq, values).encode())


# the newest event, found by its number (an index look-up on every backend); where the
# history keeps its Merkle tree, also how many leaves the tree holds (another index look-up:
# one round trip for both)
_TIP = ("SELECT seq, hash, (SELECT MAX(entry) FROM events), {leaves} FROM events "
        "WHERE seq = (SELECT MAX(seq) FROM events)")
_LEAVES = "(SELECT MAX(idx) + 1 FROM merkle_nodes WHERE level = 0)"


class Tip:
    """The chain's tip inside one write transaction: read once, then advanced in memory
    (the transaction holds the chain's lock, so nobody else can append meanwhile).
    ``operator``: the database's name for the writer, hashed with every event it writes;
    ``sql``: the backend's spelling of a statement written with ``?`` placeholders;
    ``tree``: the history keeps its Merkle tree (walletctl.history.tree): the tree's right
    edge is read once too, and each event adds its leaf and the nodes it completes."""

    def __init__(self, db: Any, sql: Callable[[str], str],
                 operator: str | None = None, *, tree: bool = False) -> None:
        self.db = db
        self.sql = sql
        self.operator = operator
        # one statement (a round trip saved on a database server); every event's entry was
        # opened by a begin event, so the largest entry is the last begin's
        seq, prev, last, leaves = db.execute(_TIP.format(
            leaves=_LEAVES if tree else "NULL")).fetchone() or (None, None, None, None)
        self.seq, self.prev = (int(seq), str(prev)) if seq is not None else (0, GENESIS)
        self.entry = int(last or 0)
        self._rows: list[list[Any]] = []
        self._nodes: list[tuple[int, int, bytes]] = []
        self.frontier: Frontier | None = None
        if tree:
            from walletctl.history.tree import tip_frontier

            def query(q: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                return list(db.execute(sql(q), args).fetchall())

            self.frontier, self._nodes = tip_frontier(
                query, self.seq, None if seq is None else int(leaves or 0))

    def append(self, kind: str, entry: int | None, row: dict[str, Any], chained: bool) -> int:
        if entry is None:
            self.entry += 1
            entry = self.entry
        self.seq += 1
        values = [kind, entry, *(row.get(c) for c in ALL[2:])]
        values[OPERATOR_AT] = self.operator
        digest = event_hash(self.prev, self.seq, values) if chained else ""
        if chained and self.frontier is not None:
            self._nodes += self.frontier.add(event_leaf(self.seq, values))
        self._rows.append([self.seq, *values, self.prev, digest])
        self.prev = digest
        return entry

    def write(self) -> None:
        """Insert the events appended so far: one statement per INSERT_ROWS of them (a
        database checks its chain once per statement)."""
        copy = getattr(self.db, "copy", None)  # a PostgreSQL cursor: COPY, not INSERT
        if copy is not None:
            # one statement for all of them (the database's statement-level checks run
            # once, as for an INSERT), no SQL text built or parsed per group; sending the
            # rows as arrays to one INSERT of both tables saved two round trips but cost
            # more CPU in the client (psycopg adapts each value) than it saved
            if self._rows:
                with copy(f"COPY events (seq, {', '.join(ALL)}, prev_hash, hash) "
                          "FROM STDIN") as out:
                    for row in self._rows:
                        out.write_row(row)
            if self._nodes:
                with copy("COPY merkle_nodes (level, idx, hash) FROM STDIN") as out:
                    for node in self._nodes:
                        out.write_row(node)
        else:
            for at in range(0, len(self._rows), INSERT_ROWS):
                group = self._rows[at:at + INSERT_ROWS]
                self.db.execute(self.sql(insert_sql(len(group))),
                                [value for row in group for value in row])
            if self._nodes:
                from walletctl.history.tree import INSERT_NODE

                self.db.executemany(self.sql(INSERT_NODE), self._nodes)
        self._rows.clear()
        self._nodes.clear()
