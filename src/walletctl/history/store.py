"""The history's storage: an append-only, hash-chained event log in SQLite (WAL mode).

Each money-moving action is an *entry*: a ``begin`` event written (and committed) before the
request leaves, then a ``complete`` event when its outcome is known (a re-run or
``history --unknown --reconcile`` may add later ones). Events are never updated or deleted,
so every event carries ``hash = sha256(prev_hash + canonical(event))``: an edited, deleted or
reordered event breaks the chain and :meth:`HistoryStore.verify` names the first broken one.

Appends take SQLite's write lock (``BEGIN IMMEDIATE``) to read the chain's tip and insert, so
concurrent processes serialise and none is lost. Only plain text values are stored: callers
pass references, amounts and reasons, never keys or card data.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

Outcome = Literal["approved", "created", "declined", "refused", "unknown", "error"]
# created: a checkout the gateway accepted, waiting for the customer (not money moved yet)
OUTCOMES: tuple[str, ...] = ("approved", "created", "declined", "refused", "unknown", "error")
GENESIS = "0" * 64

# Columns hashed, in this order (the chain's canonical form); `seq` is hashed too, so
# swapping two events' contents or renumbering them is detected.
_COLUMNS: tuple[str, ...] = (
    "kind", "entry", "time", "os_user", "host", "profile", "base_url", "operation",
    "original_ref", "new_ref", "amount", "currency", "outcome", "http_status", "exit_code",
    "batch_id", "batch_row", "reason", "note",
)
_INTEGERS = ("entry", "http_status", "exit_code", "batch_row")
_COLUMN_DEFS = ", ".join(f"{c} {'INTEGER' if c in _INTEGERS else 'TEXT'}" for c in _COLUMNS)
# Built from the constant column names above only: no value ever enters SQL text.
_INSERT = (
    f"INSERT INTO events (seq, {', '.join(_COLUMNS)}, prev_hash, hash) "  # noqa: S608
    f"VALUES ({', '.join('?' * (len(_COLUMNS) + 3))})"
)
_SELECT_EVENTS = f"SELECT seq, {', '.join(_COLUMNS)}, prev_hash, hash FROM events ORDER BY seq"  # noqa: S608
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    {_COLUMN_DEFS},
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_entry ON events(entry, kind);
CREATE INDEX IF NOT EXISTS events_ref ON events(original_ref);
"""


@dataclass(frozen=True)
class Intent:
    """What is about to be sent (or was refused before sending)."""

    time: str
    os_user: str
    host: str
    profile: str
    base_url: str
    operation: str
    original_ref: str | None = None
    new_ref: str | None = None
    amount: str | None = None  # major units, as text (Decimal formatted with "f")
    currency: str | None = None
    batch_id: str | None = None
    batch_row: int | None = None
    reason: str | None = None
    outcome: str | None = None  # set only for entries complete at birth (pre-flight refusal)
    http_status: int | None = None
    exit_code: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class Completion:
    time: str
    outcome: str
    http_status: int | None = None
    exit_code: int | None = None
    new_ref: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Entry:
    """One entry as listed: its begin event merged with its latest completion."""

    id: int
    time: str
    os_user: str
    host: str
    profile: str
    base_url: str
    operation: str
    original_ref: str | None
    new_ref: str | None
    amount: str | None
    currency: str | None
    outcome: str
    http_status: int | None
    exit_code: int | None
    batch_id: str | None
    batch_row: int | None
    reason: str | None
    note: str | None
    completed: str | None  # time of the latest completion

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


ENTRY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Entry))


@dataclass(frozen=True)
class Filters:
    since: str | None = None  # ISO UTC, inclusive
    until: str | None = None  # ISO UTC, exclusive
    ref: str | None = None  # original or new reference
    operation: str | None = None
    profile: str | None = None
    os_user: str | None = None
    outcome: str | None = None
    limit: int | None = None
    original_ref: str | None = None  # exact original reference (indexed)


@dataclass(frozen=True)
class Broken:
    seq: int  # the event's position in the chain
    problem: str  # names the entry: "entry #12 was changed after it was written"


def event_hash(prev_hash: str, seq: int, values: Sequence[Any]) -> str:
    body = json.dumps([seq, *values], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def create_private(path: Path) -> None:
    """Create the file (and its directory) readable by its owner only, if missing."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class HistoryStore:
    """One open history file. ``chained=False`` is the minimal intent store (history off):
    the same table, but a completed entry's events are deleted instead of kept."""

    def __init__(self, path: Path, *, chained: bool = True) -> None:
        self.path = path
        self.chained = chained
        create_private(path)
        # The -wal/-shm files take the database file's permissions (0600).
        self._db = sqlite3.connect(path, timeout=60.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process
        self._db.executescript(_SCHEMA)
        from walletctl.history._wal import skip_checkpoint_on_close

        skip_checkpoint_on_close(self._db, path)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ appending

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _append(self, db: sqlite3.Connection, kind: str, entry: int | None,
                row: dict[str, Any]) -> int:
        """Append one event; a begin event opens entry number (last entry + 1)."""
        tip = _Tip(db)
        entry = tip.append(kind, entry, row, self.chained)
        tip.write()
        return entry

    def begin(self, intent: Intent) -> int:
        """Record an intent (committed before returning); its entry id."""
        return self.begin_many([intent])[0]

    def begin_many(self, intents: Iterable[Intent]) -> list[int]:
        """Record many intents in one transaction (a batch's rows): their entry ids."""
        return self.append_many(intents, ())

    def complete(self, entry: int, completion: Completion) -> None:
        self.complete_many([(entry, completion)])

    def complete_many(self, items: Iterable[tuple[int, Completion]]) -> None:
        self.append_many((), items)

    def append_many(self, intents: Iterable[Intent],
                    completions: Iterable[tuple[int, Completion]]) -> list[int]:
        """Completions, then intents, in ONE transaction (the chain's tip is read once):
        the new intents' entry ids. What a batch writes per group of sends."""
        with self._write() as db:
            tip = _Tip(db)
            for entry, completion in completions:
                if not self.chained and completion.outcome != "unknown":
                    tip.write()
                    db.execute("DELETE FROM events WHERE entry = ?", (entry,))
                    continue
                tip.append("complete", entry, vars(completion), self.chained)
            ids = [tip.append("begin", None, vars(i), self.chained) for i in intents]
            tip.write()
            return ids

    # ------------------------------------------------------------------ reading

    _SELECT = """
        SELECT b.entry, b.time, b.os_user, b.host, b.profile, b.base_url, b.operation,
               b.original_ref, COALESCE(c.new_ref, b.new_ref), b.amount, b.currency,
               COALESCE(c.outcome, b.outcome, 'unknown'),
               COALESCE(c.http_status, b.http_status), COALESCE(c.exit_code, b.exit_code),
               b.batch_id, b.batch_row, b.reason, COALESCE(c.note, b.note), c.time
        FROM events b
        LEFT JOIN events c ON c.seq = (
            SELECT MAX(seq) FROM events WHERE kind = 'complete' AND entry = b.entry)
        WHERE b.kind = 'begin'
    """

    def _where(self, f: Filters) -> tuple[str, list[Any]]:
        sql = self._SELECT
        args: list[Any] = []
        for clause, value in (
            ("b.time >= ?", f.since),
            ("b.time < ?", f.until),
            ("b.operation = ?", f.operation),
            ("b.profile = ?", f.profile),
            ("b.os_user = ?", f.os_user),
            ("b.original_ref = ?", f.original_ref),
        ):
            if value is not None:
                sql += f" AND {clause}"
                args.append(value)
        if f.ref is not None:
            sql += " AND (b.original_ref = ? OR b.new_ref = ? OR c.new_ref = ?)"
            args += [f.ref] * 3
        if f.outcome is not None:
            sql += " AND COALESCE(c.outcome, b.outcome, 'unknown') = ?"
            args.append(f.outcome)
        return sql, args

    def entries(self, filters: Filters | None = None) -> Iterator[Entry]:
        """Matching entries, oldest first (``limit``: the last N of them)."""
        f = filters or Filters()
        sql, args = self._where(f)
        sql += " ORDER BY b.entry"
        if f.limit is not None:
            sql = f"SELECT * FROM ({sql} DESC LIMIT {int(f.limit)}) ORDER BY 1"  # noqa: S608
        for row in self._db.execute(sql, args):
            yield Entry(*row)

    def count(self, filters: Filters | None = None) -> int:
        sql, args = self._where(filters or Filters())
        found = self._db.execute(f"SELECT COUNT(*) FROM ({sql})", args).fetchone()  # noqa: S608
        return int(found[0])

    def unresolved(self, *, base_url: str, operation: str, original_ref: str) -> list[Entry]:
        """Entries of this operation on ``original_ref`` whose outcome is still unknown."""
        found = self.entries(
            Filters(operation=operation, outcome="unknown", original_ref=original_ref))
        return [e for e in found if e.base_url == base_url]

    def head(self) -> tuple[int, str] | None:
        """The newest event: (its number, its hash). Printed by ``history verify`` so that
        an operator can keep it elsewhere: deleting the newest events leaves a chain that is
        intact in itself, and only a head kept outside the file shows the cut."""
        row = self._db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def holds(self, head_hash: str) -> bool:
        """Whether an event with this hash (or hash prefix, 12+ characters) is still here."""
        found = self._db.execute("SELECT 1 FROM events WHERE substr(hash, 1, ?) = ? LIMIT 1",
                                 (len(head_hash), head_hash.lower())).fetchone()
        return found is not None

    def verify(self) -> tuple[int, Broken | None]:
        """Walk the chain: (events checked, the first broken one or None)."""
        prev = GENESIS
        expected = 1
        count = 0
        for row in self._db.execute(_SELECT_EVENTS):
            seq, values, prev_hash, digest = row[0], row[1:-2], row[-2], row[-1]
            what = _describe(values[0], values[1])
            if seq != expected:
                return count, Broken(expected, f"event {expected} is missing (deleted); "
                                               f"the next one is {what}")
            if prev_hash != prev:
                return count, Broken(seq, f"{what} does not follow the event before it "
                                          "(deleted or reordered)")
            if event_hash(prev, seq, list(values)) != digest:
                return count, Broken(seq, f"{what} was changed after it was written")
            prev = digest
            expected += 1
            count += 1
        return count, None


class _Tip:
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
        values = [kind, entry, *(row.get(c) for c in _COLUMNS[2:])]
        digest = event_hash(self.prev, self.seq, values) if chained else ""
        self._rows.append([self.seq, *values, self.prev, digest])
        self.prev = digest
        return entry

    def write(self) -> None:
        """Insert the events appended so far (one statement for the group)."""
        if self._rows:
            self.db.executemany(_INSERT, self._rows)
            self._rows.clear()


def _describe(kind: Any, entry: Any) -> str:
    return f"entry #{entry}" if kind == "begin" else f"the outcome of entry #{entry}"
