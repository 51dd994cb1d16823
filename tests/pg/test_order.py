"""``walletctl order REF`` on the team's shared history (PostgreSQL): alice checks out,
captures twice and refunds (the second refund above the approval amount, approved by bob),
someone refunds straight at the gateway, and bob asks what happened to the order from his
own machine."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import httpx
from rich.cells import cell_len

from money.conftest import unique
from reconcile.helpers import post_followup

from .conftest import Team
from .test_approvals import with_approvals

MISMATCH = 13


def test_bob_sees_every_step_alice_made_and_the_one_disagreement(team: Team) -> None:
    alice, bob, desk = team.alice, team.bob, team.desk
    for person in (alice, bob):
        with_approvals(person, refund="100.00")
    ref = unique("PGO")
    alice.run("-p", "desk-a", "checkout", "--amount", "400.00", "--ref", ref, "--type",
              "preauth", expect=0)
    httpx.post(f"{desk.sandbox_url}/_sandbox/checkouts/{ref}/approve",
               timeout=10).raise_for_status()
    alice.run("-p", "desk-a", "capture", ref, "--amount", "100.00", expect=0)
    alice.run("-p", "desk-a", "capture", ref, "--amount", "200.00", expect=0)
    refund = ("-p", "desk-a", "refund", ref, "--amount", "150.00", "--reason", "goodwill",
              "--yes")
    number = alice.run("-o", "json", *refund, expect=12).json()["approval"]["id"]
    bob.run("approve", str(number), "--yes", "-p", "desk-a", expect=0)
    alice.run(*refund, "--approval", str(number), expect=0)
    post_followup(desk, ref, f"{ref}-DASH1", "7.50")

    got = bob.run("-p", "desk-a", "-o", "json", "order", ref, expect=MISMATCH)
    doc = got.json()
    assert doc["order"]["backend"] == "postgresql", doc["order"]
    assert doc["order"]["history"] == team.url("bob"), doc["order"]  # never a password
    steps = [(s["step"], s["amount"], s["outcome"], s["operator"], s["gatewayState"])
             for s in doc["timeline"]]
    assert steps == [
        ("checkout", "400.00", "created", "alice", "Approved"),
        ("capture", "100.00", "approved", "alice", "Approved"),
        ("capture", "200.00", "approved", "alice", "Approved"),
        ("refund", "150.00", "refused", "alice", None),
        ("approval", None, "approved", "bob", None),
        ("refund", "150.00", "approved", "alice", "Approved"),
        ("refund", "7.50", None, None, "Approved"),
    ], steps
    [approval] = doc["approvals"]
    assert (approval["requester"], approval["approver"], approval["state"]) == (
        "alice", "bob", "spent"), approval
    assert [(f["kind"], f["reference"]) for f in doc["findings"]] == [
        ("unrecorded", f"{ref}-DASH1")], doc["findings"]
    assert (doc["balance"]["captured"], doc["balance"]["refunded"]) == ("300.00", "157.50")
    assert doc["verdict"]["disagreements"][0]["reference"] == f"{ref}-DASH1", doc["verdict"]

    table = bob.run("-p", "desk-a", "-o", "table", "order", ref, expect=MISMATCH,
                    env={"COLUMNS": "80"})
    assert max(cell_len(line) for line in table.stdout.splitlines()) <= 80, table
    for word in ("alice", "bob", f"{ref}-DASH1", "no entry", f"disagree on {ref}"):
        assert word in table.stdout, (word, table)
    # the view only reads: bob wrote nothing to the shared history
    assert bob.run("-o", "json", "history", "--user", "bob", "--op", "refund",
                   expect=0).json() == []


def test_bobs_evidence_of_alices_order_is_checked_offline(team: Team, tmp_path: Path) -> None:
    """A bundle from the shared history: alice's movements, bob's approval, each named by
    the role the database authenticated; checked with nothing but the file."""
    alice, bob, desk = team.alice, team.bob, team.desk
    for person in (alice, bob):
        with_approvals(person, refund="100.00")
    ref = unique("PGE")
    alice.run("-p", "desk-a", "checkout", "--amount", "300.00", "--ref", ref, "--type",
              "sale", expect=0)
    httpx.post(f"{desk.sandbox_url}/_sandbox/checkouts/{ref}/approve",
               timeout=10).raise_for_status()
    refund = ("-p", "desk-a", "refund", ref, "--amount", "150.00", "--reason", "goodwill",
              "--yes")
    number = alice.run("-o", "json", *refund, expect=12).json()["approval"]["id"]
    bob.run("approve", str(number), "--yes", "-p", "desk-a", expect=0)
    alice.run(*refund, "--approval", str(number), expect=0)
    bundle = tmp_path / "case.ndjson"
    bob.run("-p", "desk-a", "order", ref, "--evidence", str(bundle), expect=0)
    lines = [json.loads(line) for line in bundle.read_text().splitlines()]
    offline = {"WALLETCTL_CONFIG": str(tmp_path / "none.toml"), "WALLETCTL_HISTORY_URL": "",
               "WALLETCTL_AUDIT_LOG": str(tmp_path / "none.sqlite3"), "PGPASSFILE": ""}
    reading = desk.run("-o", "json", "history", "check-evidence", str(bundle), env=offline,
                       expect=0).json()["reading"]
    [approval] = reading["approvals"]
    assert (approval["decidedBy"], [r["by"] for r in approval["requestedBy"]],
            [s["by"] for s in approval["spentBy"]]) == ("bob", ["alice"], ["alice"]), approval
    assert {e["by"] for e in reading["entries"]} == {"alice"}, reading["entries"]
    forged = copy.deepcopy(lines)
    decision = next(line["event"] for line in forged
                    if "event" in line and line["event"]["operation"] == "approval")
    decision["operator"] = "alice"  # as if she approved her own refund
    (tmp_path / "forged.ndjson").write_text("".join(json.dumps(x) + "\n" for x in forged))
    caught = desk.run("history", "check-evidence", str(tmp_path / "forged.ndjson"),
                      env=offline, expect=3)
    assert "not in the checkpoint's tree" in caught.stderr, caught
