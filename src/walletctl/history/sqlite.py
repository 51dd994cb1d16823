"""One person's history: a SQLite file (WAL mode) on the operator's own disk. Appends take
SQLite's write lock (``BEGIN IMMEDIATE``), so concurrent processes serialise. Its chain shows
accidental and casual edits, not a determined owner's (a team's history is on PostgreSQL).
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from walletctl.history.chain import ALL, COLUMN_TYPES, LATER
from walletctl.history.desk_tables import DeskTables
from walletctl.history.store import HistoryStore, Intent, StorageError, Transaction
from walletctl.models.money import payable_currencies
from walletctl.models.operations import HISTORY_NAMES
from walletctl.models.plain import CLASS

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
CREATE TABLE IF NOT EXISTS approval_rows (
    approval INTEGER NOT NULL REFERENCES approvals (id),
    line INTEGER NOT NULL, ref TEXT NOT NULL, amount TEXT NOT NULL, currency TEXT NOT NULL,
    PRIMARY KEY (approval, line)
);
CREATE INDEX IF NOT EXISTS approval_rows_ref ON approval_rows(approval, ref);
CREATE INDEX IF NOT EXISTS approvals_ref ON approvals(original_ref);
CREATE TABLE IF NOT EXISTS policy (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, set_by TEXT, set_at TEXT
);
CREATE TABLE IF NOT EXISTS findings (
    id INTEGER PRIMARY KEY,
    merchant_id TEXT NOT NULL, store_id TEXT NOT NULL, kind TEXT NOT NULL,
    original TEXT NOT NULL, reference TEXT NOT NULL, entry INTEGER NOT NULL DEFAULT 0,
    movement_by TEXT, detail TEXT NOT NULL, recorded_at TEXT NOT NULL,
    recorded_by TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'resolved')),
    resolved_at TEXT, resolved_by TEXT, resolution TEXT, resolved_entry INTEGER,
    UNIQUE (merchant_id, store_id, kind, reference, entry)
);
CREATE INDEX IF NOT EXISTS findings_ref ON findings(merchant_id, store_id, reference);
"""
# Every look-up a command makes is answered from one of these (tests/history/test_plans.py
# asserts the plans): the begun-at time, the writer, the approval an event names.
_LATER_INDEXES = """
CREATE INDEX IF NOT EXISTS events_new_ref ON events(new_ref);
CREATE INDEX IF NOT EXISTS events_time ON events(time);
CREATE INDEX IF NOT EXISTS events_written_by ON events(COALESCE(operator, os_user));
CREATE INDEX IF NOT EXISTS events_approval_id ON events(approval) WHERE approval IS NOT NULL;
"""
# Each entry's outcome now and its latest completion, kept by triggers with every append,
# change or deletion (an index look-up, not a walk over every entry); a file written
# before it is filled once, at its first open by this version.
_OUTCOME_OF = """
SELECT b.entry, COALESCE(c.outcome, b.outcome, 'unknown'), c.seq FROM events b
LEFT JOIN events c ON c.seq = (
    SELECT MAX(seq) FROM events WHERE kind = 'complete' AND entry = b.entry)
WHERE b.kind = 'begin'"""
_ENTRY_OUTCOME = f"""
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS entry_outcome (
    entry INTEGER PRIMARY KEY, outcome TEXT NOT NULL, last_complete INTEGER);
CREATE INDEX IF NOT EXISTS entry_outcome_by_outcome ON entry_outcome(outcome);
INSERT INTO entry_outcome (entry, outcome, last_complete) {_OUTCOME_OF}
    AND NOT EXISTS (SELECT 1 FROM entry_outcome);
CREATE TRIGGER IF NOT EXISTS entry_outcome_begun AFTER INSERT ON events
WHEN NEW.kind = 'begin' BEGIN
    INSERT OR REPLACE INTO entry_outcome (entry, outcome, last_complete)
    VALUES (NEW.entry, COALESCE(NEW.outcome, 'unknown'), NULL);
END;
CREATE TRIGGER IF NOT EXISTS entry_outcome_completed AFTER INSERT ON events
WHEN NEW.kind = 'complete' BEGIN
    UPDATE entry_outcome SET last_complete = NEW.seq, outcome = COALESCE(NEW.outcome, (
        SELECT COALESCE(outcome, 'unknown') FROM events
        WHERE entry = NEW.entry AND kind = 'begin'), 'unknown')
    WHERE entry = NEW.entry AND (last_complete IS NULL OR last_complete < NEW.seq);
END;
CREATE TRIGGER IF NOT EXISTS entry_outcome_deleted AFTER DELETE ON events BEGIN
    DELETE FROM entry_outcome WHERE entry = OLD.entry;
    INSERT OR REPLACE INTO entry_outcome (entry, outcome, last_complete)
        {_OUTCOME_OF} AND b.entry = OLD.entry;
END;
CREATE TRIGGER IF NOT EXISTS entry_outcome_changed AFTER UPDATE ON events BEGIN
    DELETE FROM entry_outcome WHERE entry IN (OLD.entry, NEW.entry);
    INSERT OR REPLACE INTO entry_outcome (entry, outcome, last_complete)
        {_OUTCOME_OF} AND b.entry IN (OLD.entry, NEW.entry);
END;
COMMIT;
"""  # noqa: S608 - constant SQL only


# The file's own checks (the database's on PostgreSQL: migrations/V6.sql), made by every
# open of the file: what a few lines of sqlite3 write is held to what walletctl writes.
MONEY = "(" + ", ".join(f"'{name}'" for name in HISTORY_NAMES) + ")"
STEPS = "('policy', 'approval', 'finding', 'resolve')"
# no control characters, no invisible or direction-changing ones (models.plain)
_HAS_CONTROL = "*[" + CLASS.replace(chr(0), chr(1)) + "]*"  # SQL text holds no NUL
_TEXT: dict[str, tuple[str, ...]] = {
    "events": tuple(c for c in ALL if COLUMN_TYPES[c] == "TEXT"),
    "approvals": ("profile", "base_url", "merchant_id", "store_id", "operation",
                  "original_ref", "new_ref", "amount", "currency", "reason", "batch_file",
                  "batch_sha256", "batch_totals", "requester", "requester_host",
                  "decided_by", "decision_reason", "spent_batch"),
    "approval_rows": ("ref", "amount", "currency"),
    "policy": ("key", "value", "set_by"),
    "findings": ("merchant_id", "store_id", "kind", "original", "reference", "movement_by",
                 "detail", "recorded_by", "resolved_by", "resolution"),
}


def _plain_triggers() -> str:
    sql = []
    for table, columns in _TEXT.items():
        for when in ("INSERT", "UPDATE"):
            # one GLOB over the row's texts joined (a control character joins none)
            test = f"({' || '.join(f'COALESCE(NEW.{c}, {chr(39) * 2})' for c in columns)}) " \
                   f"GLOB '{_HAS_CONTROL}'"
            sql.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_plain_{when.lower()} BEFORE {when} ON "
                f"{table} WHEN {test} BEGIN SELECT RAISE(ABORT, 'walletctl history: a text "
                f"of {table} holds a control character (refused)'); END;")
    return "\n".join(sql)


_MOVEMENT = (f"(%(e)s.operation IN {MONEY} OR (%(e)s.amount IS NOT NULL "
             f"AND %(e)s.operation NOT IN {STEPS}))")
RULES = f"""
CREATE TRIGGER IF NOT EXISTS events_born BEFORE INSERT ON events
WHEN NEW.kind = 'begin' AND NEW.outcome IS NOT NULL AND {_MOVEMENT % {"e": "NEW"}}
    AND (NEW.outcome <> 'refused' OR NEW.http_status IS NOT NULL) BEGIN
SELECT RAISE(ABORT, 'walletctl policy: a movement is begun unsent or refused before sending');
END;
CREATE TRIGGER IF NOT EXISTS events_settled BEFORE INSERT ON events
WHEN NEW.kind = 'complete' AND EXISTS (SELECT 1 FROM events b WHERE b.entry = NEW.entry
    AND b.kind = 'begin' AND b.outcome IS NOT NULL AND {_MOVEMENT % {"e": "b"}}) BEGIN
SELECT RAISE(ABORT, 'walletctl policy: an entry refused before sending takes no outcome');
END;
CREATE TRIGGER IF NOT EXISTS events_settled_once BEFORE INSERT ON events
WHEN NEW.kind = 'complete' AND (SELECT outcome FROM events WHERE entry = NEW.entry
    AND kind = 'complete' ORDER BY seq DESC LIMIT 1) IN ('refused', 'declined')
    AND NEW.outcome IS NOT (SELECT outcome FROM events WHERE entry = NEW.entry
    AND kind = 'complete' ORDER BY seq DESC LIMIT 1) BEGIN
SELECT RAISE(ABORT, 'walletctl policy: a refused or declined entry never becomes moved');
END;
CREATE TRIGGER IF NOT EXISTS findings_keep BEFORE DELETE ON findings BEGIN
    SELECT RAISE(ABORT, 'walletctl history: DELETE of findings refused');
END;
CREATE TRIGGER IF NOT EXISTS findings_resolver BEFORE UPDATE ON findings
WHEN OLD.movement_by IS NULL AND NEW.resolved_by IS NOT NULL
    AND NEW.resolved_by = OLD.recorded_by BEGIN
SELECT RAISE(ABORT, 'walletctl findings: who recorded it may not resolve it (four eyes)');
END;
CREATE TRIGGER IF NOT EXISTS policy_key_currency BEFORE INSERT ON policy
WHEN NEW.key GLOB '*.[A-Z][A-Z][A-Z]' AND substr(NEW.key, -3) NOT IN
    ({", ".join(f"'{c}'" for c in payable_currencies())}) BEGIN
    SELECT RAISE(ABORT, 'walletctl policy: a policy key''s currency is an ISO 4217 code');
END;
CREATE TRIGGER IF NOT EXISTS approvals_expiry AFTER INSERT ON approvals
WHEN EXISTS (SELECT 1 FROM policy WHERE key = 'approval_hours') BEGIN
    UPDATE approvals SET expires_at = min(expires_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now',
        '+' || (SELECT CAST(value AS INTEGER) FROM policy WHERE key = 'approval_hours')
        || ' hours')) WHERE id = NEW.id;
END;
{_plain_triggers()}
"""  # noqa: S608 - constant SQL only


def migrate(db: sqlite3.Connection) -> None:
    """Create the table, or add the later columns, indexes and the entries' outcomes to a
    file written before them."""
    db.executescript(SCHEMA)
    have = {str(row[1]) for row in db.execute("PRAGMA table_info(events)")}
    for column in LATER:
        if column not in have:
            db.execute(f"ALTER TABLE events ADD COLUMN {column} {COLUMN_TYPES[column]}")
    db.executescript(_LATER_INDEXES)
    if db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                  "AND name LIKE 'entry_outcome_%'").fetchone()[0] < 4:
        db.executescript(_ENTRY_OUTCOME)
    if db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                  "AND name = 'approvals_expiry'").fetchone()[0] == 0:
        db.executescript(f"BEGIN IMMEDIATE; {RULES} COMMIT;")


_TREE = """
CREATE TABLE IF NOT EXISTS merkle_nodes (
    level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
"""


def fill_tree(db: sqlite3.Connection) -> None:
    """The Merkle tree's table, and the leaves of events written before it (a file of an
    earlier version: filled once, under the write lock; later opens find it whole)."""
    from walletctl.history.chain import SELECT_EVENTS
    from walletctl.history.tree import INSERT_NODE, fill, stored_size

    def query(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return db.execute(sql, args).fetchall()

    db.executescript(_TREE)
    tip = db.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0
    if stored_size(query) >= tip:
        return
    def insert(nodes: list[tuple[int, int, bytes]]) -> None:
        db.executemany(INSERT_NODE, nodes)

    db.execute("BEGIN IMMEDIATE")
    try:
        fill(query, insert,
             lambda after: iter(db.execute(SELECT_EVENTS, (after,))))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def create_private(path: Path) -> None:
    """Create the file (and its directory) readable by its owner only, if missing."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


NO_CKPT_ON_CLOSE = 1006  # SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE (sqlite3.h)


def skip_checkpoint_on_close(db: sqlite3.Connection, path: Path) -> bool:
    """Leave the WAL in place when ``db`` closes (True: the setting is on), sparing every
    command that recorded an entry the close's checkpoint and fsync (~10 ms); SQLite's
    automatic checkpoint folds the WAL in from time to time. Python 3.12+ has
    ``Connection.setconfig``; on CPython 3.11 the C API is called through ctypes only on
    Linux x86-64, the handle checked by the file name SQLite reports and the setting read
    back. Anywhere else, or if a check fails, the checkpoint happens on close."""
    setconfig = getattr(db, "setconfig", None)
    constant = getattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", None)
    if setconfig is not None and constant is not None:
        setconfig(constant, True)
        return True
    if not (sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
            and sys.platform == "linux"):
        return False
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        return _via_ctypes(db, path)
    except (OSError, AttributeError, ValueError):
        return False


def _via_ctypes(db: sqlite3.Connection, path: Path) -> bool:
    import _sqlite3
    import ctypes

    lib = ctypes.CDLL(_sqlite3.__file__)  # its libsqlite3 symbols resolve through it
    handle = ctypes.c_void_p.from_address(id(db) + object.__basicsize__).value
    if not handle:
        return False
    lib.sqlite3_db_filename.restype = ctypes.c_char_p
    lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    name = lib.sqlite3_db_filename(handle, b"main")
    if name is None or Path(name.decode()).resolve() != path.resolve():
        return False
    lib.sqlite3_db_config.restype = ctypes.c_int
    if lib.sqlite3_db_config(ctypes.c_void_p(handle), ctypes.c_int(NO_CKPT_ON_CLOSE),
                             ctypes.c_int(1), None) != 0:
        return False
    check = ctypes.c_int(0)
    lib.sqlite3_db_config(ctypes.c_void_p(handle), ctypes.c_int(NO_CKPT_ON_CLOSE),
                          ctypes.c_int(-1), ctypes.byref(check))
    return check.value == 1


class SqliteTables(DeskTables):
    """The desk's tables in SQLite's SQL: ``?`` placeholders, a look-up by many values
    ``IN (?, ...)`` per run of them."""

    P = "?"


class SqliteHistory(HistoryStore):
    """One open history file."""

    backend = "sqlite"
    Tables = SqliteTables

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
        if chained:
            self._first_use(lambda: fill_tree(self._db))
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

    def local_file(self) -> Path:
        return self.path

    def read(self, sql: str, args: Iterable[Any] = (), *,
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
        began = False
        try:
            self._db.execute("BEGIN IMMEDIATE")
            began = True
            yield self._db
            self._db.execute("COMMIT")
        except BaseException as exc:
            if began and self._db.in_transaction:
                self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"history {self.where}: {exc}") from None
            raise

    def _check_rulebook(self, tx: Transaction, begun: list[tuple[Intent, int]]) -> None:
        from walletctl.history.rulebook import refuse_forbidden

        refuse_forbidden(self, tx, begun)
