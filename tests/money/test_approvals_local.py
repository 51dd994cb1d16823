"""Four eyes on one machine's history file (SQLite). Its "who" is the OS account: the
requester cannot approve their own request from the same account; another person (here a
second account, stood in for in-process, since a test cannot log in as someone else) can.
The rules are the same code as on PostgreSQL; what the file cannot do is keep them against
its own owner (docs/history.md says so), which the expiry test below uses."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from .conftest import Desk, unique


def _four_eyes(desk: Desk, **amounts: str) -> None:
    path = Path(desk.env["WALLETCTL_CONFIG"])
    doc = tomllib.loads(path.read_text())
    doc["profiles"]["desk-a"].setdefault("history", {})["approvals"] = amounts
    path.write_text(tomli_w.dumps(doc))


def _approve_as(desk: Desk, monkeypatch: pytest.MonkeyPatch, person: str, number: int,
                *, approve: bool = True) -> Any:
    """``walletctl approve NUMBER`` by another OS account (the ops call the command makes)."""
    from walletctl.config.profiles_file import load_profile
    from walletctl.history import recorder
    from walletctl.ops import desk as desk_ops
    from walletctl.ops.desk import decide

    # undone on return: the test's next commands run in this process as its own account
    with monkeypatch.context() as patch:
        patch.setenv("WALLETCTL_AUDIT_LOG", desk.env["WALLETCTL_AUDIT_LOG"])
        patch.setattr(recorder, "os_user", lambda: person)
        patch.setattr(desk_ops, "os_user", lambda: person)  # the step's account
        profile = load_profile("desk-a", Path(desk.env["WALLETCTL_CONFIG"]))
        return decide(profile, number, approve=approve, reason=None,
                      confirm=lambda _found, _now: None)


def _approved(desk: Desk, ref: str) -> int:
    return sum(1 for r in desk.followups(ref, "refund") if r.get("state") == "Approved")


def test_four_eyes_on_a_local_history(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    _four_eyes(desk, refund="100.00")
    ref = desk.sale(unique("LOC"), "400.00")
    refund = ("refund", ref, "--amount", "250.00", "--yes", "-p", "desk-a")
    filed = desk.run("-o", "json", *refund, expect=12).json()["approval"]
    number = filed["id"]
    assert _approved(desk, ref) == 0
    own = desk.run("approve", str(number), "--yes", "-p", "desk-a", expect=5)
    assert "may not approve it" in own.stderr, own
    refused = desk.run("approvals", "refuse", str(number), "--reason", "mine", "--yes",
                       "-p", "desk-a", expect=5)
    assert "may not refuse it" in refused.stderr, refused

    done = _approve_as(desk, monkeypatch, "second-operator", number)
    assert (done.state, done.decided_by) == ("approved", "second-operator")
    desk.run(*refund, "--approval", str(number), expect=0)
    assert _approved(desk, ref) == 1
    desk.run(*refund, "--approval", str(number), expect=5)
    assert _approved(desk, ref) == 1
    table = desk.run("-o", "table", "approvals", "-p", "desk-a", expect=0,
                     env={"COLUMNS": "80"})
    assert all(len(line) <= 80 for line in table.stdout.splitlines()), table
    assert "spent" in table.stdout, table
    assert "second-operator" in table.stdout, table
    desk.run("history", "verify", expect=0)


def test_a_refused_request_and_an_expired_approval(desk: Desk,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _four_eyes(desk, refund="100.00")
    ref = desk.sale(unique("LOC"), "400.00")
    refund = ("refund", ref, "--amount", "150.00", "--yes", "-p", "desk-a")
    first = desk.run("-o", "json", *refund, expect=12).json()["approval"]["id"]
    own = desk.run("-o", "json", "approvals", "refuse", str(first), "--reason", "no",
                   "--yes", "-p", "desk-a", expect=5)
    assert own.stdout == "", own
    assert "may not refuse it" in own.stderr, own
    _approve_as(desk, monkeypatch, "second-operator", first, approve=False)
    said = desk.run(*refund, "--approval", str(first), expect=5)
    assert "is refused by second-operator" in said.stderr, said

    second = desk.run("-o", "json", *refund, expect=12).json()["approval"]["id"]
    _approve_as(desk, monkeypatch, "second-operator", second)
    with sqlite3.connect(desk.env["WALLETCTL_AUDIT_LOG"]) as db:  # a day later
        db.execute("UPDATE approvals SET expires_at = '2000-01-01T00:00:00.000Z' "
                   "WHERE id = ?", (second,))
    late = desk.run(*refund, "--approval", str(second), expect=5)
    assert "is expired" in late.stderr, late
    assert _approved(desk, ref) == 0
    states = {a["id"]: a["state"] for a in desk.run("-o", "json", "approvals", "-p", "desk-a",
                                                    expect=0).json()}
    assert states == {first: "refused", second: "expired"}, states


def test_a_batch_file_edited_after_its_approval(desk: Desk, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _four_eyes(desk, refund="100.00")
    refs = [desk.sale(unique("LB"), "300.00") for _ in range(2)]
    batch = tmp_path / "rows.jsonl"
    text = "".join(f'{{"ref": "{r}", "amount": "{a}", "currency": "EUR"}}\n'
                   for r, a in zip(refs, ("150.00", "5.00"), strict=True))
    batch.write_text(text)
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    filed = desk.run("-o", "json", *run, expect=12).json()
    number = filed["approval"]["id"]
    assert filed["approval"]["batch_detail"]["above"] == 1, filed
    _approve_as(desk, monkeypatch, "second-operator", number)
    batch.write_text(text.replace("5.00", "6.00"))
    desk.run(*run, "--approval", str(number), expect=5)
    assert [_approved(desk, r) for r in refs] == [0, 0]
    batch.write_text(text)
    desk.run(*run, "--approval", str(number), expect=0)
    assert [_approved(desk, r) for r in refs] == [1, 1]


def test_a_batch_approval_carries_its_reason_to_the_approver(
        desk: Desk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reason a batch is filed with is what the approver is shown, and it is bound: a
    run under the approval with another reason sends nothing."""
    _four_eyes(desk, refund="100.00")
    ref = desk.sale(unique("LR"), "300.00")
    batch = tmp_path / "rows.csv"
    batch.write_text(f"ref,amount,currency\n{ref},150.00,EUR\n")
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    filed = desk.run("-o", "json", *run, "--reason", "product recall", expect=12).json()
    number = filed["approval"]["id"]
    shown = desk.run("-o", "json", "approvals", "show", str(number)).json()
    assert shown["reason"] == "product recall", shown
    _approve_as(desk, monkeypatch, "second-operator", number)
    desk.run(*run, "--approval", str(number), "--reason", "other", expect=5)
    assert _approved(desk, ref) == 0
    desk.run(*run, "--approval", str(number), "--reason", "product recall", expect=0)
    assert _approved(desk, ref) == 1
