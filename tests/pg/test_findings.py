"""Recon's findings on the team's shared history (PostgreSQL): alice records what recon
finds, bob resolves one, recon stops reporting it, and the database refuses alice resolving
the finding about her own movement — from the CLI and from psql."""

from __future__ import annotations

import subprocess

import pytest

from money.conftest import unique
from reconcile.helpers import post_followup, write_entry

from .conftest import Team

MISMATCH, REFUSED = 13, 5


def test_recorded_resolved_by_bob_not_reported_again_and_refused_for_alice(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory

    desk, alice, bob = team.desk, team.alice, team.bob
    sale = desk.sale(unique("PGF"), "50.00")
    post_followup(desk, sale, f"{sale}-DASH1", "2.50")  # nobody's movement at the desk
    monkeypatch.setenv("PGPASSFILE", alice.env["PGPASSFILE"])
    with PostgresHistory(parse_db_url(team.url("alice"))) as history:  # alice's, unconfirmed
        entry = write_entry(history, desk, sale, f"{sale}-REF1", "10.00", "approved")

    recon = ("-p", "desk-a", "-o", "json", "recon", "--ref", sale)
    first = alice.run(*recon, "--record", expect=MISMATCH).json()
    filed = {f["reference"]: f["finding"] for f in first["unrecorded"] + first["unconfirmed"]}
    assert set(filed) == {f"{sale}-DASH1", f"{sale}-REF1"}, first
    assert all(f["state"] == "open" and f["recordedBy"] == "alice" for f in filed.values())
    # recording again files nothing new: the same numbers
    again = alice.run(*recon, "--record", expect=MISMATCH).json()
    assert {f["reference"]: f["finding"]["id"] for f in again["unrecorded"]
            + again["unconfirmed"]} == {k: v["id"] for k, v in filed.items()}, again

    own, dash = filed[f"{sale}-REF1"]["id"], filed[f"{sale}-DASH1"]["id"]
    listed = bob.run("-p", "desk-a", "-o", "json", "recon", "findings", "--open",
                     expect=0).json()
    mine = {f["id"]: f for f in listed["findings"]}
    assert (mine[own]["movement_by"], mine[own]["entry"]) == ("alice", entry), listed
    assert mine[dash]["movement_by"] is None, listed

    # alice may not close the finding about her own movement, whatever she runs
    refused = alice.run("-p", "desk-a", "recon", "resolve", str(own), "--note", "fine",
                        expect=REFUSED)
    assert "own movement" in refused.stderr, refused
    assert "Traceback" not in refused.stderr, refused
    psql = subprocess.run(
        ["psql", "-v", "ON_ERROR_STOP=1", "-X", "-q", team.url("alice"), "-c",
         "UPDATE walletctl.findings SET state = 'resolved', resolution = 'x', "  # noqa: S608
         f"resolved_by = 'bob' WHERE id = {own}"],
        env={**alice.env, "PATH": desk.env.get("PATH", "/usr/bin:/bin")},
        capture_output=True, text=True, timeout=30, check=False)
    assert psql.returncode != 0, psql
    assert "permission denied" in psql.stderr or "own movement" in psql.stderr, psql

    # bob resolves it with a note; an empty note is refused before anything is written
    bob.run("-p", "desk-a", "recon", "resolve", str(own), "--note", " ", expect=2)
    done = bob.run("-p", "desk-a", "-o", "json", "recon", "resolve", str(own), "--note",
                   "the gateway lost it; ticket 4411", expect=0).json()
    assert (done["state"], done["resolved_by"]) == ("resolved", "bob"), done
    bob.run("-p", "desk-a", "recon", "resolve", str(own), "--note", "twice", expect=REFUSED)

    # recon names only the open one now (still exit 13 for it), and shows the resolved one
    after = alice.run(*recon, expect=MISMATCH).json()
    assert [f["reference"] for f in after["unconfirmed"]] == [], after
    assert [f["finding"]["resolution"] for f in after["resolved"]] == [
        "the gateway lost it; ticket 4411"], after
    # resolving the other one makes recon agree (exit 0) on this order
    # a finding about nobody's movement has no maker on file: alice, who recorded it, may
    # not close it (it might be her own off-desk refund); bob, another approver, may
    hers = alice.run("-p", "desk-a", "recon", "resolve", str(dash), "--note", "mine, fine",
                     expect=REFUSED)
    assert "recorded by alice" in hers.stderr, hers
    bob.run("-p", "desk-a", "recon", "resolve", str(dash), "--note",
            "made in the dashboard by the shop", expect=0)
    alice.run(*recon, expect=0)
    view = bob.run("-p", "desk-a", "-o", "table", "order", sale, expect=0,
                   env={"COLUMNS": "80"})
    for word in ("ticket 4411", "resolved", f"finding #{own}"):
        assert word in view.stdout, (word, view)
    # every step is an entry of the chain, by the role the database authenticated
    steps = bob.run("-o", "json", "history", "--ref", f"{sale}-REF1", expect=0).json()
    assert [(e["operation"], e["operator"]) for e in steps if e["operation"] in (
        "finding", "resolve")] == [("finding", "alice"), ("resolve", "bob")], steps
    # an auditor-like read of the findings by the owner shows who did what
    owner = team.owner.run("-p", "desk-a", "-o", "json", "recon", "findings", expect=0).json()
    assert [(f["id"], f["state"], f["resolved_by"]) for f in owner["findings"]
            if f["id"] in (own, dash)] == sorted([(own, "resolved", "bob"),
                                                   (dash, "resolved", "bob")]), owner
    bob.run("history", "verify", expect=0)
