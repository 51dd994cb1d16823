"""``recon --open``: money moved off the desk on an order whose last entry is days old is found
the next night, whatever the window.

In-process (the CLI's app) against ``sandbox serve``: the desk's refund is recorded three
days ago (the recorder's clock, moved back), then alice refunds the same order with her own
history file; the nightly ``recon`` (the last day) sees nothing, ``recon --open`` finds it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from walletctl.cli.main import app
from walletctl.history.recorder import utc_text

from .conftest import Desk, Result, unique

MISMATCH = 13


def _run(desk: Desk, *argv: str, env: dict[str, str] | None = None,
         expect: int) -> Result:
    result = CliRunner().invoke(app, list(argv), env={**desk.env, **(env or {})},
                                catch_exceptions=False)
    shown = Result(tuple(argv), result.exit_code, result.stdout, result.stderr)
    assert result.exit_code == expect, shown
    return shown


def _findings(result: Result) -> list[dict[str, Any]]:
    found = result.json()
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
    assert not _findings(nightly), nightly  # the order has no entry in the last day

    found = _run(desk, "-p", "desk-a", "-o", "json", "recon", "--since", "1d", "--open",
                 expect=MISMATCH)
    [finding] = _findings(found)
    assert (finding["kind"], finding["reference"]) == ("unrecorded", moved), found
    assert "400.00 EUR" in finding["note"], found

    # an order older than the open age is not looked up
    _run(desk, "-p", "desk-a", "-o", "json", "recon", "--since", "1d", "--open",
         "--open-age", "2d", expect=0)


def test_open_age_must_be_a_duration_or_a_date(desk: Desk) -> None:
    result = _run(desk, "-p", "desk-a", "recon", "--open", "--open-age", "soon", expect=2)
    assert "--open-age" in result.stderr, result
