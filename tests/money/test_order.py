"""``walletctl order REF`` from outside: a real sandbox on a real port, walletctl as
subprocesses, a refund made straight at the gateway (raw HTTP) that the history never saw,
and the view in a real 80-column terminal (tmux)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid
from typing import Any

import httpx
import pytest
from rich.cells import cell_len

from reconcile.helpers import post_followup

from .conftest import WALLETCTL, Desk, unique
from .test_approvals_local import _approve_as, _four_eyes

MISMATCH = 13
KEYS = {"order", "gateway", "history", "approvals", "findings", "balance", "timeline",
        "verdict"}


def _approved_checkout(desk: Desk, ref: str, amount: str) -> None:
    desk.run("-p", "desk-a", "checkout", "--amount", amount, "--ref", ref, "--type", "preauth",
             expect=0)
    resp = httpx.post(f"{desk.sandbox_url}/_sandbox/checkouts/{ref}/approve", timeout=10)
    assert resp.status_code == 200, (resp.status_code, resp.text)


def an_order(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """A pre-authorisation of 400.00 checked out with walletctl, captured twice, refunded
    twice (the second above the approval amount: filed, approved by another operator,
    sent), and refunded once more straight at the gateway: (the order, the approval)."""
    _four_eyes(desk, refund="100.00")
    ref = unique("ORD")
    _approved_checkout(desk, ref, "400.00")
    desk.run("-p", "desk-a", "capture", ref, "--amount", "100.00", expect=0)
    desk.run("-p", "desk-a", "capture", ref, "--amount", "200.00", expect=0)
    desk.run("-p", "desk-a", "refund", ref, "--amount", "20.00", "--reason", "damaged box",
             "--yes", expect=0)
    big = ("-p", "desk-a", "refund", ref, "--amount", "150.00", "--reason", "goodwill",
           "--yes")
    number = int(desk.run("-o", "json", *big, expect=12).json()["approval"]["id"])
    _approve_as(desk, monkeypatch, "second-operator", number)
    desk.run(*big, "--approval", str(number), expect=0)
    post_followup(desk, ref, f"{ref}-DASH1", "7.50")
    return ref, number


def test_the_order_names_every_step_and_the_one_disagreement(
        desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    ref, number = an_order(desk, monkeypatch)
    got = desk.run("-p", "desk-a", "-o", "json", "order", ref, expect=MISMATCH)
    doc = got.json()
    assert set(doc) >= KEYS, doc.keys()
    assert doc["order"]["backend"] == "sqlite", doc["order"]
    steps = [(s["step"], s["amount"], s["outcome"], s["gatewayState"]) for s in doc["timeline"]]
    assert steps == [
        ("checkout", "400.00", "created", "Approved"),
        ("capture", "100.00", "approved", "Approved"),
        ("capture", "200.00", "approved", "Approved"),
        ("refund", "20.00", "approved", "Approved"),
        ("refund", "150.00", "refused", None),  # filed for approval: nothing sent
        ("approval", None, "approved", None),
        ("refund", "150.00", "approved", "Approved"),
        ("refund", "7.50", None, "Approved"),  # straight at the gateway: no entry
    ], steps
    by_step = {(s["step"], s["amount"], s["outcome"]): s for s in doc["timeline"]}
    assert by_step[("refund", "20.00", "approved")]["reason"] == "damaged box"
    assert by_step[("refund", "150.00", "approved")]["approval"] == number
    assert by_step[("approval", None, "approved")]["approval"] == number
    assert [(f["kind"], f["reference"]) for f in doc["findings"]] == [
        ("unrecorded", f"{ref}-DASH1")], doc["findings"]
    [approval] = doc["approvals"]
    assert (approval["id"], approval["state"], approval["approver"]) == (
        number, "spent", "second-operator"), approval
    assert approval["spent_entry"] == by_step[("refund", "150.00", "approved")]["entry"]
    assert doc["balance"] == {
        "reference": ref, "kind": "preauth", "state": "Approved", "currency": "EUR",
        "authorised": "400.00", "captured": "300.00", "refunded": "177.50",
        "capturable": "100.00", "refundable": "122.50", "reversed": False}, doc["balance"]
    verdict = doc["verdict"]
    assert (verdict["agrees"], verdict["exitCode"]) == (False, MISMATCH), verdict
    assert f"{ref}-DASH1 not in the history" in verdict["text"], verdict
    assert [d["reference"] for d in verdict["disagreements"]] == [f"{ref}-DASH1"]
    assert gateway_refs(doc) == {ref, f"{ref}-CAP1", f"{ref}-CAP2", f"{ref}-REF1",
                                 f"{ref}-REF2", f"{ref}-DASH1"}
    assert len(doc["history"]) == 7, doc["history"]
    assert f"{ref}-DASH1 not in the history" in got.stderr, got

    # the table, at 80, 60 and 40 columns: no line wider, every step and the verdict named
    for columns in (80, 60, 40):
        table = desk.run("-p", "desk-a", "-o", "table", "order", ref, expect=MISMATCH,
                         env={"COLUMNS": str(columns)})
        lines = table.stdout.splitlines()
        assert max(cell_len(line) for line in lines) <= columns, table
        text = " ".join(table.stdout.split())
        for word in (f"{ref}-CAP2", f"{ref}-DASH1", "no entry", "Approval #", "Balance:",
                     "second-operator", "disagree"):
            assert word in text, (word, table)



def gateway_refs(doc: dict[str, Any]) -> set[str]:
    return {r["clientSystemTransactionId"] for r in doc["gateway"]}


def test_an_order_that_agrees_and_one_with_no_history(desk: Desk) -> None:
    ref = unique("AGR")
    _approved_checkout(desk, ref, "60.00")
    desk.run("-p", "desk-a", "capture", ref, "--amount", "60.00", expect=0)
    doc = desk.run("-p", "desk-a", "-o", "json", "order", ref, expect=0).json()
    assert doc["verdict"]["agrees"] is True, doc
    assert doc["findings"] == [], doc
    assert doc["verdict"]["text"] == f"The history and the gateway agree on {ref}.", doc
    table = desk.run("-p", "desk-b", "order", ref, expect=0, env={"COLUMNS": "80"})
    assert f"The history and the gateway agree on {ref}." in table.stdout, table

    # no history at all: the gateway only, said so; an unknown reference: the lookup's error
    alone = {"WALLETCTL_AUDIT_LOG": str(desk.tmp / "nowhere" / "history.sqlite3")}
    doc = desk.run("-p", "desk-a", "-o", "json", "order", ref, expect=0, env=alone).json()
    assert (doc["order"]["backend"], doc["history"], doc["approvals"], doc["findings"]) == (
        "none", [], [], []), doc
    assert doc["verdict"]["compared"] is False, doc
    assert "No history" in doc["verdict"]["text"], doc
    assert doc["balance"]["captured"] == "60.00", doc["balance"]
    assert {s["outcome"] for s in doc["timeline"]} == {None}, doc["timeline"]
    assert not (desk.tmp / "nowhere").exists()  # a read: nothing created
    missing = desk.run("-p", "desk-a", "order", unique("NONE"), env=alone, expect=5)
    assert missing.stdout == "", missing  # the lookup's own error, as `walletctl lookup`
    assert "no transaction" in missing.stderr, missing
    desk.run("-p", "desk-a", "order", "R" * 500, expect=4)  # the reference rule: exit 4


def test_a_followups_reference_shows_its_orders_story(desk: Desk) -> None:
    """A refund's reference, as a customer quotes it: the original's story, never "the
    history has no entry" on a reference an entry was sent as."""
    ref = unique("FUP")
    _approved_checkout(desk, ref, "90.00")
    desk.run("-p", "desk-a", "capture", ref, "--amount", "60.00", expect=0)
    desk.run("-p", "desk-a", "refund", ref, "--amount", "5.00", "--reason", "scratched",
             "--yes", expect=0)
    whole = desk.run("-p", "desk-a", "-o", "json", "order", ref, expect=0).json()
    for given, what in ((f"{ref}-REF1", "refund"), (f"{ref}-CAP1", "capture")):
        doc = desk.run("-p", "desk-a", "-o", "json", "order", given, expect=0).json()
        assert doc["order"] | {"asked": None, "askedIs": None} == whole["order"], doc
        assert (doc["order"]["asked"], doc["order"]["askedIs"]) == (given, what), doc
        assert doc["timeline"] == whole["timeline"], doc["timeline"]
        assert doc["verdict"]["text"] == f"The history and the gateway agree on {ref}.", doc
        table = desk.run("-p", "desk-a", "-o", "table", "order", given, expect=0,
                         env={"COLUMNS": "100"})
        text = " ".join(table.stdout.split())
        assert f"{given} is a {what} of {ref}" in text, table
        assert "no entry" not in text, table
        assert f"agree on {ref}." in text, table
    # a follow-up made straight at the gateway, with walletctl's tag: its record says it
    # is a refund, so the order shown is the original's (and the refund its disagreement)
    post_followup(desk, ref, f"{ref}-REF7", "2.00")
    doc = desk.run("-p", "desk-a", "-o", "json", "order", f"{ref}-REF7",
                   expect=MISMATCH).json()
    assert (doc["order"]["reference"], doc["order"]["askedIs"]) == (ref, "refund"), doc
    assert {s["reference"] for s in doc["timeline"]} >= {ref, f"{ref}-REF1", f"{ref}-REF7"}
    assert f"{ref}-REF7 not in the history" in doc["verdict"]["text"], doc
    # an order whose own reference merely looks like a follow-up's is its own order
    own = f"{unique('OWN')}-REF1"
    _approved_checkout(desk, own, "10.00")
    doc = desk.run("-p", "desk-a", "-o", "json", "order", own, expect=0).json()
    assert (doc["order"]["reference"], doc["order"]["asked"]) == (own, None), doc
    alone = {"WALLETCTL_AUDIT_LOG": str(desk.tmp / "nowhere" / "history.sqlite3")}
    doc = desk.run("-p", "desk-a", "-o", "json", "order", own, env=alone, expect=0).json()
    assert (doc["order"]["reference"], doc["order"]["asked"]) == (own, None), doc


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_order_in_a_real_80_column_terminal(desk: Desk,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ref, _ = an_order(desk, monkeypatch)
    session = f"walletctl-order-{uuid.uuid4().hex[:8]}"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in desk.env.items()
                   if k not in ("COLUMNS", "LINES"))
    command = (f"env -u COLUMNS -u LINES {env} {shlex.join(WALLETCTL)} -p desk-a order {ref}; "
               "echo ORDER-EXIT=$?; sleep 600")
    tmux = ["tmux", "-L", session]  # a tmux server of this test's own
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "80", "-y", "50",
                    command], check=True, timeout=30)
    try:
        deadline = time.monotonic() + 60
        screen = ""
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session, "-S", "-"],
                                    capture_output=True, text=True, check=True,
                                    timeout=30).stdout
            if "ORDER-EXIT=" in screen:
                break
            time.sleep(0.3)
        joined = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-t", session, "-S", "-"],
                                capture_output=True, text=True, check=True,
                                timeout=30).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=30)
    assert f"ORDER-EXIT={MISMATCH}" in screen, screen
    lines = screen.rstrip("\n").splitlines()
    # nothing the terminal had to wrap (-J joins wrapped lines back together)
    assert [line.rstrip() for line in joined.rstrip("\n").splitlines()] == [
        line.rstrip() for line in lines], "the terminal wrapped a line"
    assert max(cell_len(line) for line in lines) <= 80, screen
    for word in (f"{ref}-CAP1", f"{ref}-REF2", f"{ref}-DASH1", "Timeline of", "Balance:",
                 "no entry", "second-operator"):
        assert word in screen, (word, screen)
    assert "hidden at" not in screen  # 80 columns show every column
    assert f"disagree on {ref}" in screen, screen
