"""Fixtures for tests against a real PostgreSQL server (marker ``postgres``).

Each test session (each xdist worker) starts, when a test first asks for it, a throwaway
PostgreSQL cluster of its own on 127.0.0.1 and a random port: ``initdb`` and ``pg_ctl`` from
PATH or the newest ``/usr/lib/postgresql/*/bin``, passwords checked with SCRAM-SHA-256. The
tests are skipped when the server is not installed (CI installs Debian's ``postgresql``).

``pg_cluster`` (session) -> :class:`PgCluster`
    Superuser ``walletctl_admin``; the desk's owner ``desk_owner`` and two operators ``alice``
    and ``bob`` (LOGIN, no other rights), each with a random password; database ``desk``
    owned by ``desk_owner``. ``url(role, db)`` never contains a password: a test hands a role
    its password the way a user would, through ``write_pgpass``/``env_for`` (a ~/.pgpass in a
    HOME of its own), or ``connect(role, db)`` for the test's own checks.
``pg_desk`` (function) -> :class:`PgDesk`
    A fresh, empty database ``desk_<uuid8>`` owned by ``desk_owner`` on the session's cluster,
    dropped after the test; ``url(role)``/``connect(role)`` are bound to it.
``pg_private`` (function) -> :class:`PgCluster`
    A cluster of the test's own (same roles and ``desk``), for tests that stop or kill the
    server; removed after the test.

As root (CI), ``initdb`` and the server run as the ``postgres`` system user (``nobody`` if
there is none): PostgreSQL refuses to run as root. The cluster's directory is made with
``tempfile.mkdtemp`` directly under /tmp, since pytest's 0700 directories are not traversable
by that user: ``/tmp/walletctl-pg-XXXX/`` holds ``data/`` (PGDATA), ``server.log`` and the
Unix socket.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # psycopg is imported only when a test uses the fixtures
    import psycopg
    from psycopg.rows import TupleRow

NOT_INSTALLED = "PostgreSQL server (initdb, pg_ctl) not installed: apt-get install postgresql"
SUPERUSER = "walletctl_admin"
OWNER = "desk_owner"
OPERATORS = ("alice", "bob", "carol")  # carol: an auditor, in the tests that grant her
DESK = "desk"
HOST = "127.0.0.1"
PG_FIXTURES = ("pg_cluster", "pg_desk", "pg_private")
_TOOLS = ("initdb", "pg_ctl", "postgres")
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "postgres: needs a real PostgreSQL server started by the tests")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses one of the fixtures is a ``postgres`` test (``-m 'not postgres'``)."""
    for item in items:
        if any(name in PG_FIXTURES for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)


def _version_key(bindir: str) -> tuple[int, ...]:
    version = Path(bindir).parent.name  # /usr/lib/postgresql/<version>/bin
    return tuple(int(part) for part in re.findall(r"\d+", version)) or (0,)


def find_pg_bin() -> Path | None:
    """The directory holding initdb, pg_ctl and postgres: PATH's, else the newest Debian one."""
    candidates: list[str] = []
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(os.path.dirname(os.path.realpath(on_path)))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for directory in candidates:
        if all(os.access(os.path.join(directory, tool), os.X_OK) for tool in _TOOLS):
            return Path(directory)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _run_as() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when we are root; None: run it as ourselves."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise RuntimeError("running as root and there is neither a 'postgres' nor a 'nobody' user")


class PgStartError(RuntimeError):
    """The server did not start; the message ends with the tail of its log."""


class PgCluster:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (see the module's docstring).

    ``start()`` makes the cluster the first time (initdb, roles, database ``desk``) and starts
    it again on the same port after ``stop()``/``kill()``; ``cleanup()`` stops it and removes
    every file. Passwords are random per cluster and never appear in a URL.
    """

    host = HOST
    superuser = SUPERUSER
    owner = OWNER
    operators = OPERATORS

    def __init__(self, bindir: Path | None = None) -> None:
        found = bindir or find_pg_bin()
        if found is None:
            raise FileNotFoundError(NOT_INSTALLED)
        self.bindir = found
        self.port = 0
        self.base: Path | None = None
        self._passwords = {role: secrets.token_urlsafe(24)
                           for role in (SUPERUSER, OWNER, *OPERATORS)}
        self._user = _run_as()
        self._running = False
        self._cleaned = False
        self.start_seconds = 0.0  # the first start: initdb, server start, roles and `desk`

    # -- paths ---------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self._base() / "data"

    @property
    def logfile(self) -> Path:
        return self._base() / "server.log"

    def _base(self) -> Path:
        if self.base is None:
            raise RuntimeError("the cluster has not been created (call start())")
        return self.base

    # -- processes -----------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", HOME=str(self._base()))
        return env

    def _run(self, tool: str, *args: str, timeout: float = 120,
             ) -> subprocess.CompletedProcess[str]:
        uid, gid = self._user or (None, None)
        return subprocess.run(
            [str(self.bindir / tool), *args], cwd=self._base(), env=self._env(),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
            check=False, start_new_session=True,
            user=uid, group=gid, extra_groups=None if uid is None else [],
        )

    def _give(self, path: Path) -> None:
        if self._user is not None:
            os.chown(path, *self._user)

    def _log_tail(self, lines: int = 40) -> str:
        try:
            text = self.logfile.read_text(errors="replace")
        except OSError as exc:
            return f"(no server log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    # -- life cycle ----------------------------------------------------------------------
    def _initdb(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="walletctl-pg-", dir="/tmp"))
        self._give(self.base)
        pwfile = self.base / "pwfile"
        pwfile.write_text(self._passwords[SUPERUSER] + "\n")
        pwfile.chmod(0o600)
        self._give(pwfile)
        try:
            done = self._run("initdb", "-D", str(self.datadir), "--auth=scram-sha-256",
                             f"--pwfile={pwfile}", "-U", SUPERUSER, "-E", "UTF8", "--no-locale",
                             "--no-sync", "--no-instructions")
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            raise PgStartError(f"initdb failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        with (self.datadir / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n# walletctl tests (tests/pg_fixtures.py)\n"
                f"listen_addresses = '{HOST}'\n"
                f"unix_socket_directories = '{self.base}'\n"
                "password_encryption = 'scram-sha-256'\n"
                "max_connections = 100\n"
                "shared_buffers = 32MB\n"
                "fsync = off\n"
                "full_page_writes = off\n"
            )

    def _pg_ctl_start(self) -> subprocess.CompletedProcess[str]:
        return self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.datadir),
                         "-l", str(self.logfile), "-o", f"-p {self.port}", timeout=90)

    def start(self) -> None:
        """Create the cluster (first call) or start it again on the same port."""
        if self._cleaned:
            raise RuntimeError("the cluster was cleaned up")
        if self._running:
            return
        began = time.monotonic()
        first = self.base is None
        if first:
            self._initdb()
        for attempt in range(5):
            if first:
                self.port = _free_port()  # another process may take it before the server
            done = self._pg_ctl_start()
            if done.returncode == 0:
                break
            busy = "could not bind" in self._log_tail() or "already in use" in self._log_tail()
            if not (first and busy and attempt < 4):
                raise PgStartError(
                    f"pg_ctl start failed ({done.returncode}) on port {self.port}:\n"
                    f"{done.stdout}{done.stderr}\n--- {self.logfile} (tail) ---\n"
                    f"{self._log_tail()}")
        self._running = True
        if first:
            self._bootstrap()
            self.start_seconds = time.monotonic() - began

    def _bootstrap(self) -> None:
        from psycopg import sql

        with self.connect(SUPERUSER, "postgres") as conn:
            conn.execute(sql.SQL(
                "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
                    sql.Identifier(OWNER), sql.Literal(self._passwords[OWNER])))
            for role in OPERATORS:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(self._passwords[role])))
        self.new_database(DESK)

    def _stop(self, mode: str) -> bool:
        if self.base is None or not (self.datadir / "postmaster.pid").exists():
            self._running = False
            return True
        try:
            done = self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", mode,
                             "-D", str(self.datadir), timeout=45)
        except subprocess.TimeoutExpired:
            return False
        stopped = done.returncode == 0 or not (self.datadir / "postmaster.pid").exists()
        if stopped:
            self._running = False
        return stopped

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m MODE``; raises if the server did not stop."""
        if not self._stop(mode):
            raise RuntimeError(f"pg_ctl stop -m {mode} failed:\n{self._log_tail()}")

    def kill(self) -> None:
        """Stop the server as a crash would (``-m immediate``: no shutdown checkpoint)."""
        self.stop("immediate")

    def _sigkill_postmaster(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((self.datadir / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                os.kill(pid, 0)  # raises once it is gone
                time.sleep(0.05)

    def cleanup(self) -> None:
        """Stop the server (fast, else immediate, else SIGKILL) and remove all its files."""
        if self._cleaned:
            return
        self._cleaned = True
        if self.base is None:
            return
        if not self._stop("fast") and not self._stop("immediate"):
            self._sigkill_postmaster()
        self._running = False
        shutil.rmtree(self.base, ignore_errors=True)

    # -- for the tests -------------------------------------------------------------------
    def password(self, role: str) -> str:
        return self._passwords[role]

    def url(self, role: str, db: str = DESK) -> str:
        """``postgresql://ROLE@127.0.0.1:PORT/DB``: never a password."""
        return f"postgresql://{role}@{HOST}:{self.port}/{db}"

    def connect(self, role: str, db: str = DESK) -> psycopg.Connection[TupleRow]:
        import psycopg

        return psycopg.connect(host=HOST, port=self.port, user=role, dbname=db,
                               password=self._passwords[role], autocommit=True,
                               connect_timeout=10)

    def write_pgpass(self, home: Path, role: str) -> Path:
        """``home/.pgpass`` (0600) with the role's password for this server (any database)."""
        home.mkdir(parents=True, exist_ok=True)
        secret = self._passwords[role].replace("\\", "\\\\").replace(":", "\\:")
        pgpass = home / ".pgpass"
        fd = os.open(pgpass, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"{HOST}:{self.port}:*:{role}:{secret}\n")
        pgpass.chmod(0o600)
        return pgpass

    def env_for(self, role: str, home: Path) -> dict[str, str]:
        """Environment entries for a process that is ``role`` through a ~/.pgpass in ``home``.

        HOME alone is enough for libpq 15+ (psycopg-binary's bundled libpq and Debian 12's
        libpq5 15 both find ``$HOME/.pgpass``), but older libpq took ``~`` from the password
        database (getpwuid), so PGPASSFILE names the file too.
        """
        pgpass = self.write_pgpass(home, role)
        return {"HOME": str(home), "PGPASSFILE": str(pgpass)}

    def new_database(self, name: str) -> str:
        """``CREATE DATABASE name OWNER desk_owner`` (nobody but the owner may create in it)."""
        from psycopg import sql

        if not _NAME.fullmatch(name):
            raise ValueError(f"not a plain database name: {name!r}")
        with self.connect(SUPERUSER, "postgres") as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(OWNER)))
            version = conn.info.server_version
        if version < 150000:  # PostgreSQL 15 revokes it already
            with self.connect(SUPERUSER, name) as conn:
                conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        return name

    def drop_database(self, name: str) -> None:
        from psycopg import sql

        with self.connect(SUPERUSER, "postgres") as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


@dataclass(frozen=True)
class PgDesk:
    """A test's own database on the session's cluster."""

    cluster: PgCluster
    db: str

    def url(self, role: str) -> str:
        return self.cluster.url(role, self.db)

    def connect(self, role: str) -> psycopg.Connection[TupleRow]:
        return self.cluster.connect(role, self.db)


@contextlib.contextmanager
def _started_cluster() -> Iterator[PgCluster]:
    bindir = find_pg_bin()
    if bindir is None:
        pytest.skip(NOT_INSTALLED)
    cluster = PgCluster(bindir)
    atexit.register(cluster.cleanup)  # should the teardown below never run
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.cleanup()
        atexit.unregister(cluster.cleanup)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    with _started_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_desk(pg_cluster: PgCluster) -> Iterator[PgDesk]:
    db = pg_cluster.new_database(f"desk_{uuid.uuid4().hex[:8]}")
    try:
        yield PgDesk(pg_cluster, db)
    finally:
        with contextlib.suppress(Exception):
            pg_cluster.drop_database(db)


@pytest.fixture
def pg_private() -> Iterator[PgCluster]:
    with _started_cluster() as cluster:
        yield cluster
