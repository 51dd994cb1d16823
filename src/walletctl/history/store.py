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

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

from walletctl.history.chain import (
    GENESIS,
    SELECT_EVENTS,
    Tip,
    describe,
    event_hash,
    migrate,
)

Outcome = Literal["approved", "created", "declined", "refused", "unknown", "error"]
# created: a checkout the gateway accepted, waiting for the customer (not money moved yet)
OUTCOMES: tuple[str, ...] = ("approved", "created", "declined", "refused", "unknown", "error")
# outcomes under which money may have moved (a likely duplicate is checked against them)
MAY_HAVE_MOVED: tuple[str, ...] = ("approved", "unknown")


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
    merchant_id: str | None = None  # the intent's identity at the gateway, with store_id,
    store_id: str | None = None  # operation and reference: never the profile's name or URL


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
    merchant_id: str | None = None
    store_id: str | None = None

    @property
    def reference(self) -> str:
        """The reference this entry's request was sent under."""
        return self.new_ref or self.original_ref or ""

    @property
    def operator(self) -> str:
        return f"{self.os_user}@{self.host}"

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
        migrate(self._db)
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
        the intents' entry ids. What a batch writes per group of sends.

        One entry per money movement: an intent to send what an entry already records (the
        same merchant, store, operation and reference, begun to be sent) is given that
        entry's id instead of a new entry, whichever process, journal or resume asks."""
        with self._write() as db:
            tip = Tip(db)
            for entry, completion in completions:
                if not self.chained and completion.outcome != "unknown":
                    tip.write()
                    db.execute("DELETE FROM events WHERE entry = ?", (entry,))
                    continue
                tip.append("complete", entry, vars(completion), self.chained)
            ids: list[int] = []
            todo = list(intents)
            found = self._begun(db, todo)  # identity -> entry, for the whole group at once
            for intent in todo:
                key = _identity(intent)
                begun = found.get(key) if key else None
                if begun is None:
                    begun = tip.append("begin", None, vars(intent), self.chained)
                    if key:
                        found[key] = begun
                ids.append(begun)
            tip.write()
            return ids

    @staticmethod
    def _begun(db: sqlite3.Connection, intents: list[Intent]) -> dict[tuple[Any, ...], int]:
        """The entries already begun to send these intents' movements, by identity: one
        query per 500 references (a batch's group of sends), not one per intent."""
        refs = sorted({key[3] if key[3] is not None else key[4]
                       for key in map(_identity, intents) if key})
        found: dict[tuple[Any, ...], int] = {}
        for at in range(0, len(refs), 500):
            chunk = refs[at:at + 500]
            marks = ", ".join("?" * len(chunk))
            rows = db.execute(
                "SELECT entry, merchant_id, store_id, operation, new_ref, original_ref, amount, "  # noqa: S608 - placeholders only
                "currency FROM events WHERE kind = 'begin' AND outcome IS NULL AND "
                f"(new_ref IN ({marks}) OR (new_ref IS NULL AND original_ref IN ({marks}))) "
                "ORDER BY seq DESC", chunk + chunk)
            for entry, merchant, store, op, new_ref, original, amount, currency in rows:
                # oldest last, so the first entry of an identity wins
                key = (merchant, store, op, new_ref, None if new_ref is not None else original,
                       amount, currency)
                found[key] = int(entry)
        return found

    def movement(self, intent: Intent) -> tuple[int, str] | None:
        """The entry begun to send what ``intent`` describes, and its outcome now."""
        key = _identity(intent)
        entry = self._begun(self._db, [intent]).get(key) if key else None
        if entry is None:
            return None
        row = self._db.execute(
            "SELECT outcome FROM events WHERE entry = ? AND kind = 'complete' "
            "ORDER BY seq DESC LIMIT 1", (entry,)).fetchone()
        return entry, str(row[0]) if row and row[0] else "unknown"

    # ------------------------------------------------------------------ reading

    _SELECT = """
        SELECT b.entry, b.time, b.os_user, b.host, b.profile, b.base_url, b.operation,
               b.original_ref, COALESCE(c.new_ref, b.new_ref), b.amount, b.currency,
               COALESCE(c.outcome, b.outcome, 'unknown'),
               COALESCE(c.http_status, b.http_status), COALESCE(c.exit_code, b.exit_code),
               b.batch_id, b.batch_row, b.reason, COALESCE(c.note, b.note), c.time,
               b.merchant_id, b.store_id
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

    def unresolved(self, *, merchant_id: str, store_id: str, operation: str,
                   original_ref: str, legacy: tuple[str, str] | None = None) -> list[Entry]:
        """Entries of this operation on the merchant's ``original_ref`` whose outcome is
        still unknown, whichever profile or URL spelling made them. ``legacy`` (profile
        name, base URL) also matches entries written before the history kept merchant ids."""
        found = self.entries(
            Filters(operation=operation, outcome="unknown", original_ref=original_ref))
        return [e for e in found if (e.merchant_id, e.store_id) == (merchant_id, store_id)
                or (e.merchant_id is None and legacy == (e.profile, e.base_url))]

    def touched(self, *, operation: str, original_ref: str, batch_id: str,
                since: str) -> bool:
        """Whether any entry of this operation on ``original_ref`` from outside the batch
        was sent (begun, whatever became of it) or began at or after ``since``: one indexed
        probe, so that a batch row with nothing of the kind keeps its one round trip."""
        row = self._db.execute(
            "SELECT 1 FROM events WHERE original_ref = ? AND kind = 'begin' AND operation = ? "
            "AND (batch_id IS NULL OR batch_id != ?) AND (outcome IS NULL OR time >= ?) "
            "LIMIT 1", (original_ref, operation, batch_id, since)).fetchone()
        return row is not None

    def recent(self, *, merchant_id: str, store_id: str, operation: str, original_ref: str,
               since: str) -> list[Entry]:
        """Movements of this operation on ``original_ref`` begun at or after ``since`` under
        which money may have moved (approved, or still unknown), newest last."""
        found = self.entries(Filters(operation=operation, original_ref=original_ref,
                                     since=since))
        return [e for e in found if e.outcome in MAY_HAVE_MOVED
                and (e.merchant_id, e.store_id) == (merchant_id, store_id)]

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
        for row in self._db.execute(SELECT_EVENTS):
            seq, values, prev_hash, digest = row[0], row[1:-2], row[-2], row[-1]
            what = describe(values[0], values[1])
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


def _identity(intent: Intent) -> tuple[Any, ...] | None:
    """The movement an intent begins, when it is to be sent and knows its merchant."""
    if intent.outcome is not None or intent.merchant_id is None:
        return None
    return (intent.merchant_id, intent.store_id, intent.operation, intent.new_ref,
            None if intent.new_ref is not None else intent.original_ref, intent.amount,
            intent.currency)
