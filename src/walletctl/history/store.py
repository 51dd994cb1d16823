"""The history's storage: an append-only, hash-chained event log, and its one interface.

Each money-moving action is an *entry*: a ``begin`` event committed before the request
leaves, then ``complete`` events once its outcome is known. Events are never updated or
deleted; each carries ``hash = sha256(prev_hash + canonical(event))``, so an edited, deleted
or reordered event breaks the chain (:meth:`HistoryStore.verify`). :class:`HistoryStore`
holds everything the two backends share; :mod:`~walletctl.history.sqlite` and
:mod:`~walletctl.history.postgres` supply a connection, a write under the chain's lock and
their schema. Only plain text is stored: references, amounts and reasons, never secrets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from walletctl.errors import ConfigError, HeldError
from walletctl.history.chain import (
    ALL,
    GENESIS,
    OPERATOR_AT,
    SELECT_EVENTS,
    Tip,
    event_hash,
    event_leaf,
)
from walletctl.history.desk_tables import DeskTables
from walletctl.history.merkle import Frontier
from walletctl.models.entries import (  # the records, re-exported: callers import them here
    ENTRY_FIELDS,
    MAY_HAVE_MOVED,
    OUTCOMES,
    Broken,
    Completion,
    Entry,
    Filters,
    Intent,
    Outcome,
)
from walletctl.models.plain import escaped, has_control

__all__ = ["ENTRY_FIELDS", "MAY_HAVE_MOVED", "OUTCOMES", "Broken", "Completion", "Entry",
           "Filters", "Head", "HistoryStore", "Intent", "Outcome", "Reader", "ReferenceTaken",
           "SharedLocks",
           "StorageError", "Transaction", "WriteHook", "chunks"]

T = TypeVar("T")


@dataclass(frozen=True)
class Head:
    """The chain's newest event: its number, its entry, its hash and its recorded time."""

    event: int
    entry: int
    hash: str
    time: str


class StorageError(ConfigError):
    """The history's backend failed (the file, the database server, the connection): one
    line naming where, never a password; like every profile/environment problem, exit 3."""


class ReferenceTaken(HeldError):
    """The reference a command derived is already begun by another entry: two commands
    derived the same next reference at once; the later one sends nothing (exit 11)."""


class SharedLocks(Protocol):
    """Per-original locks kept by a shared history, seen by every operator's machine
    (``postgres.LeaseLocks``)."""

    def try_acquire(self, key: str) -> bool: ...

    def release(self, key: str) -> None: ...

    def holder(self, key: str) -> str | None: ...

    def try_acquire_many(self, keys: list[str]) -> list[bool]: ...

    def release_many(self, keys: list[str]) -> None: ...

    def confirm(self, key: str) -> bool:
        """Whether ``key`` is still held by this process (renewing it), just before sending."""
        ...


# References looked up per query (the duplicate check, a batch's probe). Small enough that
# PostgreSQL's planner prices the index look-ups below a walk of the events from some
# thousands of entries on (at 500 it walked them up to ~100k entries: tests/pg/test_plans.py).
REFS_PER_QUERY = 100


def chunks(values: Sequence[T], size: int = 500) -> Iterator[tuple[list[T], str]]:
    """``values`` in runs of ``size`` (one query each, within every backend's parameter
    limit), each with its placeholders ``?, ?, ...``."""
    for at in range(0, len(values), size):
        chunk = list(values[at:at + size])
        yield chunk, ", ".join("?" * len(chunk))


class Reader(Protocol):
    """What reads rows: a store, or a write transaction (which sees its own writes); its
    :attr:`tables`: the typed operations on the desk's tables, run on it."""

    @property
    def tables(self) -> DeskTables: ...

    def read(self, sql: str, args: Iterable[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]: ...

    def read_one(self, sql: str, args: Iterable[Any] = ()) -> tuple[Any, ...] | None: ...


class Transaction:
    """One write under the chain's lock (:meth:`HistoryStore.transaction`): statements
    written with ``?`` placeholders; with ``chain``, events appended to the chain (its tip
    read once, at the start), inserted at :meth:`flush` and before the write commits."""

    def __init__(self, store: HistoryStore, db: Any, chain: bool) -> None:
        self.store = store
        self.db = db
        self.tip = (Tip(db, store.native_sql, store.operator(), tree=store.chained)
                    if chain else None)
        self.tables = store.Tables(self)

    def rows(self, sql: str, args: Sequence[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]:
        """Rows of one statement in the backend's own SQL (read whole)."""
        return iter([tuple(row) for row in self.db.execute(sql, tuple(args)).fetchall()])

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        """One statement in the backend's own SQL that returns no rows."""
        self.db.execute(sql, tuple(args))

    def execute(self, sql: str, args: Iterable[Any] = ()) -> Any:
        """The backend's cursor of one statement."""
        return self.db.execute(self.store.native_sql(sql), tuple(args))

    def read(self, sql: str, args: Iterable[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]:
        return iter([tuple(row) for row in self.execute(sql, args).fetchall()])

    def read_one(self, sql: str, args: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        row = self.execute(sql, args).fetchone()
        return None if row is None else tuple(row)

    def append(self, kind: str, entry: int | None, row: dict[str, Any]) -> int:
        """An event of the chain (``entry`` None: a new entry): its entry's number."""
        assert self.tip is not None, "a transaction(chain=True) appends"
        return self.tip.append(kind, entry, row, self.store.chained)

    def flush(self) -> None:
        if self.tip is not None:
            self.tip.write()


# Run inside an append's transaction, before its events are written: (the transaction, the
# intents' entry ids). Raising rolls the whole append back.
WriteHook = Callable[[Transaction, list[int]], None]


class HistoryStore:
    """One open history, whichever backend supplies ``read``, ``_write`` (a transaction
    under the chain's lock) and ``where`` (a path, or a URL without its password).
    ``chained=False``: the intent store (history off), where a completed entry is deleted."""

    where: str = ""  # a file's path, or the database's URL without its password
    backend: str = ""  # sqlite | postgresql: what ``history verify`` and a bundle name
    chained: bool = True
    shared: bool = False  # other machines write to it too (its locks are the desk's)
    rulebook: dict[str, Any] | None = None  # the desk's, once read (history.rulebook.read)
    Tables: type[DeskTables]  # the backend's operations on the desk's tables

    @property
    def tables(self) -> DeskTables:
        """The typed operations on the desk's tables, read outside a write."""
        return self.Tables(self)

    def rows(self, sql: str, args: Sequence[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]:
        """Rows of one read in the backend's own SQL (``stream``: as :meth:`read`)."""
        return self.read(sql, args, stream=stream)

    def run(self, sql: str, args: Sequence[Any] = ()) -> None:
        raise AssertionError("a store writes inside a transaction (tx.tables)")

    def close(self) -> None:
        raise NotImplementedError

    def read(self, sql: str, args: Iterable[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]:
        """Rows of one read; ``sql`` uses ``?`` placeholders. Raises StorageError.
        ``stream``: a long listing, read a row at a time (memory flat in its size)."""
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Any]:
        """A write transaction under the chain's lock, yielding the connection."""
        raise NotImplementedError

    @contextmanager
    def transaction(self, *, chain: bool = False) -> Iterator[Transaction]:
        """A write under the chain's lock; ``chain``: one that appends events."""
        with self._write() as db:
            tx = Transaction(self, db, chain)
            yield tx
            tx.flush()

    def native_sql(self, sql: str) -> str:
        """``sql`` with the backend's placeholders (``?`` is SQLite's own)."""
        return sql

    def local_file(self) -> Path | None:
        """The file this history is (None: a database, seen by every operator's machine)."""
        return None

    def operator(self) -> str | None:
        """The database role this connection writes as (the events' ``operator``)."""
        return None

    def may(self, table: str, privilege: str = "SELECT") -> bool:
        """Whether this connection holds ``privilege`` on ``table`` (a backend with roles
        says; a local file is its owner's)."""
        return True

    def may_change_rulebook(self) -> bool:
        return self.may("policy", "INSERT")

    def keeps_findings(self) -> bool:
        """Whether this history holds recon's findings and this role may read them (a
        database not yet upgraded to them has none)."""
        return self.may("findings")

    def shared_locks(self) -> SharedLocks | None:
        """The desk's per-original locks, when this history is shared (else None)."""
        return None

    def listening(self, channel: str) -> AbstractContextManager[None]:
        """While inside, :meth:`wait_for_news` wakes for what is announced on ``channel``
        (a shared history's NOTIFY); a file has no announcements."""
        return nullcontext()

    def wait_for_news(self, seconds: float) -> None:
        """Wait until something is announced, or ``seconds`` pass (a file: just wait)."""
        time.sleep(seconds)

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_one(self, sql: str, args: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        for row in self.read(sql, args):
            return row
        return None

    # ------------------------------------------------------------------ appending

    def begin(self, intent: Intent, *, hook: WriteHook | None = None,
              fresh: bool = False) -> int:
        """Record an intent (committed before returning); its entry id. ``hook``: run in
        the same transaction before the event is written (an approval spent with it).
        ``fresh``: the intent's reference was derived by this command, so an entry already
        begun under it is another command's (two that derived the same next reference):
        :class:`ReferenceTaken`, nothing recorded."""
        return self.append_many([intent], (), hook=hook, fresh=fresh)[0]

    def begin_many(self, intents: Iterable[Intent]) -> list[int]:
        """Record many intents in one transaction (a batch's rows): their entry ids."""
        return self.append_many(intents, ())

    def complete(self, entry: int, completion: Completion) -> None:
        self.complete_many([(entry, completion)])

    def complete_many(self, items: Iterable[tuple[int, Completion]]) -> None:
        self.append_many((), items)

    def append_many(self, intents: Iterable[Intent],
                    completions: Iterable[tuple[int, Completion]], *,
                    hook: WriteHook | None = None, fresh: bool = False) -> list[int]:
        """Completions, then intents, in ONE transaction: the intents' entry ids. An intent
        to send what an entry already records (:func:`_identity`) is given that entry's id:
        one entry per money movement, whichever process, journal or resume asks."""
        # a note may carry a gateway's words: written out, never refused (models.plain)
        todo = [i if i.note is None or not has_control(i.note)
                else replace(i, note=escaped(i.note)) for i in intents]
        done = [(e, c if c.note is None or not has_control(c.note)
                 else replace(c, note=escaped(c.note))) for e, c in completions]
        with self.transaction(chain=True) as tx:
            for entry, completion in done:
                if not self.chained and completion.outcome != "unknown":
                    tx.flush()
                    tx.execute("DELETE FROM events WHERE entry = ?", (entry,))
                    continue
                tx.append("complete", entry, vars(completion))
            ids: list[int] = []
            new: list[tuple[Intent, int]] = []  # the movements begun by this write
            found = self._begun(todo)  # identity -> entry, for the whole group at once
            for intent in todo:
                key = _identity(intent)
                begun = found.get(key) if key else None
                if begun is not None and fresh:
                    raise ReferenceTaken(
                        f"{intent.new_ref or intent.original_ref} was derived by another "
                        f"command at the same moment (history entry #{begun}); nothing was "
                        "sent", hint="run the command again: it looks the order up afresh "
                        "and takes the next reference")
                if begun is None:
                    begun = tx.append("begin", None, vars(intent))
                    new.append((intent, begun))
                    if key:
                        found[key] = begun
                ids.append(begun)
            if hook is not None:
                hook(tx, ids)
            self._check_rulebook(tx, new)
            return ids

    def _check_rulebook(self, tx: Transaction, begun: list[tuple[Intent, int]]) -> None:
        """Refuse a movement the desk's rulebook forbids, rolling the write back (a local
        file's backend; a shared database checks it with a trigger)."""

    def _begun(self, intents: list[Intent]) -> dict[tuple[Any, ...], int]:
        """The entries already begun to send these intents' movements, by identity (one
        query per REFS_PER_QUERY references)."""
        refs = sorted({key[3] if key[3] is not None else key[4]
                       for key in map(_identity, intents) if key})
        found: dict[tuple[Any, ...], int] = {}
        for chunk, marks in chunks(refs, REFS_PER_QUERY):
            # ``(new_ref || '') IS NULL``: the same test as ``new_ref IS NULL``, spelled so
            # that no index answers it; SQLite would otherwise walk every completion (whose
            # new_ref is NULL) through events_new_ref instead of events_ref's few rows.
            sql = ("SELECT entry, merchant_id, store_id, operation, new_ref, original_ref, "  # noqa: S608 - placeholders only
                   "amount, currency FROM events WHERE kind = 'begin' AND outcome IS NULL AND "
                   f"(new_ref IN ({marks}) OR ((new_ref || '') IS NULL "
                   f"AND original_ref IN ({marks}))) ORDER BY seq DESC")
            for entry, merchant, store, op, new_ref, original, amount, currency in self.read(
                    sql, chunk + chunk):
                # oldest last, so the first entry of an identity wins
                key = (merchant, store, op, new_ref, None if new_ref is not None else original,
                       amount, currency)
                found[key] = int(entry)
        return found

    def movement(self, intent: Intent) -> tuple[int, str] | None:
        """The entry begun to send what ``intent`` describes, and its outcome now."""
        key = _identity(intent)
        entry = self._begun([intent]).get(key) if key else None
        if entry is None:
            return None
        row = self.read_one(
            "SELECT outcome FROM events WHERE entry = ? AND kind = 'complete' "
            "ORDER BY seq DESC LIMIT 1", (entry,))
        return entry, str(row[0]) if row and row[0] else "unknown"

    # ------------------------------------------------------------------ reading

    # An entry: its begin event, and its latest completion found through entry_outcome
    # (kept by the backend's triggers with every append), not by a subquery per entry.
    _SELECT = """
        SELECT b.entry, b.time, b.os_user, b.host, b.profile, b.base_url, b.operation,
               b.original_ref, COALESCE(c.new_ref, b.new_ref), b.amount, b.currency,
               COALESCE(c.outcome, b.outcome, 'unknown'),
               COALESCE(c.http_status, b.http_status), COALESCE(c.exit_code, b.exit_code),
               b.batch_id, b.batch_row, b.reason, COALESCE(c.note, b.note), c.time,
               b.merchant_id, b.store_id, b.operator, c.operator, b.approval
        FROM events b
        JOIN entry_outcome s ON s.entry = b.entry
        LEFT JOIN events c ON c.seq = s.last_complete
        WHERE b.kind = 'begin'
    """

    def _where(self, f: Filters) -> tuple[str, list[Any]]:
        """The listing's query: each filter is a term an index answers (the reference's
        entries, their outcome, the begun-at time, the writer), or a check of the few rows
        another one found. A reference is the most selective: with one, the outcome is
        checked on its rows rather than looked up (``|| ''`` keeps an index off it)."""
        sql = self._SELECT
        args: list[Any] = []
        narrow = f.ref is not None or f.original_ref is not None
        for clause, value in (
            ("b.time >= ?", f.since),
            ("b.time < ?", f.until),
            ("b.operation = ?", f.operation),
            ("b.profile = ?", f.profile),
            # the authenticated role where there is one (never the client's claim), else
            # the OS account (the expression events_written_by indexes)
            ("COALESCE(b.operator, b.os_user) = ?", f.os_user),
            ("b.original_ref = ?", f.original_ref),
            ("(s.outcome || '') = ?" if narrow else "s.outcome = ?", f.outcome),
        ):
            if value is not None:
                sql += f" AND {clause}"
                args += [value] * clause.count("?")
        if f.ref is not None:
            # the entries whose events name it (two index look-ups), then exactly: the
            # begin's original or new reference, or the latest completion's new one
            sql += (" AND b.entry IN (SELECT entry FROM events WHERE original_ref = ? "
                    "UNION SELECT entry FROM events WHERE new_ref = ?)"
                    " AND (b.original_ref = ? OR b.new_ref = ? OR c.new_ref = ?)")
            args += [f.ref] * 5
        if f.outcome is not None:  # what the events say (entry_outcome is derived)
            sql += " AND COALESCE(c.outcome, b.outcome, 'unknown') = ?"
            args.append(f.outcome)
        return sql, args

    def entries(self, filters: Filters | None = None) -> Iterator[Entry]:
        """Matching entries, oldest first (``limit``: the last N of them)."""
        f = filters or Filters()
        sql, args = self._where(f)
        # by entry: the begins walked in events_entry's order, newest first for --last (no
        # sort: the first row is out before the history is read, whatever its size),
        # except under a time filter: ``+`` keeps SQLite from walking every entry in order
        # to skip the sort, so that the time index finds the rows
        timed = f.since is not None or f.until is not None
        sql += " ORDER BY +b.entry" if timed else " ORDER BY b.entry"
        if f.limit is not None:
            sql = f"SELECT * FROM ({sql} DESC LIMIT {int(f.limit)}) AS last_n ORDER BY 1"  # noqa: S608
        for row in self.read(sql, args, stream=True):
            yield Entry(*row)

    def count(self, filters: Filters | None = None) -> int:
        sql, args = self._where(filters or Filters())
        found = self.read_one(f"SELECT COUNT(*) FROM ({sql}) AS matching", args)  # noqa: S608
        return int(found[0]) if found else 0

    def unresolved(self, *, merchant_id: str, store_id: str, operation: str,
                   original_ref: str, legacy: tuple[str, str] | None = None) -> list[Entry]:
        """Entries of this operation on the merchant's ``original_ref`` still unknown;
        ``legacy`` (profile, base URL) matches entries written without merchant ids."""
        found = self.entries(
            Filters(operation=operation, outcome="unknown", original_ref=original_ref))
        return [e for e in found if (e.merchant_id, e.store_id) == (merchant_id, store_id)
                or (e.merchant_id is None and legacy == (e.profile, e.base_url))]

    def touched(self, *, operation: str, original_ref: str, batch_id: str,
                since: str) -> bool:
        """Whether an entry of this operation on ``original_ref`` from outside the batch was
        sent (whatever became of it) or began at or after ``since`` (one indexed probe)."""
        return bool(self.touched_many(operation=operation, original_refs=[original_ref],
                                      batch_id=batch_id, since=since))

    def touched_many(self, *, operation: str, original_refs: list[str], batch_id: str,
                     since: str) -> set[str]:
        """:meth:`touched` for many originals at once: the ones touched."""
        found: set[str] = set()
        for chunk, marks in chunks(original_refs, REFS_PER_QUERY):
            found.update(str(row[0]) for row in self.read(
                f"SELECT DISTINCT original_ref FROM events WHERE original_ref IN ({marks}) "  # noqa: S608 - placeholders only
                "AND kind = 'begin' AND operation = ? AND (batch_id IS NULL OR batch_id != ?) "
                "AND (outcome IS NULL OR time >= ?)", [*chunk, operation, batch_id, since]))
        return found

    def recent(self, *, merchant_id: str, store_id: str, operation: str, original_ref: str,
               since: str) -> list[Entry]:
        """Movements of this operation on ``original_ref`` begun at or after ``since`` under
        which money may have moved (approved, or still unknown), newest last."""
        found = self.entries(Filters(operation=operation, original_ref=original_ref,
                                     since=since))
        return [e for e in found if e.outcome in MAY_HAVE_MOVED
                and (e.merchant_id, e.store_id) == (merchant_id, store_id)]

    def head(self) -> Head | None:
        """The newest event (None: no event yet), which ``history anchor`` prints."""
        row = self.read_one("SELECT seq, entry, hash, time FROM events "
                        "WHERE seq = (SELECT MAX(seq) FROM events)")
        return Head(int(row[0]), int(row[1]), str(row[2]), str(row[3])) if row else None

    def holds(self, head_hash: str) -> bool:
        """Whether an event with this hash (or hash prefix, 12+ characters) is still here."""
        found = self.read_one("SELECT 1 FROM events WHERE substr(hash, 1, ?) = ? LIMIT 1",
                          (len(head_hash), head_hash.lower()))
        return found is not None

    def hashes(self, events: Iterable[int]) -> dict[int, str]:
        """The hash of each of these numbered events that is still here."""
        found: dict[int, str] = {}
        for chunk, marks in chunks(sorted(set(events))):
            found.update((int(seq), str(digest)) for seq, digest in self.read(
                f"SELECT seq, hash FROM events WHERE seq IN ({marks})", chunk))  # noqa: S608 - placeholders only
        return found

    def event_span(self, entries: list[int]) -> tuple[int, int]:
        """The first and the last event of these entries."""
        first, last = None, None
        for chunk, marks in chunks(entries):
            row = self.read_one(f"SELECT MIN(seq), MAX(seq) FROM events WHERE entry IN ({marks})",  # noqa: S608 - placeholders only
                                chunk)
            if row and row[0] is not None:
                first = int(row[0]) if first is None else min(first, int(row[0]))
                last = int(row[1]) if last is None else max(last, int(row[1]))
        if first is None or last is None:
            raise ConfigError(f"history {self.where}: no events of entries {entries[:3]}")
        return first, last

    def entry_events(self, entries: Iterable[int]) -> list[dict[str, Any]]:
        """Every event of these entries as stored (``seq`` and the chained fields), in
        order (index look-ups: the history's size does not matter)."""
        events: list[dict[str, Any]] = []
        for chunk, marks in chunks(sorted(set(entries))):
            events += [dict(zip(("seq", *ALL), row, strict=True)) for row in self.read(
                f"SELECT seq, {', '.join(ALL)} FROM events WHERE entry IN ({marks})", chunk)]  # noqa: S608 - names and placeholders only
        return sorted(events, key=lambda e: int(e["seq"]))

    def decision_entries(self, approvals: Iterable[int]) -> set[int]:
        """The entries that decided these approvals (approved or refused them)."""
        found: set[int] = set()
        for chunk, marks in chunks(sorted(set(approvals))):
            found.update(int(row[0]) for row in self.read(
                f"SELECT entry FROM events WHERE approval IN ({marks}) "  # noqa: S608 - placeholders only
                "AND kind = 'begin' AND operation = 'approval'", chunk))
        return found

    def originals_since(self, since: str, *, merchant: tuple[str, str],
                        legacy: tuple[str, str]) -> set[str]:
        """Every original reference an entry was begun on at or after ``since`` at the
        merchant's store (``legacy`` (profile, base URL): entries written without
        merchant ids)."""
        return {str(ref) for (ref,) in self.read(
            "SELECT DISTINCT original_ref FROM events WHERE kind = 'begin' AND time >= ? "
            "AND original_ref IS NOT NULL AND ((merchant_id = ? AND store_id = ?) "
            "OR (merchant_id IS NULL AND profile = ? AND base_url = ?))",
            (since, *merchant, *legacy))}

    def chain_events(self, first: int, last: int) -> Iterator[dict[str, Any]]:
        """The events numbered ``first`` to ``last`` as stored, read a row at a time."""
        names = ("seq", *ALL, "prev_hash", "hash")
        sql = SELECT_EVENTS.replace(" ORDER BY seq", " AND seq <= ? ORDER BY seq")
        for row in self.read(sql, (first - 1, last), stream=True):
            yield dict(zip(names, row, strict=True))

    # ------------------------------------------------------------------ the Merkle tree

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return list(self.read(sql, args))

    def tree_root(self, size: int) -> bytes:
        """The hash of the tree of the first ``size`` events (O(log n) nodes read)."""
        from walletctl.history import tree

        return tree.root(self._query, size)

    def inclusion_proofs(self, events: Iterable[int], size: int) -> dict[int, list[bytes]]:
        """Each numbered event's inclusion proof in the tree of ``size`` events."""
        from walletctl.history import tree

        return {index + 1: path for index, path in tree.inclusions(
            self._query, (seq - 1 for seq in events), size).items()}

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        """The proof that the tree of ``old`` events is a prefix of the one of ``new``."""
        from walletctl.history import tree

        return tree.consistency(self._query, old, new)

    def spent_undecided(self) -> list[int] | None:
        """Approvals spent with no approving decision in the chain, by id; None when this
        role may not read the approvals (an auditor granted the events only)."""
        if not self.may("approvals"):
            return None
        return self.tables.spent_undecided()

    def verify(self, after: tuple[int, str] | None = None) -> tuple[int, Broken | None]:
        """Walk the chain: (events checked, the first broken one or None). ``after``: an
        event already verified (its number, its hash kept outside): only the events after
        it are read, the first of them checked against that hash."""
        start, prev = after if after is not None else (0, GENESIS)
        expected = start + 1
        count = 0
        frontier = self._frontier(start) if self.chained else None
        for row in self.read(SELECT_EVENTS, (start,), stream=True):
            seq, values, prev_hash, digest = row[0], row[1:-2], row[-2], row[-1]
            if seq != expected:
                return count, Broken(expected, f"event {expected} is missing (deleted); "
                                               f"the next one is {_what(values)}")
            if prev_hash != prev:
                return count, Broken(seq, f"{_what(values)} does not follow the event before "
                                          "it (deleted or reordered)")
            if event_hash(prev, seq, values) != digest:
                return count, Broken(seq, f"{_what(values)} was changed after it was written, "
                                          "or written with a hash that does not match it")
            prev = digest
            expected += 1
            count += 1
            if frontier is not None:
                frontier.add(event_leaf(seq, values))
        if frontier is not None and frontier.size and frontier.size == start + count:
            from walletctl.history.tree import TreeError

            try:
                stored = self.tree_root(frontier.size)
            except TreeError as exc:
                stored = exc.message.encode()
            if stored != frontier.root():
                return count, Broken(frontier.size, "the Merkle tree's stored nodes do not "
                                     f"match the first {frontier.size} events (changed, or "
                                     "written for other events)")
        return count, None

    def _frontier(self, size: int) -> Frontier | None:
        """The stored tree's right edge at ``size`` events (None: the tree lacks it)."""
        from walletctl.history.tree import TreeError, read_frontier

        try:
            return read_frontier(self._query, size)
        except TreeError:
            return None


def _what(values: Sequence[Any]) -> str:
    """A broken event, as :meth:`HistoryStore.verify` names it."""
    kind, entry = values[0], values[1]
    what = f"entry #{entry}" if kind == "begin" else f"the outcome of entry #{entry}"
    if values[OPERATOR_AT] is not None:  # a shared history names its writer
        what += f" (written by {values[OPERATOR_AT]})"
    return what


def _identity(intent: Intent) -> tuple[Any, ...] | None:
    """The movement an intent begins, when it is to be sent and knows its merchant."""
    if intent.outcome is not None or intent.merchant_id is None:
        return None
    return (intent.merchant_id, intent.store_id, intent.operation, intent.new_ref,
            None if intent.new_ref is not None else intent.original_ref, intent.amount,
            intent.currency)
