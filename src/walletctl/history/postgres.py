"""A team's shared history: the same event log in a PostgreSQL database (psycopg 3).

The database keeps it, not the client: its schema (``migrations/V*.sql``, applied by
``walletctl history setup``) refuses changes to the events, stamps each with the role the
server authenticated, extends one chain under an advisory lock and checks approvals, the
rulebook and findings (docs/history.md). The money protocol's per-order locks are
leases in the same database. Passwords come from libpq, never from walletctl.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from walletctl.history.desk_tables import DeskTables
from walletctl.history.store import HistoryStore, StorageError

if TYPE_CHECKING:
    import psycopg

    from walletctl.config.dburl import DbUrl

SCHEMA_NAME = "walletctl"
CHAIN_LOCK = 0x77616C6C  # "wall": pg_advisory_xact_lock(CHAIN_LOCK, 0) guards the tip
SETUP_LOCK = 0x77616C6D
# (version, what it does): migrations/V<version>.sql, run in order. Append only: a released
# one is never edited (tests/history/test_pg_migrations.py pins each one's sha256).
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, "events, append-only and one chain"),
    (2, "approvals (four eyes), kept by the database"),
    (3, "the desk's rulebook, roles, bound batch rows, entries numbered by the database"),
    (4, "indexes for every look-up; each entry's outcome kept beside the events"),
    (5, "recon's findings, recorded and resolved with their entries in the chain"),
    (6, "every movement through the rulebook whatever its state; no control characters; "
        "statement guards; the database's own approval expiry; ISO policy currencies"),
    (7, "the desk's per-order locks as leases; new approval requests announced"),
    (8, "the history's Merkle tree (RFC 9162), its nodes beside the events"),
    (9, "the rulebook's and the settling rules' checks set-based: a statement's plain "
        "movements in one query, not a loop of look-ups per row"),
)
LATEST = MIGRATIONS[-1][0]


def migration_sql(version: int) -> bytes:
    return (Path(__file__).with_name("migrations") / f"V{version}.sql").read_bytes()


# What each kind of role is granted, and no more (the triggers check it again per write).
_READ = (
    "GRANT USAGE ON SCHEMA walletctl TO {role}",
    "GRANT SELECT ON walletctl.events, walletctl.schema_version, walletctl.approvals, "
    "walletctl.approval_rows, walletctl.policy, walletctl.roles, walletctl.entry_outcome, "
    "walletctl.findings TO {role}",
    "GRANT SELECT ON walletctl.merkle_nodes TO {role}",
)
GRANTS: dict[str, tuple[str, ...]] = {
    "operator": (*_READ,
                 "GRANT INSERT ON walletctl.events, walletctl.approvals, "
                 "walletctl.approval_rows TO {role}",
                 "GRANT UPDATE (state, spent_at, spent_entry, spent_batch) "
                 "ON walletctl.approvals TO {role}",
                 "GRANT INSERT ON walletctl.findings TO {role}",
                 "GRANT SELECT, INSERT, UPDATE, DELETE ON walletctl.order_locks TO {role}",
                 "GRANT INSERT ON walletctl.merkle_nodes TO {role}"),
    "approver": (*_READ,
                 "GRANT INSERT ON walletctl.events TO {role}",
                 "GRANT UPDATE (state, decided_by, decided_at, decision_reason) "
                 "ON walletctl.approvals TO {role}",
                 "GRANT INSERT ON walletctl.findings TO {role}",
                 "GRANT UPDATE (state, resolved_at, resolved_by, resolution, resolved_entry)"
                 " ON walletctl.findings TO {role}",
                 "GRANT INSERT ON walletctl.merkle_nodes TO {role}"),
    "auditor": _READ,
}
ROLE_KINDS: tuple[str, ...] = tuple(GRANTS)

SHARED_HINT = ("start the database server or fix WALLETCTL_HISTORY_URL / the profile's "
               "[history] url; the password comes from ~/.pgpass or PGPASSWORD")
CREDENTIALS_HINT = ("libpq reads the password from ~/.pgpass (mode 0600; HOST:PORT:DB:ROLE:"
                 "PASSWORD), PGPASSWORD or a service file")
KINDS_HINT = ("each role does what the owner granted it: `walletctl history setup --grant ROLE "
              "--role operator|approver|auditor`")
# Bounded waits (docs/history.md): the server's own, sent as -c options on every
# connection; libpq's (connect_timeout, keepalives, tcp_user_timeout) are the URL's WAITS.
IDLE_IN_TRANSACTION_S = 5  # a client stalled inside a write: its session (and locks) end
LOCK_TIMEOUT_S = 8  # an append takes milliseconds; longer than the above, so a write
#                     waiting behind a stalled writer outlives it
STATEMENT_TIMEOUT_S = 10  # any one statement (a listing read row by row is exempt)
DEADLINE_S = STATEMENT_TIMEOUT_S + 5  # the client's own: no answer at all, the socket is cut
LISTING_PAGE = 500  # rows a listing's cursor fetches at a time
NEWS_WAIT_S = 5.0  # approvals --watch reads again after this long without a NOTIFY


def why(exc: BaseException) -> str:
    """psycopg's message as one line (libpq's may span several; it holds no password)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def connect(url: DbUrl, *, purpose: str = "walletctl") -> psycopg.Connection[Any]:
    """A connection to the history's database, or StorageError naming the server."""
    try:
        import psycopg
    except ImportError:
        raise StorageError(
            f"history {url.display()}: a PostgreSQL history needs psycopg "
            "(pip install 'psycopg[binary]', or walletctl's postgres extra)") from None

    # what other operators see while this connection holds an order (pg_stat_activity)
    doing = "".join(c if c.isascii() and c.isprintable() else "?" for c in purpose)
    waits: dict[str, Any] = url.libpq_waits()
    server = {  # the server's side of the same bounds (milliseconds, keepalives in seconds)
        # and no JIT: every statement walletctl sends is an index look-up or a listing read
        # a page at a time, and a listing of a million entries (its plan's cost above
        # jit_above_cost) spent 150-400 ms compiling before its first row
        "jit": "off",
        "search_path": SCHEMA_NAME, "lock_timeout": LOCK_TIMEOUT_S * 1000,
        "statement_timeout": STATEMENT_TIMEOUT_S * 1000,
        "idle_in_transaction_session_timeout": IDLE_IN_TRANSACTION_S * 1000,
        **{f"tcp_{name}": waits[name] for name in
           ("keepalives_idle", "keepalives_interval", "keepalives_count")}}
    try:
        return psycopg.connect(
            url.text, autocommit=True, **waits,
            options=" ".join(f"-c {name}={value}" for name, value in server.items()),
            application_name=f"{doing[:50]} since {time.strftime('%H:%M:%SZ', time.gmtime())}")
    except psycopg.Error as exc:
        text = why(exc)
        hint = (CREDENTIALS_HINT if "password" in text else
                None if "does not exist" in text else SHARED_HINT)
        raise StorageError(f"history {url.display()}: cannot connect: {text}",
                           hint=hint) from None


class Watchdog:
    """The client's own bound on each wait for the server (a frozen server or proxy answers
    nothing, and no timeout fires): armed around each wait, it shuts the connection's socket
    down once ``seconds`` pass, so libpq fails at once and the server ends the session and
    its locks. A thread looks 4 times a second while the connection is open."""

    TICK = 0.25

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._until: float | None = None
        self._db: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()  # a cut and the connection's close never overlap

    def watch(self, db: psycopg.Connection[Any]) -> None:
        import weakref

        self._db = db
        threading.Thread(target=Watchdog._run, args=(weakref.ref(self),), daemon=True,
                         name="walletctl-history-deadline").start()

    def arm(self) -> float | None:
        """Start a wait; returns the enclosing one's deadline (a read inside a write)."""
        outer = self._until
        until = time.monotonic() + self.seconds
        self._until = until if outer is None else min(outer, until)
        return outer

    def disarm(self, outer: float | None) -> None:
        self._until = outer

    @contextmanager
    def bound(self) -> Iterator[None]:
        outer = self.arm()
        try:
            yield
        finally:
            self.disarm(outer)

    def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.close()

    @staticmethod
    def _run(ref: Callable[[], Watchdog | None]) -> None:
        """Until the connection is closed (or forgotten: the thread keeps no hold on it)."""
        while (dog := ref()) is not None and dog._db is not None and not dog._expired():
            del dog
            time.sleep(Watchdog.TICK)

    def _expired(self) -> bool:
        """Cut the connection if the armed deadline has passed (True: cut, stop)."""
        import psycopg

        until = self._until
        if until is None or time.monotonic() < until:
            return False
        with self._lock:
            if self._db is None or self._until != until:
                return False
            self.fired = True
            with contextlib.suppress(OSError, psycopg.Error), socket.socket(
                    fileno=os.dup(self._db.fileno())) as duplicate:
                duplicate.shutdown(socket.SHUT_RDWR)  # the connection's socket too
            return True


class PostgresTables(DeskTables):
    """The desk's tables in PostgreSQL's SQL: psycopg's ``%s`` placeholders, and a look-up
    by many values one query with an array (``= ANY(%s)``), whatever their number."""

    P = "%s"

    def _by_many(self, values: list[Any]) -> Iterator[tuple[str, list[Any]]]:
        if values:
            yield "= ANY(%s)", [values]

    def _file_bound(self, approval: int, bound: Sequence[tuple[int, str, str, str]]) -> None:
        """The rows a batch request binds: one insert of the four columns as arrays."""
        if bound:
            lines, refs, amounts, currencies = (list(column) for column in zip(*bound,
                                                                               strict=True))
            self.on.run("INSERT INTO approval_rows (approval, line, ref, amount, currency) "
                        "SELECT %s, * FROM unnest(%s::integer[], %s::text[], %s::text[], "
                        "%s::text[])", (approval, lines, refs, amounts, currencies))


class PostgresHistory(HistoryStore):
    """One connection to a shared history (``walletctl history setup`` made its schema)."""

    shared = True
    backend = "postgresql"
    Tables = PostgresTables

    def __init__(self, url: DbUrl, *, purpose: str = "walletctl",
                 background: bool = False) -> None:
        """``background``: connect in a thread while the command goes on (~6 ms saved); a
        failure is raised at the first use, always before anything is sent."""
        self.url = url
        self.where = url.display()
        self._conn: psycopg.Connection[Any] | None = None
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._locks = LeaseLocks(self)
        self._deadline = Watchdog(DEADLINE_S)
        self._timed = True  # statement_timeout is on (connect sets it)
        if background:
            self._thread = threading.Thread(target=self._open, args=(purpose,), daemon=True,
                                            name="walletctl-history-connect")
            self._thread.start()
        else:
            self._open(purpose)
            self.db()  # raises now

    def _open(self, purpose: str) -> None:
        try:
            db = connect(self.url, purpose=purpose)
            self._deadline.watch(db)
            self._conn = self._checked(db)
        except BaseException as exc:  # handed to the first use, in the main thread
            self._deadline.close()
            self._failed = exc

    def _joined(self) -> None:
        """Wait for the background connect, if one is under way."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def db(self) -> psycopg.Connection[Any]:
        """The connection, once it is open and checked (StorageError if it cannot be)."""
        self._joined()
        if self._failed is not None:
            raise self._failed
        assert self._conn is not None
        return self._conn

    def _checked(self, db: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
        import psycopg

        try:
            with self._deadline.bound():
                row = db.execute("SELECT session_user, (SELECT max(version) FROM "
                                 "walletctl.schema_version)").fetchone()
        except psycopg.errors.UndefinedTable:
            raise StorageError(
                f"history {self.where}: no walletctl history in this database yet (the "
                "database owner runs `walletctl history setup --grant ROLE` once)") from None
        except psycopg.errors.InsufficientPrivilege:
            raise StorageError(
                f"history {self.where}: this role may not use the history (the owner "
                "grants it: `walletctl history setup --grant ROLE`)") from None
        except psycopg.Error as exc:
            raise StorageError(f"history {self.where}: {self._why(exc)}",
                               hint=SHARED_HINT) from None
        assert row is not None
        self.role = str(row[0])
        version = int(row[1] or 0)
        if version != LATEST:
            newer = version > LATEST
            raise StorageError(
                f"history {self.where}: its schema is version {version}, this walletctl "
                f"{'is older and knows' if newer else 'needs'} version {LATEST} ("
                + ("upgrade walletctl)" if newer else
                   "the database owner runs `walletctl history setup` to upgrade it)"))
        return db

    def close(self) -> None:
        self._joined()
        self._locks.close()
        self._deadline.close()

    def _why(self, exc: BaseException) -> str:
        if self._deadline.fired:
            return (f"no answer from the database server within {DEADLINE_S} s (the "
                    "connection was closed)")
        return why(exc)

    def native_sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def operator(self) -> str:
        self.db()
        return self.role

    def may(self, table: str, privilege: str = "SELECT") -> bool:
        row = self.read_one("SELECT has_table_privilege(session_user, ?, ?)",
                            (f"{SCHEMA_NAME}.{table}", privilege))
        return bool(row and row[0])

    def read(self, sql: str, args: Iterable[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]:
        return self.rows(self.native_sql(sql), tuple(args), stream=stream)

    def rows(self, sql: str, args: Sequence[Any] = (), *,
             stream: bool = False) -> Iterator[tuple[Any, ...]]:
        import psycopg

        bound = self._deadline
        try:
            db = self.db()
            if not stream:
                with bound.bound():
                    self._statement_timeout(db, on=True)
                    rows = db.execute(sql, tuple(args)).fetchall()
                yield from rows
                return
            # a server-side cursor, read a page at a time at the reader's pace (memory flat
            # in the listing's size): PostgreSQL plans a cursor for its first rows
            # (cursor_tuple_fraction), where a plain query is planned for its last and a
            # listing of a million entries sorted and hashed them all before its first line.
            # Not the statement's time, but each wait for a page, is bounded.
            held = contextlib.ExitStack()
            try:
                with bound.bound():
                    self._statement_timeout(db, on=False)
                    held.enter_context(db.transaction())
                    # it only reads; and a reader paused between pages (``| less``) is not a
                    # writer stalled holding locks, so the idle timeout does not end it
                    db.execute("SET TRANSACTION READ ONLY")
                    db.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
                    cursor = held.enter_context(db.cursor(name="walletctl_listing"))
                    cursor.itersize = LISTING_PAGE
                    cursor.execute(sql, tuple(args))
                rows_at = iter(cursor)
                while True:
                    outer = bound.arm()
                    try:
                        row = next(rows_at, None)
                    finally:
                        bound.disarm(outer)
                    if row is None:
                        return
                    yield row
            finally:  # read to the end, stopped early or refused: the transaction ends here
                with bound.bound(), contextlib.suppress(psycopg.Error):
                    held.close()
        except psycopg.Error as exc:
            raise StorageError(f"history {self.where}: {self._why(exc)}") from None

    def _statement_timeout(self, db: psycopg.Connection[Any], *, on: bool) -> None:
        """The session's statement_timeout: on for every statement, off while a listing
        is read at its reader's pace; set only when it changes (a round trip), and never
        inside a write (its rollback would undo the SET)."""
        from psycopg.pq import TransactionStatus

        if self._timed != on and db.info.transaction_status == TransactionStatus.IDLE:
            db.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_S * 1000 if on else 0}")
            self._timed = on

    @contextmanager
    def _write(self) -> Iterator[psycopg.Cursor[Any]]:
        import psycopg

        try:
            db = self.db()
            with self._deadline.bound():  # the whole write, its commit too
                self._statement_timeout(db, on=True)  # outside: a rollback keeps it
                with db.transaction():
                    cursor = db.cursor()
                    cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", (CHAIN_LOCK,))
                    yield cursor
        except psycopg.errors.LockNotAvailable:
            raise StorageError(
                f"history {self.where}: another session has held the history's chain lock "
                f"for {LOCK_TIMEOUT_S} s (a stuck client, or a lock taken by hand: the owner "
                "finds it in pg_locks)") from None
        except psycopg.Error as exc:
            text = self._why(exc).split(" CONTEXT: ")[0]
            if text.startswith("walletctl policy: "):  # the database refused the movement
                from walletctl.history.policy import PolicyRefusal

                raise PolicyRefusal(
                    f"history {self.where}: {text.removeprefix('walletctl policy: ')} (the "
                    "desk's policy, kept by the database); nothing was sent",
                    hint="`walletctl history policy show` lists the rules") from None
            if text.startswith("walletctl findings: "):  # a finding step refused
                from walletctl.history.findings import FindingError

                raise FindingError(f"history {self.where}: "
                                   f"{text.removeprefix('walletctl findings: ')}") from None
            raise StorageError(f"history {self.where}: {text}", hint=(
                KINDS_HINT if isinstance(exc, psycopg.errors.InsufficientPrivilege)
                else None)) from None

    def shared_locks(self) -> LeaseLocks:
        return self._locks

    @contextmanager
    def listening(self, channel: str) -> Iterator[None]:
        self._listen(f"LISTEN {channel}")
        try:
            yield
        finally:
            with contextlib.suppress(StorageError):
                self._listen("UNLISTEN *")

    def _listen(self, statement: str) -> None:
        import psycopg

        try:
            db = self.db()
            with self._deadline.bound():
                db.execute(statement)
        except psycopg.Error as exc:
            raise StorageError(f"history {self.where}: {self._why(exc)}") from None

    def wait_for_news(self, seconds: float) -> None:
        """Until a NOTIFY on a channel listened to, or ``NEWS_WAIT_S`` (a safety net: the
        caller reads again either way; ``seconds`` is a file's poll). Not bounded by the
        watchdog: waiting is the point; a connection that is cut ends it (StorageError)."""
        import psycopg

        try:
            for _ in self.db().notifies(timeout=NEWS_WAIT_S, stop_after=1):
                pass
        except psycopg.Error as exc:
            raise StorageError(f"history {self.where}: {self._why(exc)}") from None


LEASE_S = 20  # a desk lock not renewed for this long is free (a frozen or cut-off holder)
RENEW_S = 5  # the holder's heartbeat renews its leases this often


class LeaseLocks:
    """The desk's per-order locks: leases in ``walletctl.order_locks`` (V7), one row per
    order held. A lease is taken by one statement when the order is free, its lease has
    expired, or its holder's session has ended (a killed client: free at once); a heartbeat
    thread on a connection of its own renews this process's leases every ``RENEW_S``
    seconds, so a holder that stops answering (frozen, behind a dead proxy) loses them
    within ``LEASE_S`` seconds, whatever the server still thinks of its connection.
    :meth:`confirm` renews one on the command's own connection just before its request is
    sent: a holder that lost its lease sends nothing."""

    def __init__(self, history: PostgresHistory) -> None:
        import uuid

        self._history = history
        self.token = uuid.uuid4().hex
        self._held: set[str] = set()
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()

    @staticmethod
    def digest(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    def try_acquire(self, key: str) -> bool:
        return self.try_acquire_many([key])[0]

    def release(self, key: str) -> None:
        self.release_many([key])

    def try_acquire_many(self, keys: list[str]) -> list[bool]:
        if not keys:
            return []
        digests = [self.digest(key) for key in keys]
        rows = self._history.read(
            "WITH asked AS (SELECT k, n FROM unnest(?::text[]) WITH ORDINALITY AS t(k, n)), "
            "got AS (INSERT INTO walletctl.order_locks AS l (key, token, pid, doing, taken_at,"
            " expires_at) SELECT DISTINCT ON (k) k, ?, pg_backend_pid(), "
            "left(current_setting('application_name'), 100), clock_timestamp(), "
            "clock_timestamp() + make_interval(secs => ?) FROM asked "
            "ON CONFLICT (key) DO UPDATE SET token = excluded.token, pid = excluded.pid, "
            "doing = excluded.doing, taken_at = excluded.taken_at, "
            "expires_at = excluded.expires_at WHERE l.expires_at < clock_timestamp() "
            "OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.pid) "
            "RETURNING l.key) "
            "SELECT a.k IN (SELECT key FROM got) FROM asked a ORDER BY a.n",
            (digests, self.token, LEASE_S))
        got = [bool(row[0]) for row in rows]
        self._held.update(d for d, ok in zip(digests, got, strict=True) if ok)
        if self._held:
            self._start_heartbeat()
        return got

    def release_many(self, keys: list[str]) -> None:
        if not keys:
            return
        digests = [self.digest(key) for key in keys]
        self._held.difference_update(digests)
        with contextlib.suppress(StorageError):  # the lease lapses by itself
            self._history.read_one(
                "WITH gone AS (DELETE FROM walletctl.order_locks WHERE key = ANY(?::text[]) "
                "AND token = ? RETURNING 1) SELECT count(*) FROM gone", (digests, self.token))

    def confirm(self, key: str) -> bool:
        """Renew ``key``'s lease now: False when it is no longer this process's."""
        row = self._history.read_one(
            "WITH kept AS (UPDATE walletctl.order_locks SET expires_at = clock_timestamp() + "
            "make_interval(secs => ?) WHERE key = ? AND token = ? RETURNING 1) "
            "SELECT count(*) FROM kept", (LEASE_S, self.digest(key), self.token))
        return bool(row and row[0])

    def holder(self, key: str) -> str | None:
        """The role holding ``key``, what it said it is doing and since when."""
        try:
            row = self._history.read_one(
                "SELECT held_by, doing FROM walletctl.order_locks WHERE key = ? "
                "AND expires_at >= clock_timestamp()", (self.digest(key),))
        except StorageError:
            return None
        if row is None:
            return None
        role, doing = row
        return f"{role} ({doing})" if doing else str(role)

    def _start_heartbeat(self) -> None:
        if self._beat is None:
            self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                          name="walletctl-lease-heartbeat")
            self._beat.start()

    def _heartbeat(self) -> None:
        """Renew this process's leases every ``RENEW_S`` s on a connection of its own (a
        daemon thread: it ends with the process; a renewal that cannot get through lets
        the leases lapse, which is the point). The connection is made at the first
        renewal: a command done within ``RENEW_S`` never pays for it."""
        import psycopg

        if self._stop.wait(RENEW_S):
            return
        try:
            db = connect(self._history.url, purpose="walletctl lease heartbeat")
        except StorageError:
            return
        with contextlib.closing(db):
            while True:
                if self._held:
                    try:
                        db.execute("UPDATE walletctl.order_locks SET expires_at = "
                                   "clock_timestamp() + make_interval(secs => %s) "
                                   "WHERE token = %s", (LEASE_S, self.token))
                    except psycopg.Error:
                        return
                if self._stop.wait(RENEW_S):
                    return

    def close(self) -> None:
        self._stop.set()


# ---- setup (the database owner's) -------------------------------------------------------
@dataclass(frozen=True)
class SetupResult:
    before: int  # the schema version found (0: none)
    after: int
    applied: tuple[str, ...]  # what each applied migration does
    granted: tuple[str, ...]  # roles granted
    owner: str | None  # the role that ran it (None: a file, which has no roles)


def _value(db: psycopg.Connection[Any], query: str, args: Sequence[Any] = ()) -> Any:
    row = db.execute(query, args).fetchone()
    return row[0] if row else None


def _migrate(db: psycopg.Connection[Any], before: int) -> list[str]:
    """Apply the migrations after version ``before``; what each does."""
    applied: list[str] = []
    for version, what in MIGRATIONS:
        if version <= before:
            continue
        db.execute(migration_sql(version))  # several statements, no parameters
        db.execute("INSERT INTO walletctl.schema_version (version) VALUES (%s)", (version,))
        applied.append(f"{version}: {what}")
    return applied


def _fill_tree(db: psycopg.Connection[Any]) -> None:
    """Add the leaves of the events the Merkle tree does not hold yet (a history written
    before migration 8): the events read through a server-side cursor, the nodes written
    a batch at a time (inside setup's transaction, under the chain's lock)."""
    from walletctl.history.chain import SELECT_EVENTS
    from walletctl.history.tree import fill

    def query(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return db.execute(sql.replace("?", "%s"), args).fetchall()

    def events(after: int) -> Iterator[tuple[Any, ...]]:
        with db.cursor(name="walletctl_tree_fill") as cursor:
            cursor.itersize = 10_000
            cursor.execute(SELECT_EVENTS.replace("?", "%s"), (after,))
            yield from cursor

    def insert(nodes: list[tuple[int, int, bytes]]) -> None:
        with db.cursor() as writer, writer.copy(
                "COPY merkle_nodes (level, idx, hash) FROM STDIN") as out:
            for node in nodes:
                out.write_row(node)

    db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (CHAIN_LOCK,))
    fill(query, insert, events)


def _grant_refusal(db: psycopg.Connection[Any], role: str, owner: str) -> str | None:
    """Why ``role`` may not be granted an operator's rights, if it may not."""
    if role.lower() == "public" or role.startswith("pg_"):
        return ("a built-in role would pass the grant to every role in it; grant each "
                "operator's own LOGIN role")
    found = db.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if found is None:
        return (f"no such role (the database administrator creates it first: CREATE ROLE "
                f"{role} LOGIN)")
    if found[0]:
        return ("a superuser can change anything, the history too; grant operator roles "
                "without superuser")
    if role == owner:
        return ("that is the owner running setup; grant operator roles, which may only "
                "read and append")
    return None


def setup(url: DbUrl, grants: Sequence[str], kind: str = "operator") -> SetupResult:
    """Apply the missing migrations; grant each role of ``grants`` what ``kind``
    (operator, approver or auditor) may do. A role may hold several kinds."""
    import psycopg
    from psycopg import sql

    where = url.display()
    db = connect(url, purpose="walletctl history setup")
    try:
        with db.transaction():
            db.execute("SET LOCAL statement_timeout = 0")  # a migration may take long
            db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (SETUP_LOCK,))
            owner = str(_value(db, "SELECT session_user"))
            exists = _value(db, "SELECT to_regclass('walletctl.schema_version') IS NOT NULL")
            before = int(_value(db, "SELECT coalesce(max(version), 0) FROM "
                                    "walletctl.schema_version") or 0) if exists else 0
            # the schema's owner once it exists, the database's before: nobody else
            keeper, may = db.execute(
                "SELECT r.rolname, pg_has_role(session_user, r.oid, 'USAGE') FROM pg_roles r "
                "WHERE r.oid = COALESCE((SELECT nspowner FROM pg_namespace "
                "WHERE nspname = 'walletctl'), (SELECT datdba FROM pg_database "
                "WHERE datname = current_database()))").fetchone() or (None, False)
            if not may:
                raise StorageError(
                    f"history {where}: setup is the owner's ({keeper}), not {owner}'s: "
                    "operators only read and append")
            if before > LATEST:
                raise StorageError(f"history {where}: its schema is version {before}; this "
                                   f"walletctl knows {LATEST} (upgrade walletctl)")
            applied = _migrate(db, before)
            _fill_tree(db)
            for role in dict.fromkeys(grants):
                if (refused := _grant_refusal(db, role, owner)) is not None:
                    raise StorageError(f"history {where}: --grant {role}: {refused}")
                for grant in GRANTS[kind]:
                    db.execute(sql.SQL(grant).format(role=sql.Identifier(role)))
                db.execute("INSERT INTO walletctl.roles (role, kind) VALUES (%s, %s) "
                           "ON CONFLICT DO NOTHING", (role, kind))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StorageError(
            f"history {where}: {why(exc)} (run setup as the database's owner)") from None
    except psycopg.Error as exc:
        raise StorageError(f"history {where}: {why(exc)}") from None
    finally:
        db.close()
    return SetupResult(before=before, after=max(before, LATEST), applied=tuple(applied),
                       granted=tuple(dict.fromkeys(grants)), owner=owner)
