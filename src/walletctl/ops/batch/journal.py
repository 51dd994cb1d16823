"""The batch journal: SQLite in WAL mode, one row per batch row keyed ``ref#occurrence`` (the
n-th row naming that original in the file), written BEFORE each send (docs/batch.md has its
states). WAL with ``synchronous=NORMAL`` is durable against a killed process, the guarantee
needed. No secrets: references, amounts, states and one-line details only.

Pass 1 (:func:`plan_batch`) validates every row and records the plan in ONE transaction,
nothing sent, rolled back when rows are invalid (and ``--skip-invalid`` is not given).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Final, Literal

from walletctl.errors import RequestValidationError, UsageError
from walletctl.ops.batch.input_rows import Op, Problem, Row, iter_rows

State = Literal["planned", "sent", "confirmed", "refused", "unknown"]
STATES: Final = ("planned", "sent", "confirmed", "refused", "unknown")
FINAL_STATES: Final = frozenset({"confirmed", "refused"})
SCHEMA_VERSION: Final = "1"
PREFLIGHT: Final = "pre-flight:"  # detail prefix of rows refused before anything was sent
# detail prefix of rows the gateway answered 404: nothing was stored (a wrong path prefix in
# base_url gives this too), so a later run checks them again
NOT_FOUND: Final = "gateway (HTTP 404, nothing stored; sent again by the next run):"
RECHECKED: Final = (PREFLIGHT, NOT_FOUND)
_PREFIX: Final = {"capture": "cap", "refund": "rfd", "reverse": "rev"}
MAX_PROBLEMS_KEPT: Final = 50

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    key TEXT PRIMARY KEY,
    ref TEXT NOT NULL,
    occ INTEGER NOT NULL,
    line INTEGER NOT NULL,
    new_ref TEXT NOT NULL UNIQUE,
    amount TEXT NOT NULL,
    currency TEXT NOT NULL,
    profile TEXT,
    state TEXT NOT NULL DEFAULT 'planned',
    attempts INTEGER NOT NULL DEFAULT 0,
    txn_id TEXT,
    txn_state TEXT,
    detail TEXT,
    seen INTEGER NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rows_seen_ref ON rows (seen, ref);
CREATE INDEX IF NOT EXISTS rows_seen_line ON rows (seen, line);
"""


def derive_reference(batch_id: str, op: Op, ref: str, occurrence: int) -> str:
    """The new clientSystemTransactionId: a pure function of batch id, row key and operation."""
    digest = hashlib.sha256(f"{batch_id}\0{op}\0{ref}\0{occurrence}".encode()).hexdigest()
    return f"{_PREFIX[op]}-{batch_id[:8]}-{digest[:16]}"


def default_batch_id(op: Op, source: Path | None, content_digest: str | None) -> str:
    """A file's batch id comes from its absolute path + op (editing the file keeps it);
    stdin's from its content + op (re-piping the same data resumes)."""
    basis = f"path:{source.resolve()}" if source is not None else f"content:{content_digest}"
    return hashlib.sha256(f"{op}\0{basis}".encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class JournalRow:
    key: str
    line: int
    ref: str
    new_ref: str
    amount: Decimal
    currency: str
    profile: str | None
    state: State
    attempts: int
    txn_id: str | None
    txn_state: str | None
    detail: str | None


_COLS = "key, line, ref, new_ref, amount, currency, profile, state, attempts, txn_id, " \
        "txn_state, detail"

_BY_KEY = "SELECT " + _COLS + " FROM rows WHERE key=?"  # noqa: S608 - constant text
_PAGE = "SELECT " + _COLS + " FROM rows WHERE seen=? AND line>? ORDER BY line LIMIT ?"  # noqa: S608


def _to_row(r: tuple[Any, ...]) -> JournalRow:
    key, line, ref, new_ref, amount, currency, profile, state, attempts, *txn = r
    return JournalRow(key, line, ref, new_ref, Decimal(amount), currency, profile, state,
                      attempts, *txn)


def read_journal(path: Path) -> tuple[str, Op, list[JournalRow]]:
    """(batch id, operation, every row in line order) of a journal opened read-only (never
    locked: a running batch may hold it). Anything else is a usage error: exit 2."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise UsageError(f"--journal {path}: cannot open ({exc})") from None
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        rows = db.execute(f"SELECT {_COLS} FROM rows ORDER BY line, key").fetchall()  # noqa: S608
    except sqlite3.Error as exc:
        raise UsageError(f"--journal {path}: not a walletctl batch journal ({exc})",
                         hint="pass the .journal file a capture/refund/reverse --batch run "
                              "wrote") from None
    finally:
        db.close()
    op = meta.get("op")
    if not meta.get("batch_id") or op not in _PREFIX:
        raise UsageError(f"--journal {path}: not a walletctl batch journal (no batch id "
                         "and operation in it)")
    return str(meta["batch_id"]), op, [_to_row(r) for r in rows]


class Journal:
    """A batch's write-ahead journal (one SQLite file; ``:memory:``-like temp for dry runs)."""

    def __init__(self, path: Path, *, batch_id: str, op: Op, source: str) -> None:
        self.path = path
        self.batch_id = batch_id
        self.op = op
        self.existed = path.exists() and path.stat().st_size > 0
        self._closed = False
        self._lock_fd = _lock(path)  # before anything is read or written: one run at a time
        try:
            self._open(path, batch_id, op, source)
        except BaseException:
            if hasattr(self, "db"):
                self.db.close()
            os.close(self._lock_fd)
            raise

    def _open(self, path: Path, batch_id: str, op: Op, source: str) -> None:
        try:
            self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=5000")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"--journal {path}: not a walletctl journal ({exc})") from None
        meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        if meta:
            if meta.get("batch_id") != batch_id or meta.get("op") != op:
                raise UsageError(
                    f"--journal {path} belongs to batch {meta.get('batch_id')} "
                    f"({meta.get('op')}), not {batch_id} ({op})",
                    hint="pass the matching --batch-id, or a different --journal path",
                )
        else:
            self.db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("batch_id", batch_id), ("op", op), ("source", source),
                 ("version", SCHEMA_VERSION), ("run", "0")],
            )
        self.run = int(meta.get("run", "0")) + 1
        self.db.execute("UPDATE meta SET value=? WHERE key='run'", (str(self.run),))
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('owner', ?)",
                        (_owner(),))

    # ---- planning (one transaction for the whole file) ----
    def begin(self) -> None:
        self.db.execute("BEGIN")

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def plan(self, row: Row) -> Problem | JournalRow:
        """Record ``row`` as planned (or match it to the same key of an earlier run)."""
        (occ,) = self.db.execute("SELECT count(*) FROM rows WHERE seen=? AND ref=?",
                                 (self.run, row.ref)).fetchone()
        key = f"{row.ref}#{occ}"
        new_ref = row.new_ref or derive_reference(self.batch_id, self.op, row.ref, occ)
        prev = self.get(key)
        if prev is not None and (problem := self._changed(prev, row, new_ref)) is not None:
            return problem
        try:
            if prev is None:
                self.db.execute(
                    "INSERT INTO rows (key, ref, occ, line, new_ref, amount, currency, profile, "
                    "seen, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, row.ref, occ, row.line, new_ref, str(row.amount), row.currency,
                     row.profile, self.run, time.time()))
            else:
                self.db.execute(
                    "UPDATE rows SET line=?, seen=?, amount=?, currency=?, profile=?, new_ref=? "
                    "WHERE key=?",
                    (row.line, self.run, str(row.amount), row.currency, row.profile, new_ref,
                     key))
        except sqlite3.IntegrityError:
            return self._dup(row, new_ref)
        if prev is None:
            return JournalRow(key, row.line, row.ref, new_ref, row.amount, row.currency,
                              row.profile, "planned", 0, None, None, None)
        return _to_row(self._by_key(key))

    def _changed(self, prev: JournalRow, row: Row, new_ref: str) -> Problem | None:
        """An earlier run's row under the same key that the file now gives differently."""
        if prev.state == "refused" and (prev.detail or "").startswith(RECHECKED):
            # Refused by walletctl's own pre-flight or answered 404: nothing was stored, so a
            # new run checks it again (the original may have been approved since, or the
            # base_url fixed).
            self.db.execute("UPDATE rows SET state='planned' WHERE key=?", (prev.key,))
            return None
        if prev.state == "planned" or (prev.amount, prev.currency, prev.new_ref) == (
                row.amount, row.currency, new_ref):
            return None
        return Problem(row.line, "amount" if prev.new_ref == new_ref else "new_ref",
                       f"differs from what the journal recorded for this row ({prev.state}: "
                       f"{prev.amount} {prev.currency} as {prev.new_ref}); "
                       "use a new --batch-id for a new batch")

    def _by_key(self, key: str) -> Any:
        return self.db.execute(_BY_KEY, (key,)).fetchone()

    def _dup(self, row: Row, new_ref: str) -> Problem:
        other = self.db.execute("SELECT line, seen FROM rows WHERE new_ref=?",
                                (new_ref,)).fetchone()
        where = f"line {other[0]}" if other and other[1] == self.run else "an earlier run"
        return Problem(row.line, "new_ref", f"{new_ref!r} is already used by {where}")

    # ---- running ----
    def rows(self, page: int = 500) -> Iterator[JournalRow]:
        """This run's rows in file order, read page by page (memory stays flat)."""
        last = -1
        while True:
            chunk = self.db.execute(_PAGE, (self.run, last, page)).fetchall()
            if not chunk:
                return
            for r in chunk:
                yield _to_row(r)
            last = int(chunk[-1][1])

    def mark_sent_many(self, keys: list[str]) -> None:
        """Committed before the requests are sent, with any outcomes recorded since the last
        commit (one commit per group of sends: see runner.GroupCommit)."""
        if not self.db.in_transaction:
            self.db.execute("BEGIN")
        now = time.time()
        self.db.executemany(
            "UPDATE rows SET state='sent', attempts=attempts+1, updated=? WHERE key=?",
            [(now, key) for key in keys],
        )
        self.commit()

    def finish(self, key: str, state: State, *, txn_id: str | None = None,
               txn_state: str | None = None, detail: str | None = None) -> None:
        """Record an outcome. Group commit: it becomes durable with the next
        ``mark_sent_many`` or at the end of the run. Losing it to a crash is safe: the row
        is still ``sent`` on disk, and a resume reconciles it by lookup before anything is
        sent again."""
        if not self.db.in_transaction:
            self.db.execute("BEGIN")
        self.db.execute(
            "UPDATE rows SET state=?, txn_id=coalesce(?, txn_id), "
            "txn_state=coalesce(?, txn_state), detail=?, updated=? WHERE key=?",
            (state, txn_id, txn_state, detail, time.time(), key),
        )

    def get(self, key: str) -> JournalRow | None:
        found = self._by_key(key)
        return None if found is None else _to_row(found)

    def counts(self) -> dict[str, int]:
        """This run's rows by state."""
        out = dict.fromkeys(STATES, 0)
        for state, n in self.db.execute(
            "SELECT state, count(*) FROM rows WHERE seen=? GROUP BY state", (self.run,)
        ):
            out[str(state)] = int(n)
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.commit()
        self.db.close()
        os.close(self._lock_fd)  # releases the run lock (a killed process releases it too)


def _owner() -> str:
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"pid {os.getpid()} on {socket.gethostname()}, started {started}"


def _lock(path: Path) -> int:
    """An exclusive ``flock`` on the journal file itself for the whole run. The kernel drops
    it when the process ends, however it ends, so a lock is never stale. (SQLite's own locks
    are POSIX record locks, a separate kind: the two do not interfere.)"""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise UsageError(f"--journal {path}: cannot open ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(
            f"--journal {path} is in use by another run ({_running_owner(path)})",
            hint="wait for it to finish, or stop it (Ctrl-C); one run per journal at a time",
        ) from None
    return fd


def _running_owner(path: Path) -> str:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='owner'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        row = None
    return str(row[0]) if row else "starting up"


class BatchValidationError(RequestValidationError):
    """Invalid rows and no --skip-invalid, a file that cannot be read as a batch (whatever
    --skip-invalid says), a file of invalid rows only, or one with no rows: nothing was sent."""

    def __init__(self, problems: list[Problem], total: int, source: str, *,
                 skipping: bool = False) -> None:
        super().__init__([(f"line {p.line}: {p.field}", p.rule) for p in problems])
        shown = "; ".join(str(p) for p in problems[:3])
        more = f" (+{total - 3} more)" if total > 3 else ""
        whole = next((p for p in problems if p.whole_file), None)
        if whole is not None:
            self.message = f"{source} cannot be read as a batch: {whole}; nothing was sent"
            self.hint = ("fix the file (a header row naming the columns ref, amount and "
                         "optionally currency, new_ref, profile; UTF-8; commas)")
        elif not total:
            self.message = f"no rows in {source}: nothing was sent"
            self.hint = "a batch file holds a header row and one row per movement"
        else:
            self.message = (
                f"{total} invalid row{'s' if total != 1 else ''} in {source}: {shown}{more}; "
                "nothing was sent"
            )
            self.hint = ("fix the rows: --skip-invalid sends the valid ones, and this file has "
                         "none" if skipping else
                         "fix the rows, or pass --skip-invalid to send only the valid ones")
        self.args = (self.message,)
        self.total = total


@dataclass
class Plan:
    rows: int = 0  # valid rows of this run
    invalid: int = 0
    problems: list[Problem] = field(default_factory=list)
    to_send: int = 0  # valid rows not already final in the journal
    done_before: int = 0
    totals: dict[str, Decimal] = field(default_factory=dict)  # of to_send rows, per currency

    @property
    def fatal(self) -> bool:
        """A problem of the file itself (its header, its encoding) was found."""
        return any(p.whole_file for p in self.problems)

    def note(self, problem: Problem) -> None:
        self.invalid += 1
        if problem.whole_file:
            self.problems.insert(0, problem)  # named first, and kept whatever the count
            del self.problems[MAX_PROBLEMS_KEPT:]
        elif len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(problem)

    def add(self, row: JournalRow) -> None:
        self.rows += 1
        if row.state in FINAL_STATES:
            self.done_before += 1
        else:
            self.to_send += 1
            self.totals[row.currency] = self.totals.get(row.currency, Decimal(0)) + row.amount

    def money(self) -> str:
        """The rows to send in words: ``12.00 EUR, 3.50 USD`` (``nothing``)."""
        from walletctl.models.money import format_major

        return ", ".join(format_major(v, c) for c, v in sorted(self.totals.items())) or "nothing"


def plan_batch(
    source: Path,
    journal: Journal,
    *,
    default_currency: str | None = None,
    skip_invalid: bool = False,
    check_profile: Callable[[str], str | None] | None = None,
    display_name: str | None = None,
    check_request: Callable[[Row], Problem | None] | None = None,
) -> Plan:
    """Validate ``source`` and record its rows; raise :class:`BatchValidationError` on bad rows
    (unless ``skip_invalid``). ``check_profile(name)`` returns a rule text for an unusable name;
    ``check_request(row)`` builds the row's request with the request model (a row the model
    refuses is an invalid row here, never a failure in the middle of the run).
    """
    profile_rule = cache(check_profile) if check_profile is not None else None

    def problem_of(row: Row) -> Problem | None:
        if row.profile is not None and profile_rule is not None and \
                (rule := profile_rule(row.profile)) is not None:
            return Problem(row.line, "profile", rule)
        return None if check_request is None else check_request(row)

    plan = Plan()
    journal.begin()
    try:
        for item in iter_rows(source, default_currency=default_currency):
            planned = item if isinstance(item, Problem) else problem_of(item) or journal.plan(item)
            if isinstance(planned, Problem):
                plan.note(planned)
            else:
                plan.add(planned)
        # a file-level problem is fatal whatever --skip-invalid says; so is a file with no
        # valid row (skipping every row would send nothing and call that done)
        refused = bool(plan.invalid) and (not skip_invalid or not plan.rows or plan.fatal)
        if refused or not (plan.rows or plan.invalid):
            raise BatchValidationError(plan.problems, plan.invalid, display_name or str(source),
                                       skipping=skip_invalid)
    except BaseException:
        journal.rollback()
        raise
    journal.commit()
    return plan
