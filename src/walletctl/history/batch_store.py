"""A batch's journal file, stored: SQLite in WAL mode, one row per batch row keyed
``ref#occurrence``, and the run's metadata (its batch id, operation, run number, owner).
WAL with ``synchronous=NORMAL`` is durable against a killed process, the guarantee needed.
What a row means, and when it is written, is :mod:`walletctl.ops.batch.journal`'s: this
module only keeps it, through typed operations (no caller writes SQL). No secrets:
references, amounts, states and one-line details only.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, Literal

from walletctl.errors import UsageError

State = Literal["planned", "sent", "confirmed", "refused", "unknown"]
STATES: Final = ("planned", "sent", "confirmed", "refused", "unknown")
SCHEMA_VERSION: Final = "1"

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


def read_journal(path: Path) -> tuple[dict[str, str], list[JournalRow]]:
    """(its metadata, every row in line order) of a journal opened read-only (never
    locked: a running batch may hold it). A file that is not one is a usage error."""
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
    return {str(k): str(v) for k, v in meta.items()}, [_to_row(r) for r in rows]


def copy_journal(source: Path, target: Path) -> None:
    """``target`` made a copy of the journal ``source`` as it is now (a dry run plans into
    one: the real journal is never touched)."""
    with closing(sqlite3.connect(str(source))) as src, \
            closing(sqlite3.connect(str(target))) as dst:
        src.backup(dst)


class JournalFile:
    """One batch's journal, open for a run: locked (``flock``) before anything is read or
    written, so one run at a time; its run number counted up. ``batch_id`` and ``op``
    must be the ones the file was made for (else a usage error)."""

    def __init__(self, path: Path, *, batch_id: str, op: str, source: str) -> None:
        self.path = path
        self.existed = path.exists() and path.stat().st_size > 0
        self._closed = False
        self._lock_fd = lock_journal(path)
        try:
            self._open(path, batch_id, op, source)
        except BaseException:
            if hasattr(self, "db"):
                self.db.close()
            os.close(self._lock_fd)
            raise

    def _open(self, path: Path, batch_id: str, op: str, source: str) -> None:
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

    # ---- one transaction (a whole file's plan; a group of outcomes) ----
    def begin(self) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN")

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    # ---- planning ----
    def occurrences(self, ref: str) -> int:
        """The rows of this run naming ``ref`` so far (the next one's occurrence)."""
        (count,) = self.db.execute("SELECT count(*) FROM rows WHERE seen=? AND ref=?",
                                   (self.run, ref)).fetchone()
        return int(count)

    def add(self, key: str, *, ref: str, occurrence: int, line: int, new_ref: str,
            amount: Decimal, currency: str, profile: str | None) -> bool:
        """A new row, planned in this run; False (nothing written) when ``new_ref`` is
        another row's."""
        try:
            self.db.execute(
                "INSERT INTO rows (key, ref, occ, line, new_ref, amount, currency, profile, "
                "seen, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, ref, occurrence, line, new_ref, str(amount), currency, profile,
                 self.run, time.time()))
        except sqlite3.IntegrityError:
            return False
        return True

    def replan(self, key: str, *, line: int, new_ref: str, amount: Decimal, currency: str,
               profile: str | None) -> bool:
        """An earlier run's row, seen again in this run; False (nothing written) when
        ``new_ref`` is another row's."""
        try:
            self.db.execute(
                "UPDATE rows SET line=?, seen=?, amount=?, currency=?, profile=?, new_ref=? "
                "WHERE key=?", (line, self.run, str(amount), currency, profile, new_ref, key))
        except sqlite3.IntegrityError:
            return False
        return True

    def reopen(self, key: str) -> None:
        """The row planned again (nothing of it was stored at the gateway)."""
        self.db.execute("UPDATE rows SET state='planned' WHERE key=?", (key,))

    def holder_of(self, new_ref: str) -> tuple[int, int] | None:
        """The (line, run) of the row that uses ``new_ref``."""
        found = self.db.execute("SELECT line, seen FROM rows WHERE new_ref=?",
                                (new_ref,)).fetchone()
        return None if found is None else (int(found[0]), int(found[1]))

    # ---- running ----
    def get(self, key: str) -> JournalRow | None:
        found = self.db.execute(_BY_KEY, (key,)).fetchone()
        return None if found is None else _to_row(found)

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

    def mark_sent(self, keys: list[str]) -> None:
        """These rows sent once more (in the open transaction, or one of their own)."""
        self.begin()
        now = time.time()
        self.db.executemany(
            "UPDATE rows SET state='sent', attempts=attempts+1, updated=? WHERE key=?",
            [(now, key) for key in keys])

    def settle(self, key: str, state: State, *, txn_id: str | None, txn_state: str | None,
               detail: str | None) -> None:
        """A row's outcome, in the open transaction (one begun if none is)."""
        self.begin()
        self.db.execute(
            "UPDATE rows SET state=?, txn_id=coalesce(?, txn_id), "
            "txn_state=coalesce(?, txn_state), detail=?, updated=? WHERE key=?",
            (state, txn_id, txn_state, detail, time.time(), key))

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


def lock_journal(path: Path) -> int:
    """An exclusive ``flock`` on the journal file itself for the whole run (its descriptor).
    The kernel drops it when the process ends, however it ends, so a lock is never stale.
    (SQLite's own locks are POSIX record locks, a separate kind: the two do not
    interfere.)"""
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
