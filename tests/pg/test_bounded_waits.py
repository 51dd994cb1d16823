"""Bounded waits on a team's shared history: a database that stops answering never hangs a
money command, and never keeps an order locked.

Between alice's walletctl and the PostgreSQL server sits :class:`FreezingProxy`, a TCP
proxy of these tests' own that can be told to freeze: it forwards no more bytes either way
but keeps both sockets open (the kernel still acknowledges what the client sends, so TCP
sees nothing wrong and no timeout of the server's fires). The freeze comes at three moments
of a refund: before walletctl connects, when the gateway is asked for the order (the
lookup: nothing sent yet), and when the gateway receives the refund itself.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

import pytest

from money.conftest import Result, unique
from timescale import scaled
from walletctl.config.dburl import WAITS, parse_db_url
from walletctl.history.postgres import (
    DEADLINE_S,
    IDLE_IN_TRANSACTION_S,
    LOCK_TIMEOUT_S,
    STATEMENT_TIMEOUT_S,
    connect,
)

from .conftest import Team

BOUND = 30.0  # seconds: a stalled database ends a command within this (docs/history.md)
UNKNOWN_WARNING = "it reads unknown until `walletctl history --unknown --reconcile`"


class FreezingProxy:
    """``127.0.0.1:port`` -> ``upstream``, a thread per direction of each connection.

    ``freeze()``: every byte read from then on, either way, is dropped (read, so the
    kernel keeps acknowledging, and a client's close is still seen). A client that closes
    its side gets the upstream side closed too, frozen or not; the upstream closing while
    frozen is not passed on (the client sees nothing at all)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.frozen = threading.Event()
        self.connections = 0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        self.frozen.set()

    def _keep(self, *socks: socket.socket) -> None:
        with self._lock:
            self._sockets.extend(socks)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            self.connections += 1
            self._keep(client, server)
            for src, dst, from_client in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pump, args=(src, dst, from_client),
                                 daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                if from_client or not self.frozen.is_set():
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_RDWR)
                    dst.close()
                return
            if self.frozen.is_set():
                continue  # acknowledged by the kernel, never forwarded
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


@pytest.fixture
def db_proxy(team: Team) -> Any:
    proxy = FreezingProxy((team.cluster.host, team.cluster.port))
    yield proxy
    proxy.close()


def _through(team: Team, proxy: FreezingProxy) -> dict[str, str]:
    """alice's environment with her history reached through ``proxy`` (her ~/.pgpass names
    the server's own port, so the password comes from PGPASSWORD, as libpq allows)."""
    return {"WALLETCTL_HISTORY_URL": f"postgresql://alice@127.0.0.1:{proxy.port}/{team.db}",
            "PGPASSWORD": team.cluster.password("alice")}


def _timed_refund(team: Team, env: dict[str, str], ref: str, amount: str,
                  expect: int | tuple[int, ...]) -> tuple[Result, float]:
    began = time.monotonic()
    result = team.alice.run("refund", ref, "--amount", amount, "--yes", "-p", "desk-a",
                            env=env, expect=expect, timeout=120)
    return result, time.monotonic() - began


def _approved(team: Team, ref: str) -> list[dict[str, Any]]:
    return [r for r in team.desk.followups(ref, "refund") if r.get("state") == "Approved"]


def test_every_connection_carries_the_bounds(team: Team,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", team.cluster.password("alice"))
    url = parse_db_url(f"{team.url('alice')}?keepalives_idle=30&tcp_user_timeout=20000")
    with connect(url) as db:
        shown = {name: db.execute(f"SHOW {name}").fetchone() for name in (
            "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
            "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")}
        params = db.info.get_parameters()
    assert {k: v[0] if v else None for k, v in shown.items()} == {
        "statement_timeout": f"{STATEMENT_TIMEOUT_S}s", "lock_timeout": f"{LOCK_TIMEOUT_S}s",
        "idle_in_transaction_session_timeout": f"{IDLE_IN_TRANSACTION_S}s",
        "tcp_keepalives_idle": "30", "tcp_keepalives_interval": "5",
        "tcp_keepalives_count": "3"}
    assert (params["connect_timeout"], params["keepalives"], params["keepalives_idle"],
            params["keepalives_interval"], params["keepalives_count"],
            params["tcp_user_timeout"]) == ("5", "1", "30", "5", "3", "20000")
    # the server's own timeout speaks first; a connect at its limit, then a call at the
    # deadline, still end within the bound
    assert STATEMENT_TIMEOUT_S < DEADLINE_S
    assert WAITS["connect_timeout"][0] + DEADLINE_S < BOUND - 5


@pytest.mark.slow
@pytest.mark.parametrize("when", ["connect", "lookup"])
def test_a_frozen_database_before_the_send_is_exit_3_and_nothing_sent(
        team: Team, db_proxy: FreezingProxy, when: str) -> None:
    ref = team.desk.sale(unique("ORD"))
    posts_before = len(team.desk.proxy.posts())
    if when == "connect":
        db_proxy.freeze()
    else:  # walletctl is connected and holds the order when the gateway is asked for it

        def freeze(found: Any) -> Any:
            db_proxy.freeze()
            return found

        team.desk.proxy.rewrite_lookup(freeze)
    refused, took = _timed_refund(team, _through(team, db_proxy), ref, "5.00", expect=3)
    print(f"frozen at {when}: exit {refused.code} after {took:.1f} s")
    assert took < scaled(BOUND), refused
    assert db_proxy.connections >= 1
    first = refused.stderr.strip().splitlines()[0]
    assert f"postgresql://alice@127.0.0.1:{db_proxy.port}/{team.db}" in first, refused
    if when == "connect":  # libpq's connect_timeout
        assert "nothing was sent" in first, refused
    else:  # the client's own deadline
        assert f"no answer from the database server within {DEADLINE_S} s" in first, refused
    assert len(team.desk.proxy.posts()) == posts_before
    assert _approved(team, ref) == []


@pytest.mark.slow
@pytest.mark.parametrize(("answer", "code"), [("approved", 0), ("dropped", 8)])
def test_a_frozen_database_after_the_send_leaves_an_unknown_entry_and_frees_the_order(
        team: Team, db_proxy: FreezingProxy, answer: str, code: int) -> None:
    """The gateway receives the refund and the database freezes at that moment: the
    intent is recorded, the money moves (its answer arrives, or is lost on the way), and
    the completion cannot be written. The command ends within the bound with the documented
    warning; bob's refund on the same order then goes through (no lock left behind)."""
    ref = team.desk.sale(unique("ORD"))

    def freeze(body: Any) -> Any:
        db_proxy.freeze()
        return body

    team.desk.proxy.rewrite_request(freeze)
    if answer == "dropped":
        team.desk.proxy.drop_after_forward()
    sent, took = _timed_refund(team, _through(team, db_proxy), ref, "5.00", expect=code)
    print(f"frozen at the send ({answer}): exit {sent.code} after {took:.1f} s")
    assert took < scaled(BOUND), sent
    assert "warning: could not record the outcome of entry #1" in sent.stderr, sent
    assert f"no answer from the database server within {DEADLINE_S} s" in sent.stderr, sent
    assert UNKNOWN_WARNING in sent.stderr, sent
    assert len(_approved(team, ref)) == 1  # the money moved
    team.desk.proxy.clear()
    entries = team.bob.run("-o", "json", "history", "--ref", ref, expect=0).json()
    assert [(e["operator"], e["outcome"]) for e in entries] == [("alice", "unknown")]

    began = time.monotonic()
    bob = team.bob.run("refund", ref, "--amount", "7.00", "--yes", "-p", "desk-a",
                       expect=0, timeout=120)
    bob_took = time.monotonic() - began
    print(f"bob's refund on the same order: exit {bob.code} after {bob_took:.1f} s")
    assert bob_took < scaled(BOUND), bob
    assert len(_approved(team, ref)) == 2, team.desk.followups(ref, "refund")
    entries = team.bob.run("-o", "json", "history", "--ref", ref, expect=0).json()
    # bob's command settled alice's unknown entry from the gateway's record first
    assert [(e["operator"], e["outcome"]) for e in entries] == [
        ("alice", "approved"), ("bob", "approved")]


def test_a_listing_read_slowly_outlives_the_statement_timeout(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    """A history read row by row at the reader's pace (``history | less``) is not one
    statement's time: only each wait for the server is bounded. The reader pauses past the
    statement timeout and the idle-in-transaction one (the listing is a cursor's read-only
    transaction), and both are back for the next statement."""
    from walletctl.history.postgres import PostgresHistory

    monkeypatch.setenv("PGPASSWORD", team.cluster.password("alice"))
    store = PostgresHistory(parse_db_url(team.url("alice")))
    try:
        rows = store.read("SELECT g, repeat('x', 1000) FROM generate_series(1, 20000) g",
                          stream=True)
        assert next(rows)[0] == 1
        time.sleep(STATEMENT_TIMEOUT_S + 1)
        assert sum(1 for _ in rows) == 19999
        # and the next statement is bounded again
        assert store.read_one("SHOW statement_timeout") == (f"{STATEMENT_TIMEOUT_S}s",)
        assert store.read_one("SHOW idle_in_transaction_session_timeout") == (
            f"{IDLE_IN_TRANSACTION_S}s",)
    finally:
        store.close()


def test_a_listing_the_server_refuses_leaves_no_transaction_open(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing refused when its cursor is declared (a table this role may not read, a
    mistake) ends its read-only transaction: the session's next statement and the next
    listing run as if it had never been asked."""
    from walletctl.history.postgres import PostgresHistory
    from walletctl.history.store import StorageError

    monkeypatch.setenv("PGPASSWORD", team.cluster.password("alice"))
    store = PostgresHistory(parse_db_url(team.url("alice")))
    try:
        refused = store.read("SELECT * FROM no_such_table", stream=True)
        with pytest.raises(StorageError, match="no_such_table") as refusal:
            next(refused)
        # ended by the read itself, while its error (and the frame it holds) is still alive:
        # not later, by the garbage collector freeing what the read left open
        assert store.db().info.transaction_status.name == "IDLE", refusal.value
        assert store.read_one("SELECT 1") == (1,)
        assert [row[0] for row in store.read("SELECT generate_series(1, 3)", stream=True)] \
            == [1, 2, 3]
    finally:
        store.close()


def test_a_freeze_inside_a_write_after_a_read_in_it_is_still_bounded(
        team: Team, db_proxy: FreezingProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read inside a write (the store looks up what an entry already records) keeps the
    write's deadline: a server frozen after it does not hang the rest of the write."""
    from walletctl.history.postgres import PostgresHistory
    from walletctl.history.store import StorageError

    monkeypatch.setenv("PGPASSWORD", team.cluster.password("alice"))
    store = PostgresHistory(parse_db_url(
        f"postgresql://alice@127.0.0.1:{db_proxy.port}/{team.db}"))
    store._deadline.seconds = 2  # the test's own, short deadline

    def write_through_a_freeze() -> None:
        with store._write() as db:
            assert store.read_one("SELECT 1") == (1,)
            db_proxy.freeze()
            db.execute("SELECT 2")

    began = time.monotonic()
    try:
        with pytest.raises(StorageError, match="no answer from the database server"):
            write_through_a_freeze()
    finally:
        store.close()
    assert time.monotonic() - began < scaled(10)
