"""Group commit (ops/batch/runner.py): what must be on disk before a request leaves still is.

From the outside: a plain ``http.server`` gateway that, the moment each capture POST
arrives, opens the batch journal and the history file itself (its own SQLite connections,
read-only) and checks that this very row is already ``sent`` in the journal and has its
history entry. Then the unit contract of ``GroupCommit`` itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import http_gateway, write_profile

from cli_runner import run_walletctl
from walletctl.ops.batch.runner import GroupCommit


class _Gateway(BaseHTTPRequestHandler):
    journal: Path
    history: Path
    seen: list[tuple[str, str | None, int]]  # (new ref, journal state, history begins)
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ref = body["clientSystemTransactionId"]
        with sqlite3.connect(f"file:{self.journal}?mode=ro", uri=True) as jdb:
            found = jdb.execute("SELECT state FROM rows WHERE new_ref=?", (ref,)).fetchone()
        with sqlite3.connect(f"file:{self.history}?mode=ro", uri=True) as hdb:
            (begins,) = hdb.execute(
                "SELECT count(*) FROM events WHERE kind='begin' AND new_ref=?", (ref,)
            ).fetchone()
        self.seen.append((ref, found[0] if found else None, int(begins)))
        answer = json.dumps({
            "id": f"T-{ref}", "state": "Approved", "providerStateCode": "CapturedByProvider",
            "clientSystemTransactionId": ref,
            "clientSystemInvoiceId": body["clientSystemInvoiceId"],
            "amount": body["amount"], "currencyCode": body["currencyCode"],
            "type": body["type"],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[str, type[_Gateway]]]:
    handler = type("Gateway", (_Gateway,), {
        "journal": tmp_path / "rows.csv.capture.journal",
        "history": tmp_path / "audit.sqlite3",
        "seen": [],
    })
    with http_gateway(handler) as url:
        yield url, handler


def test_each_row_is_sent_in_the_journal_and_begun_in_history_before_it_arrives(
    tmp_path: Path, gateway: tuple[str, type[_Gateway]]
) -> None:
    url, handler = gateway
    cfg = write_profile(tmp_path, url)
    src = tmp_path / "rows.csv"
    src.write_text("ref,amount,currency\n" + "".join(f"GC-{i:03d},1.00,EUR\n" for i in range(60)))
    env = dict(os.environ, NO_COLOR="1", WALLETCTL_AUDIT_LOG=str(handler.history))
    done = run_walletctl(["--config", str(cfg), "-o", "json", "capture", "--batch", str(src),
                          "--concurrency", "16"], env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["confirmed"] == 60
    assert len(handler.seen) == 60, handler.seen
    late = [s for s in handler.seen if s[1] != "sent" or s[2] != 1]
    assert not late, f"arrived before its journal/history write was committed: {late}"


def still_clock() -> float:
    """A clock that never moves: these tests group by the loop's turn alone (the real clock,
    with ``max_wait`` 1 ms, split a turn in two on a loaded machine); ``max_wait`` has a test
    of its own, with a clock it moves."""
    return 0.0


def test_one_write_per_loop_turn_and_every_waiter_sees_its_outcome() -> None:
    writes: list[list[int]] = []

    async def main() -> None:
        commit = GroupCommit(writes.append, clock=still_clock)
        await asyncio.gather(*(commit(i) for i in range(5)))  # all in one turn
        await commit(5)

    asyncio.run(main())
    assert writes == [[0, 1, 2, 3, 4], [5]]


def test_a_failed_write_fails_every_waiter_and_the_next_group_starts_clean() -> None:
    calls: list[list[str]] = []

    def write(items: list[str]) -> None:
        calls.append(items)
        if "bad" in items:
            raise sqlite3.OperationalError("disk I/O error")

    async def main() -> None:
        commit = GroupCommit(write, clock=still_clock)
        results = await asyncio.gather(commit("a"), commit("bad"), return_exceptions=True)
        assert all(isinstance(r, sqlite3.OperationalError) for r in results), results
        await commit("c")  # a later group is written normally

    asyncio.run(main())
    assert calls == [["a", "bad"], ["c"]]


def test_a_cancelled_waiter_does_not_cancel_the_others_write() -> None:
    writes: list[list[str]] = []

    async def main() -> None:
        commit = GroupCommit(writes.append, clock=still_clock)
        first = asyncio.ensure_future(commit("a"))
        second = asyncio.ensure_future(commit("b"))
        await asyncio.sleep(0)  # both have added themselves; the write is scheduled
        first.cancel()
        await second  # still completes: its row is on disk before it goes on
        with pytest.raises(asyncio.CancelledError):
            await first

    asyncio.run(main())
    assert writes == [["a", "b"]]


def test_a_long_turn_writes_its_group_once_the_first_row_waited_max_wait() -> None:
    """Many answers in one turn: once the group's first row has waited ``max_wait``, the row
    that notices writes the group (itself included) at once; the rest of the turn forms the
    next group. No row is left out and none is written twice."""
    writes: list[list[int]] = []
    now = [0.0]

    async def main() -> None:
        commit = GroupCommit(writes.append, max_wait=0.001, clock=lambda: now[0])

        async def row(i: int) -> None:
            now[0] += 0.0004  # each row's own work before it commits
            await commit(i)

        await asyncio.gather(*(row(i) for i in range(7)))

    asyncio.run(main())
    assert writes == [[0, 1, 2, 3], [4, 5, 6]], writes
