"""The history's event log and its hash chain: columns, schema, hashing and appending.

Every event carries ``hash = sha256(prev_hash + canonical(event))``. The canonical form is
the JSON list ``[seq, kind, entry, <_COLUMNS[2:]>...]``, followed by the :data:`LATER`
columns only when an event has one of them: events written before those columns existed
hash exactly as they did, so an upgraded file still verifies.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

GENESIS = "0" * 64

# Columns hashed, in this order (the chain's canonical form); `seq` is hashed too, so
# swapping two events' contents or renumbering them is detected.
COLUMNS: tuple[str, ...] = (
    "kind", "entry", "time", "os_user", "host", "profile", "base_url", "operation",
    "original_ref", "new_ref", "amount", "currency", "outcome", "http_status", "exit_code",
    "batch_id", "batch_row", "reason", "note",
)
# Added later (the intent's identity at the gateway): hashed after COLUMNS when present.
LATER: tuple[str, ...] = ("merchant_id", "store_id")
ALL: tuple[str, ...] = COLUMNS + LATER
_INTEGERS = ("entry", "http_status", "exit_code", "batch_row")
_COLUMN_DEFS = ", ".join(f"{c} {'INTEGER' if c in _INTEGERS else 'TEXT'}" for c in COLUMNS)
# Built from the constant column names above only: no value ever enters SQL text.
INSERT = (
    f"INSERT INTO events (seq, {', '.join(ALL)}, prev_hash, hash) "  # noqa: S608
    f"VALUES ({', '.join('?' * (len(ALL) + 3))})"
)
SELECT_EVENTS = f"SELECT seq, {', '.join(ALL)}, prev_hash, hash FROM events ORDER BY seq"  # noqa: S608
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    {_COLUMN_DEFS},
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_entry ON events(entry, kind);
CREATE INDEX IF NOT EXISTS events_ref ON events(original_ref);
"""
_LATER_INDEXES = """
CREATE INDEX IF NOT EXISTS events_new_ref ON events(new_ref);
"""


def migrate(db: sqlite3.Connection) -> None:
    """Create the table, or add the later columns to a file written before them."""
    db.executescript(SCHEMA)
    have = {str(row[1]) for row in db.execute("PRAGMA table_info(events)")}
    for column in LATER:
        if column not in have:
            db.execute(f"ALTER TABLE events ADD COLUMN {column} TEXT")
    db.executescript(_LATER_INDEXES)


def event_hash(prev_hash: str, seq: int, values: Sequence[Any]) -> str:
    """``values``: every column of :data:`ALL`, in order."""
    values = list(values)
    if all(v is None for v in values[len(COLUMNS):]):
        values = values[:len(COLUMNS)]
    body = json.dumps([seq, *values], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


class Tip:
    """The chain's tip inside one write transaction: read once, then advanced in memory
    (the transaction holds SQLite's write lock, so nobody else can append meanwhile)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        tip = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        self.seq, self.prev = (int(tip[0]), str(tip[1])) if tip else (0, GENESIS)
        # every event's entry was opened by a begin event: the largest is the last begin's
        last = db.execute("SELECT MAX(entry) FROM events").fetchone()
        self.entry = int(last[0] or 0)
        self._rows: list[list[Any]] = []

    def append(self, kind: str, entry: int | None, row: dict[str, Any], chained: bool) -> int:
        if entry is None:
            self.entry += 1
            entry = self.entry
        self.seq += 1
        values = [kind, entry, *(row.get(c) for c in ALL[2:])]
        digest = event_hash(self.prev, self.seq, values) if chained else ""
        self._rows.append([self.seq, *values, self.prev, digest])
        self.prev = digest
        return entry

    def write(self) -> None:
        """Insert the events appended so far (one statement for the group)."""
        if self._rows:
            self.db.executemany(INSERT, self._rows)
            self._rows.clear()


def describe(kind: Any, entry: Any) -> str:
    return f"entry #{entry}" if kind == "begin" else f"the outcome of entry #{entry}"
