"""``approvals --watch`` on the team's history: bob sees alice's request the moment it is
filed (the database's NOTIFY, migration V7), and Ctrl-C ends his watch with 130."""

from __future__ import annotations

import time

from money.conftest import unique
from money.watching import INTERRUPTED, Watcher

from .conftest import Team
from .test_approvals import with_approvals

SHOWN_WITHIN = 2.0  # seconds from the filing to bob's line (generous: NOTIFY is at commit)


def test_bob_sees_each_request_as_alice_files_it(team: Team) -> None:
    with_approvals(team.alice, refund="100.00")
    watcher = Watcher(("-o", "table", "-p", "desk-a"), {**team.desk.env, **team.bob.env})
    try:
        watcher.ready()
        for amount in ("150.00", "175.00"):
            ref = team.desk.sale(unique("WATCH"), "300.00")
            filed = team.alice.run("-o", "json", "refund", ref, "--amount", amount,
                                   "--reason", "damaged", "--yes", "-p", "desk-a", expect=12)
            at = time.monotonic()
            number = filed.json()["approval"]["id"]
            when, line = watcher.next_line()
            assert line.startswith(f"#{number} pending: refund of {amount} EUR on {ref}"), line
            assert "by alice" in line, line
            assert when - at < SHOWN_WITHIN, (when - at, line)
        assert watcher.interrupt() == INTERRUPTED, watcher.errors
    finally:
        watcher.stop()
