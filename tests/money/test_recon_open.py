"""``recon --open``: money moved off the desk on an order whose last entry is days old is found
the next night, whatever the window.

In-process (the CLI's app) against ``sandbox serve``: the desk's refund is recorded three
days ago (the recorder's clock, moved back), then alice refunds the same order with her own
history file; the nightly ``recon`` (the last day) sees nothing, ``recon --open`` finds it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from walletctl.cli.main import app
from walletctl.models.entries import utc_text

from .conftest import Desk, Result, unique

MISMATCH = 13


def _run(desk: Desk, *argv: str, env: dict[str, str] | None = None,
         expect: int) -> Result:
    result = CliRunner().invoke(app, list(argv), env={**desk.env, **(env or {})},
                                catch_exceptions=False)
    shown = Result(tuple(argv), result.exit_code, result.stdout, result.stderr)
    assert result.exit_code == expect, shown
    return shown


def _findings(found: dict[str, Any]) -> list[dict[str, Any]]:
    return [*found["unrecorded"], *found["unconfirmed"], *found["unknown"]]


def test_an_off_desk_refund_on_an_order_quiet_for_days_is_found(
        desk: Desk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = desk.sale(unique("OPEN"), "500.00")
    days_ago = utc_text(datetime.now(UTC) - timedelta(days=3))
    with monkeypatch.context() as m:
        m.setattr("walletctl.history.recorder.now_utc", lambda: days_ago)
        _run(desk, "-p", "desk-a", "-o", "json", "refund", ref, "--amount", "10", "--yes",
             expect=0)
    [entry] = [e for e in desk.history() if e["original_ref"] == ref]
    assert entry["time"] == days_ago
    # alice, with a --config/local file of her own: the desk's history knows nothing of it
    elsewhere = {"WALLETCTL_AUDIT_LOG": str(tmp_path / "alice.sqlite3")}
    moved = _run(desk, "-p", "desk-a", "-o", "json", "refund", ref, "--amount", "400",
                 "--yes", env=elsewhere, expect=0).json()["clientSystemTransactionId"]

    nightly = _run(desk, "-p", "desk-a", "-o", "json", "recon", "--since", "1d", expect=0)
    assert not _findings(nightly.json()), nightly  # the order has no entry in the last day

    found = _run(desk, "-p", "desk-a", "-o", "json", "recon", "--since", "1d", "--open",
                 expect=MISMATCH)
    [finding] = _findings(found.json())
    assert (finding["kind"], finding["reference"]) == ("unrecorded", moved), found
    assert "400.00 EUR" in finding["note"], found

    # an order older than the open age is not looked up
    _run(desk, "-p", "desk-a", "-o", "json", "recon", "--since", "1d", "--open",
         "--open-age", "2d", expect=0)


def test_open_age_must_be_a_duration_or_a_date(desk: Desk) -> None:
    result = _run(desk, "-p", "desk-a", "recon", "--open", "--open-age", "soon", expect=2)
    assert "--open-age" in result.stderr, result


def _moment() -> str:
    """Now, as --since/--until take it, a little after everything before (the sandbox and
    the history date by this machine's clock, UTC)."""
    time.sleep(0.05)
    stamp = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    return stamp


def test_the_totals_hold_the_window_and_an_open_order_s_earlier_capture_stays_out(
        desk: Desk, tmp_path: Path) -> None:
    """The desk captures 300.00 before the window; alice refunds 100.00 in it with her own
    history. ``--open`` finds the refund; the totals compare the window's entries (none) with
    the window's records (the refund), never the capture the desk recorded before."""
    ref = desk.preauth(unique("OPEN"), "300.00")
    _run(desk, "-p", "desk-a", "-o", "json", "capture", ref, "--amount", "300", "--yes",
         expect=0)
    since = _moment()
    elsewhere = {"WALLETCTL_AUDIT_LOG": str(tmp_path / "alice.sqlite3")}
    moved = _run(desk, "-p", "desk-a", "-o", "json", "refund", ref, "--amount", "100",
                 "--yes", env=elsewhere, expect=0).json()["clientSystemTransactionId"]

    doc = _run(desk, "-p", "desk-a", "-o", "json", "recon", "--since", since, "--open",
               expect=MISMATCH).json()
    [finding] = _findings(doc)
    assert (finding["kind"], finding["reference"], finding["outsideWindow"]) == (
        "unrecorded", moved, False), doc
    assert doc["totals"] == {"EUR": {"refund": {
        "history": {"count": 0, "amount": "0.00"}, "gateway": {"count": 1, "amount": "100.00"},
        "difference": "100.00"}}}, doc  # no capture row: it was made before the window
    assert (doc["counts"]["originals"], doc["counts"]["gatewayRecords"],
            doc["counts"]["outsideWindow"]) == (1, 1, 1), doc

    table = _run(desk, "-p", "desk-a", "-o", "table", "recon", "--since", since, "--open",
                 env={"COLUMNS": "200"}, expect=MISMATCH).stdout
    assert "capture" not in table, table
    assert "1 gateway record(s) outside the window compared (--open)" in table, table


def test_open_looks_up_an_order_whose_entries_are_after_until(
        desk: Desk, tmp_path: Path) -> None:
    """``--until`` bounds the window, not the open orders: an order with an entry within
    --open-age is looked up whatever the window, and money moved outside it is reported
    apart (not in the totals)."""
    ref = desk.sale(unique("OPEN"), "500.00")
    _run(desk, "-p", "desk-a", "-o", "json", "refund", ref, "--amount", "10", "--yes",
         expect=0)
    elsewhere = {"WALLETCTL_AUDIT_LOG": str(tmp_path / "alice.sqlite3")}
    moved = _run(desk, "-p", "desk-a", "-o", "json", "refund", ref, "--amount", "400",
                 "--yes", env=elsewhere, expect=0).json()["clientSystemTransactionId"]

    window = ("--since", "2h", "--until", "1h")
    _run(desk, "-p", "desk-a", "-o", "json", "recon", *window, expect=0)  # nothing in it
    doc = _run(desk, "-p", "desk-a", "-o", "json", "recon", *window, "--open",
               expect=MISMATCH).json()
    assert doc["counts"]["originals"] == 1, doc
    [finding] = _findings(doc)
    assert (finding["kind"], finding["reference"], finding["outsideWindow"]) == (
        "unrecorded", moved, True), doc
    assert doc["totals"] == {}, doc  # nothing dated in the window, on either side
    assert (doc["counts"]["gatewayRecords"], doc["counts"]["outsideWindow"]) == (0, 2), doc
    assert doc["recon"]["openSince"], doc

    table = _run(desk, "-p", "desk-a", "-o", "table", "recon", *window, "--open",
                 env={"COLUMNS": "200"}, expect=MISMATCH).stdout
    assert "Open orders (--open): money moved outside the window" in table, table
    assert "Money moved at the gateway with no history entry" not in table, table
    assert "Totals per currency" not in table, table
