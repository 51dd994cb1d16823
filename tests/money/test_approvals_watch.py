"""``approvals --watch`` on a history file: each request filed shows as one line with its
id within the poll, and Ctrl-C ends it with 130 (real processes)."""

from __future__ import annotations

import time
import tomllib
from pathlib import Path

import tomli_w

from .conftest import Desk, unique
from .watching import INTERRUPTED, Watcher

SHOWN_WITHIN = 2.0  # seconds from a request's filing to its line (the poll is 0.5 s)


def test_each_request_is_shown_as_it_is_filed_and_ctrl_c_is_130(desk: Desk) -> None:
    path = Path(desk.env["WALLETCTL_CONFIG"])
    doc = tomllib.loads(path.read_text())
    doc["profiles"]["desk-a"].setdefault("history", {})["approvals"] = {"refund": "100.00"}
    path.write_text(tomli_w.dumps(doc))
    earlier = desk.sale(unique("OLD"), "400.00")  # filed before: not shown
    desk.run("refund", earlier, "--amount", "150", "--yes", "-p", "desk-a", expect=12)
    watcher = Watcher(("-o", "table", "-p", "desk-a"), desk.env)
    try:
        watcher.ready()
        for amount in ("250.00", "300.00"):
            ref = desk.sale(unique("WATCH"), "400.00")
            filed = desk.run("-o", "json", "refund", ref, "--amount", amount, "--yes", "-p",
                             "desk-a", expect=12)
            at = time.monotonic()  # the request is committed before the command exits
            number = filed.json()["approval"]["id"]
            when, line = watcher.next_line()
            assert line.startswith(f"#{number} pending: refund of {amount} EUR on {ref}"), line
            assert when - at < SHOWN_WITHIN, (when - at, line)
        assert watcher.interrupt() == INTERRUPTED, watcher.errors
        assert watcher.lines.empty()  # the earlier request was never shown
    finally:
        watcher.stop()


def test_watch_takes_no_state_or_since(desk: Desk) -> None:
    from click.testing import CliRunner

    from walletctl.cli.main import app

    for extra in (("--state", "pending"), ("--since", "1d")):
        result = CliRunner().invoke(app, ["-p", "desk-a", "approvals", "--watch", *extra],
                                    env=desk.env, catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert "--watch shows requests as they are filed" in result.stderr, result.stderr
