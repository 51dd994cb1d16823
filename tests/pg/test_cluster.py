"""The PostgreSQL fixtures are a real server (tests/pg_fixtures.py): passwords checked with
SCRAM, found by libpq in a ~/.pgpass of the role's own, on 127.0.0.1 only, one empty database
per test, and a private cluster that can be stopped and crashed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pg_fixtures import PG_FIXTURES, PgCluster, PgDesk

# Connects with nothing but the URL: the password can only come from libpq's password file.
WHO_AM_I = (
    "import sys, psycopg\n"
    "with psycopg.connect(sys.argv[1], connect_timeout=10) as conn:\n"
    "    print(conn.execute('SELECT session_user, current_database()').fetchone())\n"
)


def _env_without_pg() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _who_am_i(url: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WHO_AM_I, url], env=env, capture_output=True,
                          text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture
def no_password_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process has no password for libpq: an empty HOME, no PGPASSWORD/PGPASSFILE."""
    home = tmp_path / "nobody-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE", "PGUSER"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_alice_connects_with_a_pgpass_in_her_own_home(pg_desk: PgDesk, tmp_path: Path) -> None:
    url = pg_desk.url("alice")
    assert url == f"postgresql://alice@127.0.0.1:{pg_desk.cluster.port}/{pg_desk.db}"
    env = {**_env_without_pg(), **pg_desk.cluster.env_for("alice", tmp_path / "alice")}
    pgpass = Path(env["PGPASSFILE"])
    assert pgpass == tmp_path / "alice" / ".pgpass"
    assert pgpass.stat().st_mode & 0o777 == 0o600
    done = _who_am_i(url, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(("alice", pg_desk.db))


@pytest.mark.skipif(psycopg.pq.version() < 150000, reason="libpq < 15 reads ~ from getpwuid")
def test_libpq_finds_the_pgpass_under_home(pg_cluster: PgCluster, tmp_path: Path) -> None:
    """HOME alone is enough for this libpq: no PGPASSFILE, the process's user's own home
    directory (root's, in CI) has no .pgpass for this server."""
    home = tmp_path / "bob"
    pg_cluster.write_pgpass(home, "bob")
    done = _who_am_i(pg_cluster.url("bob"), {**_env_without_pg(), "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(("bob", "desk"))


def test_no_password_file_no_connection(pg_desk: PgDesk, no_password_env: Path) -> None:
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(pg_desk.url("alice"), connect_timeout=10)


def test_another_roles_pgpass_does_not_let_alice_in(pg_desk: PgDesk, tmp_path: Path) -> None:
    env = {**_env_without_pg(), **pg_desk.cluster.env_for("bob", tmp_path / "home")}
    done = _who_am_i(pg_desk.url("alice"), env)
    assert done.returncode != 0
    assert "password" in done.stderr, done.stderr


def test_a_wrong_password_is_refused(pg_desk: PgDesk, no_password_env: Path) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg_desk.url("alice"), password=pg_desk.cluster.password("bob"),
                        connect_timeout=10)


def test_urls_never_carry_a_password(pg_cluster: PgCluster) -> None:
    for role in (pg_cluster.superuser, pg_cluster.owner, *pg_cluster.operators):
        url = pg_cluster.url(role)
        assert pg_cluster.password(role) not in url
        assert url == f"postgresql://{role}@127.0.0.1:{pg_cluster.port}/desk"
    assert len({pg_cluster.password(role) for role in ("desk_owner", "alice", "bob")}) == 3


def test_passwords_are_scram(pg_cluster: PgCluster) -> None:
    with pg_cluster.connect(pg_cluster.superuser, "postgres") as conn:
        rows = conn.execute(
            "SELECT rolname, rolpassword LIKE 'SCRAM-SHA-256$%', rolsuper, rolcreatedb,"
            " rolcreaterole, rolcanlogin FROM pg_authid"
            " WHERE rolname IN ('desk_owner', 'alice', 'bob') ORDER BY rolname").fetchall()
        methods = conn.execute(
            "SELECT DISTINCT auth_method FROM pg_hba_file_rules").fetchall()
        encryption = conn.execute("SHOW password_encryption").fetchone()
    assert rows == [(role, True, False, False, False, True)
                    for role in ("alice", "bob", "desk_owner")]
    assert methods == [("scram-sha-256",)]
    assert encryption == ("scram-sha-256",)


def _listening(port: int) -> list[tuple[str, str]]:
    """(table, local address) of every listening TCP socket on ``port`` (Linux /proc)."""
    found = []
    for table in ("tcp", "tcp6"):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append((table, address))
    return found


def test_the_server_listens_on_loopback_only(pg_cluster: PgCluster) -> None:
    with pg_cluster.connect("alice") as conn:
        listen = conn.execute("SHOW listen_addresses").fetchone()
        server = conn.execute("SELECT host(inet_server_addr())").fetchone()
    assert listen == ("127.0.0.1",)
    assert server == ("127.0.0.1",)
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp to list the listening sockets")
    assert _listening(pg_cluster.port) == [("tcp", "0100007F")]  # 127.0.0.1, no IPv6


def test_the_desk_belongs_to_its_owner(pg_cluster: PgCluster) -> None:
    with pg_cluster.connect("alice") as conn:
        owner = conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database"
                             " WHERE datname = current_database()").fetchone()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE public.not_yours (id int)")
    assert owner == ("desk_owner",)


@pytest.mark.parametrize("turn", [1, 2, 3])
def test_each_test_gets_a_fresh_empty_database(pg_desk: PgDesk, turn: int) -> None:
    assert pg_desk.db.startswith("desk_")
    assert len(pg_desk.db) == len("desk_") + 8
    with pg_desk.connect("desk_owner") as conn:
        tables = conn.execute("SELECT count(*) FROM pg_class c JOIN pg_namespace n"
                              " ON n.oid = c.relnamespace WHERE n.nspname = 'public'").fetchone()
        assert tables == (0,)
        # the same name in every turn: it would already exist if the database were shared
        conn.execute("CREATE TABLE public.mine (turn int)")
        conn.execute("INSERT INTO public.mine VALUES (%s)", (turn,))
        databases = conn.execute("SELECT datname FROM pg_database"
                                 " WHERE datname ~ '^desk_[0-9a-f]{8}$' AND datname <> %s",
                                 (pg_desk.db,)).fetchall()
    assert databases == []  # the earlier tests' databases were dropped


def test_the_fixtures_mark_their_tests(request: pytest.FixtureRequest, pg_desk: PgDesk) -> None:
    assert request.node.get_closest_marker("postgres") is not None
    assert set(PG_FIXTURES) == {"pg_cluster", "pg_desk", "pg_private"}


def test_a_private_cluster_survives_stop_and_crash(pg_private: PgCluster) -> None:
    port = pg_private.port
    with pg_private.connect("desk_owner") as conn:
        conn.execute("CREATE TABLE public.ledger (id int PRIMARY KEY)")
        conn.execute("INSERT INTO public.ledger VALUES (1)")
    pg_private.kill()  # -m immediate: no shutdown checkpoint; committed rows are in the WAL
    with pytest.raises(psycopg.OperationalError):
        pg_private.connect("desk_owner")
    pg_private.start()
    assert pg_private.port == port
    with pg_private.connect("desk_owner") as conn:
        conn.execute("INSERT INTO public.ledger VALUES (2)")
    pg_private.stop()
    pg_private.start()
    with (pg_private.connect("alice") as conn,
          pytest.raises(psycopg.errors.InsufficientPrivilege)):
        conn.execute("SELECT id FROM public.ledger")
    with pg_private.connect("desk_owner") as conn:
        rows = conn.execute("SELECT id FROM public.ledger ORDER BY id").fetchall()
    assert rows == [(1,), (2,)]


def test_a_cluster_is_removed_by_cleanup(pg_cluster: PgCluster) -> None:
    cluster = PgCluster(pg_cluster.bindir)
    try:
        cluster.start()
        base = cluster.base
        assert base is not None
        assert base.parent == Path("/tmp")
        assert base.name.startswith("walletctl-pg-")
        assert (cluster.datadir / "postmaster.pid").exists()
        assert cluster.logfile.exists()
        assert not (base / "pwfile").exists()  # the superuser's password file is gone
    finally:
        cluster.cleanup()
    assert not base.exists()
