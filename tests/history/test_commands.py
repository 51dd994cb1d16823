"""Every money-moving command writes exactly one history entry with the right outcome, the
desk's rules refuse before sending, and a re-run after an unknown outcome never moves money
twice (proven from the sandbox's ledger). The CLI runs as a real subprocess throughout."""

from __future__ import annotations

import json
import os
import pwd
import signal
import socket
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from history_helpers import (  # desk, proxy, sandbox: fixtures, used by name
    API_KEY,
    Desk,
    FaultProxy,
    desk,
    expect,
    proxy,
    sandbox,
    wait_for,
)


def _summary(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["operation"], e["original_ref"], e["new_ref"], e["amount"], e["outcome"],
             e["exit_code"]) for e in entries]


def _moves(desk: Desk, invoice: str, kind: str) -> list[dict[str, Any]]:
    return [t for t in desk.ledger(invoice) if t["kind"] == kind]


def test_each_money_move_writes_one_entry_with_its_outcome(desk: Desk) -> None:
    desk.preauth("HA-1", "100.00", via_cli=True)
    desk.ok("-o", "json", "capture", "HA-1", "--amount", "40")
    desk.ok("-o", "json", "refund", "HA-1", "--amount", "10", "--yes",
            "--reason", "damaged parcel")
    refused = desk.run("refund", "HA-1", "--amount", "999", "--yes")
    assert refused.returncode == 5, refused.stderr
    desk.preauth("HA-2", "10.02", via_cli=True)  # the sandbox refuses captures of ..02
    declined = desk.run("capture", "HA-2")
    assert declined.returncode == 5, declined.stderr
    desk.preauth("HA-3", "20.00")
    desk.ok("-o", "json", "reverse", "HA-3", "--yes")

    entries = desk.entries()
    assert _summary(entries) == [
        ("checkout", "HA-1", None, "100.00", "created", 0),
        ("capture", "HA-1", "HA-1-CAP1", "40.00", "approved", 0),
        ("refund", "HA-1", "HA-1-REF1", "10.00", "approved", 0),
        ("refund", "HA-1", None, "999.00", "refused", 5),  # the amount asked for
        ("checkout", "HA-2", None, "10.02", "created", 0),
        ("capture", "HA-2", "HA-2-CAP1", "10.02", "declined", 5),
        ("reverse", "HA-3", "HA-3-REV1", "20.00", "approved", 0),
    ]
    first = entries[1]
    assert first["os_user"] == pwd.getpwuid(os.getuid()).pw_name
    assert first["host"] == socket.gethostname()
    assert first["profile"] == "desk"
    assert first["base_url"] == desk.base_url
    assert first["currency"] == "EUR"
    assert first["http_status"] == 200
    assert entries[2]["reason"] == "damaged parcel"
    assert entries[5]["http_status"] == 422
    assert all((e["time"].endswith("Z") and e["completed"] is None) or e["completed"] >= e["time"]
               for e in entries)
    # Never a secret: every column of every stored event, and the file's raw bytes.
    for event in desk.events():
        assert not any(API_KEY in str(v) for v in event), event
    raw = desk.history.read_bytes() + desk.history.with_name(
        desk.history.name + "-wal").read_bytes()
    assert API_KEY.encode() not in raw
    assert os.stat(desk.history).st_mode & 0o777 == 0o600
    assert desk.ok("-o", "table", "history", "verify").startswith("history ")
    assert json.loads(desk.ok("history", "verify"))["intact"] is True  # piped: JSON


def test_desk_rules_refuse_before_sending(desk: Desk) -> None:
    desk.write_profile('[profiles.desk.history]\nrequire_reason = ["reverse"]\n'
                       'limits = { refund = "50.00" }\n')
    desk.preauth("HB-1", "100.00")
    desk.preauth("HB-2", "30.00")
    desk.ok("-o", "json", "capture", "HB-1")
    p = desk.run("reverse", "HB-2", "--yes")
    expect(p, 5, "a reason is required")
    assert len(p.stderr.splitlines()) <= 2
    p = desk.run("refund", "HB-1", "--amount", "60", "--yes")
    expect(p, 5, "above its limit of 50.00")
    p = desk.run("refund", "HB-1", "--amount", "60", "--yes", "--reason", "goodwill")
    expect(p, 5, "--confirm-amount 60.00")
    p = desk.run("refund", "HB-1", "--amount", "60", "--yes", "--reason", "goodwill",
                 "--confirm-amount", "6.00")
    expect(p, 5, "is not 60.00 EUR")
    p = desk.run("refund", "HB-1", "--amount", "60", "--yes", "--reason", " ")
    expect(p, 4, "--reason: must not be empty")
    assert _moves(desk, "HB-1", "refund") == []
    assert _moves(desk, "HB-2", "reversal") == []
    desk.ok("-o", "json", "refund", "HB-1", "--amount", "60", "--yes", "--reason", "goodwill",
            "--confirm-amount", "60.00")
    desk.ok("-o", "json", "refund", "HB-1", "--amount", "5", "--yes")  # under the limit
    assert [Decimal(t["amount"]) for t in _moves(desk, "HB-1", "refund")] == [60, 5]
    outcomes = [(e["operation"], e["outcome"]) for e in desk.entries("--op", "refund")]
    assert outcomes == [("refund", "refused")] * 3 + [("refund", "approved")] * 2
    assert [e["outcome"] for e in desk.entries("--op", "reverse")] == ["refused"]


def test_rerun_after_commit_then_drop_reports_the_capture_done(
    desk: Desk, proxy: FaultProxy
) -> None:
    desk.preauth("HC-1", "50.00")
    proxy.mode = "drop-after"
    first = desk.run("capture", "HC-1", "--amount", "10")
    assert first.returncode == 8, first.stderr
    assert "run the same command again" in first.stderr
    assert [e["outcome"] for e in desk.entries("--op", "capture")] == ["unknown"]
    proxy.mode = "pass"
    again = desk.run("-o", "table", "capture", "HC-1", "--amount", "10")
    assert again.returncode == 0, again.stderr
    assert "HC-1-CAP1" in again.stdout, again.stdout
    assert "already applied" in again.stdout, again.stdout
    captures = _moves(desk, "HC-1", "capture")
    assert [(t["reference"], Decimal(t["amount"])) for t in captures] == [
        ("HC-1-CAP1", Decimal(10))]
    entries = desk.entries("--op", "capture")
    assert [(e["new_ref"], e["outcome"]) for e in entries] == [("HC-1-CAP1", "approved")]
    assert "resolved on re-run" in entries[0]["note"]
    # Resolved: the same command is now a likely duplicate of HC-1-CAP1 (held, exit 11)...
    held = desk.run("capture", "HC-1", "--amount", "10")
    expect(held, 11, "HC-1-CAP1")
    assert len(_moves(desk, "HC-1", "capture")) == 1
    # ... and a second capture when it is meant, under the next reference.
    desk.ok("-o", "json", "capture", "HC-1", "--amount", "10", "--allow-duplicate")
    assert len(_moves(desk, "HC-1", "capture")) == 2


def test_rerun_after_a_drop_before_commit_resends_under_the_same_reference(
    desk: Desk, proxy: FaultProxy
) -> None:
    desk.preauth("HD-1", "50.00")
    proxy.mode = "drop-before"
    assert desk.run("capture", "HD-1", "--amount", "10").returncode == 8
    proxy.mode = "pass"
    out = json.loads(desk.ok("-o", "json", "capture", "HD-1", "--amount", "10"))
    assert out["clientSystemTransactionId"] == "HD-1-CAP1"
    assert out["state"] == "Approved"
    assert [t["reference"] for t in _moves(desk, "HD-1", "capture")] == ["HD-1-CAP1"]
    # One movement, one entry: the re-send went on under the entry of the first try.
    entries = desk.entries("--ref", "HD-1-CAP1")
    assert [e["outcome"] for e in entries] == ["approved"]


def test_another_amount_after_a_drop_resolves_the_earlier_intent_first(
    desk: Desk, proxy: FaultProxy
) -> None:
    desk.preauth("HN-1", "50.00")
    proxy.mode = "drop-before"
    assert desk.run("capture", "HN-1", "--amount", "10").returncode == 8
    proxy.mode = "pass"
    # Another amount is another movement: the earlier intent is looked up first (not at
    # the gateway: recorded so), then the new one is sent.
    out = json.loads(desk.ok("-o", "json", "capture", "HN-1", "--amount", "11"))
    assert out["state"] == "Approved"
    assert [Decimal(t["amount"]) for t in _moves(desk, "HN-1", "capture")] == [Decimal(11)]
    entries = desk.entries("--op", "capture")
    assert [(e["amount"], e["outcome"]) for e in entries] == [("10.00", "error"),
                                                              ("11.00", "approved")]
    assert "not at the gateway" in entries[0]["note"]


def test_history_off_keeps_no_history_but_reruns_stay_safe(
    desk: Desk, proxy: FaultProxy
) -> None:
    desk.write_profile("[profiles.desk.history]\nenabled = false\n")
    desk.preauth("HE-1", "50.00")
    proxy.mode = "drop-after"
    assert desk.run("refund", "HE-1", "--yes").returncode == 5  # nothing captured yet
    assert desk.run("capture", "HE-1").returncode == 8
    proxy.mode = "pass"
    again = desk.run("-o", "json", "capture", "HE-1")
    assert again.returncode == 0
    assert json.loads(again.stdout)["alreadyApplied"] is True
    assert len(_moves(desk, "HE-1", "capture")) == 1
    assert not desk.history.exists()


def _killed_once_it_is_held(desk: Desk, held: threading.Event, *argv: str) -> None:
    """Run the command, and SIGKILL it once the proxy holds its request (``held`` set)."""
    proc = subprocess.Popen(desk.argv(*argv), env=desk.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        wait_for(held.is_set)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.communicate(timeout=20)
    assert proc.returncode == -signal.SIGKILL


def test_kill_9_mid_request_leaves_unknown_that_reconcile_resolves(
    desk: Desk, proxy: FaultProxy
) -> None:
    desk.preauth("HF-1", "50.00")
    proxy.mode = "hold-after"
    _killed_once_it_is_held(desk, proxy.forwarded, "capture", "HF-1", "--amount", "20")
    proxy.release.set()
    proxy.mode = "pass"
    unknown = desk.entries("--unknown")
    assert [(e["new_ref"], e["outcome"], e["exit_code"]) for e in unknown] == [
        ("HF-1-CAP1", "unknown", None)]
    done = json.loads(desk.ok("-o", "json", "history", "--unknown", "--reconcile"))
    assert [(r["newRef"], r["outcome"]) for r in done] == [("HF-1-CAP1", "approved")]
    assert [t["reference"] for t in _moves(desk, "HF-1", "capture")] == ["HF-1-CAP1"]
    assert desk.entries("--unknown") == []
    assert [e["outcome"] for e in desk.entries("--ref", "HF-1-CAP1")] == ["approved"]
    assert desk.run("history", "verify").returncode == 0



def test_reconcile_does_not_call_a_request_still_in_flight_not_applied(
    desk: Desk, proxy: FaultProxy
) -> None:
    """The client is killed while the gateway has not yet applied its request: a lookup
    that does not show it proves nothing while it may still arrive. The entry stays unknown
    (exit 8, the line says when to try again), and once the gateway applies it late, the
    next reconcile records it approved: never 'not applied' for money that moved."""
    desk.preauth("HK-1", "50.00")
    proxy.mode = "hold-before"
    _killed_once_it_is_held(desk, proxy.received, "capture", "HK-1", "--amount", "20")
    early = desk.run("-o", "json", "history", "--unknown", "--reconcile")
    assert early.returncode == 8, early
    [line] = json.loads(early.stdout)
    assert (line["newRef"], line["outcome"]) == ("HK-1-CAP1", "unknown"), line
    assert "may still arrive" in line["note"], line
    assert "lookup 1 of 1" not in early.stderr, early.stderr
    assert [e["outcome"] for e in desk.entries("--ref", "HK-1-CAP1")] == ["unknown"]
    proxy.mode = "pass"
    proxy.release.set()  # the gateway applies it now, after the client is gone
    wait_for(lambda: len(_moves(desk, "HK-1", "capture")) == 1)
    done = json.loads(desk.ok("-o", "json", "history", "--unknown", "--reconcile"))
    assert [(r["newRef"], r["outcome"]) for r in done] == [("HK-1-CAP1", "approved")]
    assert [e["outcome"] for e in desk.entries("--ref", "HK-1-CAP1")] == ["approved"]


def test_a_request_no_longer_in_flight_is_judged_by_the_lookup() -> None:
    from types import SimpleNamespace

    from walletctl.models.entries import utc_text
    from walletctl.ops.money.earlier import IN_FLIGHT_MARGIN, in_flight_for

    def begun(seconds_ago: float) -> Any:
        return SimpleNamespace(time=utc_text(datetime.now(UTC) - timedelta(
            seconds=seconds_ago)))

    assert 0 < in_flight_for(begun(0), 30) <= 30 + IN_FLIGHT_MARGIN
    assert in_flight_for(begun(30 + IN_FLIGHT_MARGIN + 1), 30) == 0
    assert in_flight_for(begun(600), 30) == 0


def test_an_unusable_history_refuses_before_sending(desk: Desk) -> None:
    desk.preauth("HG-1", "50.00")
    desk.history = desk.tmp / "fifo"
    os.mkfifo(desk.history)
    expect(desk.run("capture", "HG-1"), 3, "is not a regular file")
    assert _moves(desk, "HG-1", "capture") == []


__all__ = ["desk", "proxy", "sandbox"]  # fixtures: imported for pytest, used by name
