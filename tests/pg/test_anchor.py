"""Anchors on a team's shared history (a real PostgreSQL server). The owner's documented
maintenance path (disable trigger events_append_only, change, enable) can drop the newest
events, or rewrite one and recompute every hash with walletctl's own function: the chain
then verifies by itself, and only a head kept outside the database (``history anchor``'s
line) shows it. An auditor who may only read can make and check anchors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from money.conftest import unique
from tree_checks import rebuild_tree_pg
from walletctl.history.chain import ALL, GENESIS, event_hash

from .conftest import Operator, Team, person
from .test_approvals import with_approvals


def _maintain(team: Team, work: Callable[[psycopg.Connection[Any]], None]) -> None:
    """The owner's maintenance, as docs/history.md describes it: one transaction."""
    with team.cluster.connect("desk_owner", team.db) as db, db.transaction():
        db.execute("ALTER TABLE walletctl.events DISABLE TRIGGER events_append_only")
        work(db)
        db.execute("ALTER TABLE walletctl.events ENABLE TRIGGER events_append_only")


def _rechain(db: psycopg.Connection[Any]) -> None:
    """Recompute every event's hash (and link) with walletctl's own hashing function, and
    the Merkle tree's nodes from the events."""
    rows = db.execute(f"SELECT seq, {', '.join(ALL)} FROM walletctl.events "  # noqa: S608
                      "ORDER BY seq").fetchall()
    prev = GENESIS
    for seq, *values in rows:
        digest = event_hash(prev, seq, values)
        db.execute("UPDATE walletctl.events SET prev_hash = %s, hash = %s WHERE seq = %s",
                   (prev, digest, seq))
        prev = digest
    rebuild_tree_pg(db)


def _auditor(team: Team, home: Path) -> Operator:
    """carol, granted as an auditor: she reads the history and writes nothing."""
    team.owner.run("history", "setup", "--grant", "carol", "--role", "auditor", expect=0)
    return person(team.desk, team.cluster, team.db, "carol", home)


def _refunds(team: Team, *amounts: str) -> None:
    ref = team.desk.sale(unique("ORD"), "300.00")
    for n, amount in enumerate(amounts):
        person = team.alice if n % 2 == 0 else team.bob
        person.run("refund", ref, "--amount", amount, "--yes", "-p", "desk-a", expect=0)


def _anchor(person: Operator, anchors: Path) -> dict[str, Any]:
    line = person.run("history", "anchor", expect=0).stdout
    assert line.count("\n") == 1, line
    with anchors.open("a") as out:
        out.write(line)
    found: dict[str, Any] = json.loads(line)
    return found


def test_a_dropped_tail_is_caught_by_an_auditors_anchor(team: Team, tmp_path: Path) -> None:
    auditor = _auditor(team, tmp_path / "auditor")
    anchors = tmp_path / "anchors.jsonl"
    _refunds(team, "5.00", "6.00")
    first = _anchor(auditor, anchors)
    _refunds(team, "7.00", "8.00")
    newest = _anchor(auditor, anchors)
    assert (first["event"], newest["event"]) == (4, 8)
    assert newest["history"] == team.url(auditor.role)  # no password, the reader's role
    with team.cluster.connect("desk_owner", team.db) as db:
        tip = db.execute("SELECT seq, entry, hash, time FROM walletctl.events "
                         "ORDER BY seq DESC LIMIT 1").fetchone()
    assert tip == (newest["event"], newest["entry"], newest["hash"], newest["time"])
    checked = auditor.run("history", "verify", "--anchor", str(anchors), expect=0).json()
    assert (checked["intact"], checked["anchors"], checked["spentWithoutDecision"]) == (
        True, 2, [])  # an auditor reads the approvals too: none spent without a decision
    # the auditor reads only
    with team.cluster.connect(team.cluster.superuser, team.db) as db:
        row = db.execute("SELECT has_table_privilege(%s, 'walletctl.events', 'INSERT')",
                         (auditor.role,)).fetchone()
    assert row == (False,)

    def drop_tail(db: psycopg.Connection[Any]) -> None:
        db.execute("DELETE FROM walletctl.events WHERE seq > 6")

    _maintain(team, drop_tail)
    alone = team.bob.run("history", "verify", expect=0).json()
    assert (alone["intact"], alone["events"]) == (True, 6)  # the database alone cannot tell
    cut = auditor.run("history", "verify", "--anchor", str(anchors), expect=3)
    assert ("event 8 of anchor line 2 (" + newest["time"] + ") is gone: newer entries were "
            "deleted (the chain now ends at event 6)") in cut.stderr, cut
    assert len(cut.stderr.splitlines()) == 2, cut  # the error and its hint
    assert cut.json()["anchorFailures"] == [
        {"line": 2, "event": 8, "hash": newest["hash"], "found": None}]


def test_a_recomputed_chain_is_caught_by_its_anchors(team: Team, tmp_path: Path) -> None:
    anchors = tmp_path / "anchors.jsonl"
    _refunds(team, "5.00", "6.00", "7.00")
    _anchor(team.alice, anchors)
    _refunds(team, "8.00")
    _anchor(team.bob, anchors)
    team.alice.run("history", "verify", "--anchor", str(anchors), expect=0)

    def rewrite(db: psycopg.Connection[Any]) -> None:
        db.execute("UPDATE walletctl.events SET amount = '60.00' WHERE amount = '6.00'")
        _rechain(db)

    _maintain(team, rewrite)
    alone = team.bob.run("history", "verify", expect=0).json()
    assert alone["intact"] is True  # recomputed: intact in itself
    listed = team.bob.run("-o", "json", "history", expect=0).json()
    assert "60.00" in [e["amount"] for e in listed]
    found = team.bob.run("history", "verify", "--anchor", str(anchors), expect=3)
    assert "event 6 no longer has the hash of anchor line 1" in found.stderr, found
    assert "the chain was rewritten at or before event 6; 1 more of 2 anchor lines fail" \
        in found.stderr, found
    record = found.json()
    assert [f["line"] for f in record["anchorFailures"]] == [1, 2]
    assert record["anchorFailures"][0]["found"] not in (None, record["anchorFailures"][0][
        "hash"])


def test_a_decision_removed_from_the_chain_leaves_its_spent_approval_reported(
        team: Team, tmp_path: Path) -> None:
    """bob's approval of alice's refund is taken out of the chain (renumbered, recomputed):
    the chain verifies, but the spent approval without a decision is reported."""
    for operator in (team.alice, team.bob):
        with_approvals(operator, refund="100.00")
    ref = team.desk.sale(unique("ORD"), "300.00")
    refund = ("refund", ref, "--amount", "150.00", "--yes", "-p", "desk-a")
    number = str(team.alice.run("-o", "json", *refund, expect=12).json()["approval"]["id"])
    team.bob.run("approve", number, "--yes", "-p", "desk-a", expect=0)
    team.alice.run(*refund, "--approval", number, expect=0)
    assert team.bob.run("history", "verify", expect=0).json()["spentWithoutDecision"] == []

    def unapprove(db: psycopg.Connection[Any]) -> None:
        row = db.execute("SELECT seq FROM walletctl.events WHERE operation = 'approval' "
                         "AND approval = %s", (int(number),)).fetchone()
        assert row is not None
        db.execute("DELETE FROM walletctl.events WHERE seq = %s", row)
        for (seq,) in db.execute("SELECT seq FROM walletctl.events WHERE seq > %s "
                                 "ORDER BY seq", row).fetchall():
            db.execute("UPDATE walletctl.events SET seq = seq - 1 WHERE seq = %s", (seq,))
        _rechain(db)

    _maintain(team, unapprove)
    found = team.alice.run("history", "verify", expect=3)
    assert (f"approval #{number} was spent, but no decision approving it is in the chain"
            in found.stderr), found
    record = found.json()
    assert (record["brokenAt"], record["spentWithoutDecision"]) == (None, [int(number)])
