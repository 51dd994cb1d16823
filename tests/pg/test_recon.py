"""``walletctl recon`` on the team's shared history (PostgreSQL): alice moves money at the
desk, bob reconciles the desk's history with the gateway from his own machine."""

from __future__ import annotations

import pytest

from money.conftest import unique
from reconcile.helpers import post_followup, run_together, write_entry

from .conftest import Team

MISMATCH = 13


def test_bob_reconciles_what_alice_did(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import PostgresHistory

    desk = team.desk
    sale, auth = desk.sale(unique("PGR"), "50.00"), desk.preauth(unique("PGA"), "40.00")
    team.alice.run("-p", "desk-a", "refund", sale, "--amount", "5.00", "--yes", expect=0)
    team.alice.run("-p", "desk-a", "capture", auth, "--amount", "15.00", expect=0)
    clean = team.bob.run("-p", "desk-a", "-o", "json", "recon", expect=0).json()
    assert clean["recon"]["backend"] == "postgresql", clean["recon"]
    assert clean["recon"]["history"] == team.url("bob"), clean["recon"]  # never a password
    assert (clean["counts"]["entries"], clean["counts"]["agreed"]) == (2, 2), clean

    # money moved behind the desk's back, and an entry the gateway never saw
    post_followup(desk, sale, f"{sale}-DASH1", "2.50")
    lost = desk.sale(unique("PGL"), "30.00")
    monkeypatch.setenv("PGPASSFILE", team.alice.env["PGPASSFILE"])
    with PostgresHistory(parse_db_url(team.url("alice"))) as alice:
        entry = write_entry(alice, desk, lost, f"{lost}-REF1", "10.00", "approved")
        open_one = write_entry(alice, desk, lost, f"{lost}-REF2", "1.00", None)
    as_json, table = run_together(
        desk, ["-p", "desk-a", "-o", "json", "recon"], ["-p", "desk-a", "-o", "table", "recon"],
        expect=MISMATCH, env={**team.bob.env, "COLUMNS": "80"})
    doc = as_json.json()
    assert [(f["reference"], f["operation"], f["gateway"]["amount"], f["gateway"]["state"])
            for f in doc["unrecorded"]] == [(f"{sale}-DASH1", "refund", "2.50", "Approved")]
    assert [(f["kind"], f["entry"], f["history"]["operator"], f["history"]["amount"])
            for f in doc["unconfirmed"]] == [("absent", entry, "alice", "10.00")], doc
    assert [(f["entry"], f["history"]["operator"]) for f in doc["unknown"]] == [
        (open_one, "alice")], doc
    assert f"{sale}-DASH1 not in the history" in as_json.stderr, as_json
    for line in table.stdout.splitlines():
        assert len(line) <= 80, table
    for ref in (f"{sale}-DASH1", f"{lost}-REF1", f"{lost}-REF2"):
        assert ref in table.stdout, table
    # recon only reads: bob wrote nothing to the shared history
    assert team.bob.run("-o", "json", "history", "--user", "bob", expect=0).json() == []
