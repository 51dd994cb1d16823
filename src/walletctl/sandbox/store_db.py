"""The sandbox store's SQLite connection, its lock and SQL transactions (``atomic()``).

Every public method of the store runs in ONE short ``BEGIN IMMEDIATE`` ... ``COMMIT``
transaction; :meth:`StoreBase.atomic` groups several calls into one (it is re-entrant: a method
called inside ``atomic()`` joins the outer transaction).

Persistence: ``Store(path)`` opens (or creates) a file DB in WAL mode, so a restarted
sandbox with the same ``--db`` keeps everything; ``Store(None)`` is a private in-memory DB.
The tables are created from the class's ``SCHEMA`` (see :class:`walletctl.sandbox.store.Store`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar


class StoreBase:
    """One SQLite connection guarded by a re-entrant lock (thread-safe); no tables of its own."""

    SCHEMA: ClassVar[str] = ""  # CREATE ... IF NOT EXISTS statements, run on opening

    def __init__(self, db_path: str | None = None) -> None:
        self.db_path = db_path
        self._lock = threading.RLock()
        self._depth = 0
        target = db_path if db_path else ":memory:"
        self._conn = sqlite3.connect(
            target, check_same_thread=False, isolation_level=None, timeout=10.0
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA busy_timeout = 10000")
        if db_path:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.executescript(self.SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` (nested calls join the outer one)."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self._conn
            except BaseException:
                self._depth -= 1
                if outer:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self._conn.execute("COMMIT")
