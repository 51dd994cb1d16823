"""One person's history: a SQLite file (WAL mode) on the operator's own disk.

Appends take SQLite's write lock (``BEGIN IMMEDIATE``) to read the chain's tip and insert, so
concurrent processes on this machine serialise and none is lost. The file is the writer's:
its chain shows accidental and casual edits, not a determined owner (a team's history lives
on PostgreSQL, where the database, not the writer, keeps it).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from walletctl.history.chain import ALL, COLUMN_TYPES, LATER
from walletctl.history.store import HistoryStore, StorageError

_COLUMN_DEFS = ", ".join(f"{c} {COLUMN_TYPES[c]}" for c in ALL)  # a new file has them all
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    {_COLUMN_DEFS},
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_entry ON events(entry, kind);
CREATE INDEX IF NOT EXISTS events_ref ON events(original_ref);
CREATE TABLE IF NOT EXISTS approvals (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('single', 'batch')),
    profile TEXT, base_url TEXT,
    merchant_id TEXT NOT NULL, store_id TEXT NOT NULL, operation TEXT NOT NULL,
    original_ref TEXT, new_ref TEXT, amount TEXT, currency TEXT, reason TEXT,
    batch_file TEXT, batch_sha256 TEXT, batch_rows INTEGER, batch_totals TEXT,
    batch_detail TEXT,
    created_at TEXT NOT NULL, expires_at TEXT NOT NULL,
    requester TEXT NOT NULL, requester_host TEXT,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'refused', 'spent')),
    decided_by TEXT, decided_at TEXT, decision_reason TEXT,
    spent_at TEXT, spent_entry INTEGER, spent_batch TEXT
);
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
            db.execute(f"ALTER TABLE events ADD COLUMN {column} {COLUMN_TYPES[column]}")
    db.executescript(_LATER_INDEXES)


def create_private(path: Path) -> None:
    """Create the file (and its directory) readable by its owner only, if missing."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class SqliteHistory(HistoryStore):
    """One open history file."""


    def __init__(self, path: Path, *, chained: bool = True) -> None:
        self.path = path
        self.where = str(path)
        self.chained = chained
        create_private(path)
        # The -wal/-shm files take the database file's permissions (0600).
        self._db = sqlite3.connect(path, timeout=60.0, isolation_level=None)
        self._first_use(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process
        self._first_use(lambda: migrate(self._db))
        from walletctl.history._wal import skip_checkpoint_on_close

        skip_checkpoint_on_close(self._db, path)

    @staticmethod
    def _first_use(step: Callable[[], object]) -> None:
        """Switching to WAL and creating the schema can meet another process doing the same
        to a new file, and SQLite may then answer "locked" without waiting: try again for
        up to 10 s."""
        import time

        deadline = time.monotonic() + 10
        while True:
            try:
                step()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def close(self) -> None:
        self._db.close()

    def _execute(self, sql: str, args: Iterable[Any] = (), *,
                 stream: bool = False) -> Iterator[tuple[Any, ...]]:
        # A cursor streams either way. A plain loop, not ``yield from``: a listing abandoned
        # mid-way (its reader closed the pipe) is closed after the connection, and ``yield
        # from`` would then close the cursor on a closed database and fail at exit.
        try:
            for row in self._db.execute(sql, tuple(args)):  # noqa: UP028
                yield row
        except sqlite3.Error as exc:
            raise StorageError(f"history {self.where}: {exc}") from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"history {self.where}: {exc}") from None
        try:
            yield self._db
        except sqlite3.Error as exc:
            self._db.execute("ROLLBACK")
            raise StorageError(f"history {self.where}: {exc}") from None
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageError(f"history {self.where}: {exc}") from None
