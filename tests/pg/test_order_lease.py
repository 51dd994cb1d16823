"""The desk's per-order lock is a lease (migration V7): a client that stops answering loses
it, so the next operator proceeds.

alice's walletctl reaches the history through :class:`HoldingProxy`, which freezes the
moment the gateway receives her refund: from then on it forwards nothing either way and
never closes the server's side (its kernel still answers the server's keepalives), so to
the server her sessions look alive for as long as the proxy lives. bob, on his own machine,
refunds the same order at that moment.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from typing import Any

import pytest

from money.conftest import WALLETCTL, Desk, unique
from walletctl.history.postgres import LEASE_S

from .conftest import Team
from .test_bounded_waits import FreezingProxy

NEXT_OPERATOR_WITHIN = 45.0  # seconds from the freeze to bob's refund done


class HoldingProxy(FreezingProxy):
    """A :class:`FreezingProxy` that, once frozen, passes on no close either: the server's
    sockets stay open whatever the client does."""

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                if not self.frozen.is_set():
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_RDWR)
                    dst.close()
                return
            if self.frozen.is_set():
                continue
            try:
                dst.sendall(data)
            except OSError:
                return


@pytest.fixture
def holding(team: Team) -> Any:
    proxy = HoldingProxy((team.cluster.host, team.cluster.port))
    yield proxy
    proxy.close()


def _approved(desk: Desk, ref: str) -> list[dict[str, Any]]:
    return [r for r in desk.followups(ref, "refund") if r.get("state") == "Approved"]


@pytest.mark.slow
def test_a_frozen_client_loses_the_order_within_the_lease(team: Team,
                                                          holding: HoldingProxy) -> None:
    ref = team.desk.sale(unique("LEASE"), "100.00")
    frozen_at: list[float] = []
    bob: list[subprocess.Popen[str]] = []

    def freeze(body: Any) -> Any:  # the gateway has alice's refund: her client freezes
        if not frozen_at:
            holding.freeze()
            frozen_at.append(time.monotonic())
            bob.append(team.bob.popen("refund", ref, "--amount", "7.00", "--yes", "-p",
                                      "desk-b"))
        return body

    team.desk.proxy.rewrite_request(freeze)
    env = {"WALLETCTL_HISTORY_URL":  # alice's history, through the proxy
           f"postgresql://alice@127.0.0.1:{holding.port}/{team.db}",
           "PGPASSWORD": team.cluster.password("alice")}
    alice = subprocess.Popen([*WALLETCTL, "refund", ref, "--amount", "5.00", "--yes", "-p",
                              "desk-a"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True,
                             env={**team.desk.env, **team.alice.env, **env})
    deadline = time.monotonic() + 60
    while not bob and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bob, "alice's refund never reached the gateway"
    threading.Thread(target=alice.communicate, daemon=True).start()  # whenever it ends
    done = Desk.finish(bob[0], ("refund", ref), timeout=120)
    took = time.monotonic() - frozen_at[0]
    print(f"bob's refund after alice froze: exit {done.code} after {took:.1f} s "
          f"(lease {LEASE_S} s)")
    assert done.code == 0, done
    assert took < NEXT_OPERATOR_WITHIN, done
    assert "waiting: alice" in done.stderr, done  # he waited for alice's lease, named
    amounts = sorted(r["transactionAmount"] for r in _approved(team.desk, ref))
    assert amounts == [500, 700], amounts
    alice.kill()  # (it ended on its own bound long ago, or ends now)


def _store(team: Team, role: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory

    monkeypatch.setenv("PGPASSWORD", team.cluster.password(role))
    return PostgresHistory(parse_db_url(team.url(role)), purpose=f"walletctl test {role}")


def test_a_lease_is_one_holders_until_given_back_lapsed_or_its_session_ends(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    from walletctl.errors import HeldError
    from walletctl.history.store import StorageError
    from walletctl.ops.money.lock import Held

    alice, bob = _store(team, "alice", monkeypatch), _store(team, "bob", monkeypatch)
    mine, theirs = alice.shared_locks(), bob.shared_locks()
    key, other = unique("K"), unique("K")
    try:
        assert mine.try_acquire_many([key, other]) == [True, True]
        assert theirs.try_acquire_many([other, key]) == [False, False]
        assert mine.try_acquire(key) is False  # not re-entrant: one holder, once
        assert (theirs.holder(key) or "").startswith("alice (walletctl test alice"), \
            theirs.holder(key)
        mine.release(other)
        assert theirs.try_acquire(other) is True
        theirs.release(other)
        # lapsed (no renewal for the lease's length): the next one takes it, and the
        # holder learns it before sending
        alice.read_one("WITH x AS (UPDATE walletctl.order_locks SET expires_at = "
                       "clock_timestamp() - interval '1 second' WHERE token = ? RETURNING 1)"
                       " SELECT count(*) FROM x", (mine.token,))
        assert theirs.try_acquire(key) is True
        with pytest.raises(HeldError, match="lapsed while this command held it"):
            Held(mine, key, "O-1").confirm()
        Held(theirs, key, "O-1").confirm()  # still theirs: no error
        theirs.release(key)
        # a lease is at most a minute ahead, whoever writes it
        assert mine.try_acquire(other) is True
        with pytest.raises(StorageError, match="a lease lasts at most 60 s"):
            alice.read_one("WITH x AS (UPDATE walletctl.order_locks SET expires_at = "
                           "clock_timestamp() + interval '1 hour' WHERE token = ? "
                           "RETURNING 1) SELECT count(*) FROM x", (mine.token,))
        # the holder's session ends (a killed client): free at once, lease or not
        alice.close()
        deadline = time.monotonic() + 10
        while not theirs.try_acquire(other):
            assert time.monotonic() < deadline, "the ended session's lease was kept"
            time.sleep(0.1)
        theirs.release(other)
    finally:
        alice.close()
        bob.close()
