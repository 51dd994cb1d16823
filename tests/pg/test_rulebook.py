"""The desk's rules belong to the team: its policy, approvals and roles kept by the database.

Each test is one way around the rules, tried as the operator who wants around them — with
their own profile, with psql (a psycopg connection as that role), or as a role of another
kind — and refused by the database; the gateway never holds the unapproved amount."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from money.conftest import unique
from walletctl.history.chain import GENESIS, Tip

from .conftest import Operator, Team
from .test_approvals import with_approvals

ROW: dict[str, Any] = {"time": "2026-11-25T10:00:00.000Z", "os_user": "x", "host": "h",
                       "profile": "desk-a", "base_url": "http://x", "merchant_id": "M-1001",
                       "store_id": "S-01", "currency": "EUR"}


def _policy(team: Team, *pairs: str) -> None:
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        team.owner.run("history", "policy", "set", key, value, expect=0)


def _approved(team: Team, ref: str, op: str = "refund") -> list[str]:
    return [f'{Decimal(r["transactionAmount"]).scaleb(-2):.2f}'
            for r in team.desk.followups(ref, op) if r.get("state") == "Approved"]


def _append(team: Team, role: str, row: dict[str, Any], *,
            before: Callable[[psycopg.Connection[Any], int], None] | None = None,
            entry: int | None = None) -> None:
    """Append a begin event as ``role`` straight through psycopg (no walletctl checks): the
    chain's hash made right, so that only the database's rules can refuse it."""
    with team.cluster.connect(role, team.db) as db, db.transaction():
        db.execute("SET search_path = walletctl")
        tip = Tip(db, lambda sql: sql.replace("?", "%s"), role)
        if entry is not None:
            tip.entry = entry - 1
        if before is not None:
            before(db, tip.entry + 1)
        tip.append("begin", None, {**ROW, **row}, True)
        tip.write()


def test_the_approval_amount_is_the_desks_not_the_operators_profile(team: Team) -> None:
    """Item 1: alice's own profile has no [history.approvals]; the desk's policy has one."""
    _policy(team, "approvals.refund", "100.00")
    ref = team.desk.sale(unique("FN"), "500.00")
    filed = team.alice.run("refund", ref, "--amount", "450.00", "--yes", "-p", "desk-a",
                           expect=12)
    assert "approval amount of 100" in filed.stderr, filed
    assert _approved(team, ref) == []
    # around walletctl: psql as alice, an intent with no approval
    with pytest.raises(psycopg.Error, match="above the desk's approval amount"):
        _append(team, "alice", {"operation": "refund", "original_ref": ref,
                                "new_ref": ref + "-X", "amount": "450.00", "reason": "x"})
    # her profile saying 1000 loosens the desk's 100: refused, naming the rule
    with_approvals(team.alice, refund="1000.00")
    loose = team.alice.run("refund", ref, "--amount", "450.00", "--yes", "-p", "desk-a",
                           expect=5)
    assert "would loosen the desk's policy (approvals.refund = 100" in loose.stderr, loose
    # a stricter profile is obeyed: 60 needs an approval under her own 50
    with_approvals(team.alice, refund="50.00")
    team.alice.run("refund", ref, "--amount", "60.00", "--yes", "-p", "desk-a", expect=12)
    assert _approved(team, ref) == []


def test_limits_and_reasons_bind_every_operation(team: Team) -> None:
    """Items 1 and 8: limits and require_reason from the desk, for checkout, refund and
    capture alike (the database refuses what a client that skips the checks sends)."""
    _policy(team, "limits.checkout", "100.00", "limits.refund", "100.00",
            "require_reason", "capture")
    ref = team.desk.sale(unique("LIM"), "500.00")
    over = team.alice.run("refund", ref, "--amount", "150.00", "--yes", "-p", "desk-a",
                          expect=5)
    assert "limit" in over.stderr, over
    new = unique("CO")
    checkout = team.alice.run("checkout", "--ref", new, "--amount", "150.00", "--currency",
                              "EUR", "-p", "desk-a", expect=5)
    assert "limit" in checkout.stderr, checkout
    assert team.desk.records(new) == []
    pre = team.desk.preauth(unique("CAP"), "40.00")
    capture = team.alice.run("capture", pre, "--amount", "10.00", "--yes", "-p", "desk-a",
                             expect=5)
    assert "reason is required" in capture.stderr, capture
    assert _approved(team, pre, "capture") == []
    for row, rule in (({"operation": "refund", "original_ref": ref, "amount": "150.00"},
                       "limit of 100.00 and needs a reason"),
                      ({"operation": "capture", "original_ref": pre, "amount": "10.00"},
                       "needs a reason")):
        with pytest.raises(psycopg.Error, match=rule):
            _append(team, "alice", row)
    team.alice.run("refund", ref, "--amount", "150.00", "--reason", "damaged",
                   "--confirm-amount", "150.00", "--yes", "-p", "desk-a", expect=0)
    assert _approved(team, ref) == ["150.00"]


def test_the_approver_sees_what_can_be_spent(team: Team) -> None:
    """Item 2: a request inserted by psql with a hash that binds another amount."""
    _policy(team, "approvals.refund", "100.00")
    ref = team.desk.sale(unique("FE"), "500.00")
    with team.cluster.connect("alice", team.db) as db:
        number = db.execute(
            "INSERT INTO walletctl.approvals (kind, merchant_id, store_id, operation, "
            "original_ref, new_ref, amount, currency, reason, created_at, expires_at, "
            "request_hash) VALUES ('single', 'M-1001', 'S-01', 'refund', %s, %s, '110.00', "
            "'EUR', 'parcel lost', 'x', to_char(now() + interval '1 hour', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), repeat('a', 64)) RETURNING id, request_hash",
            (ref, ref + "-R1")).fetchone()
    assert number is not None
    assert number[1] != "a" * 64, "the database computes the hash"
    shown = team.bob.run("-o", "json", "approvals", "show", str(number[0]), "-p", "desk-a",
                         expect=0).json()
    assert shown["amount"] == "110.00"
    team.bob.run("approve", str(number[0]), "--yes", "-p", "desk-a", expect=0)
    sent = team.alice.run("refund", ref, "--amount", "450", "--new-ref", ref + "-R1",
                          "--reason", "parcel lost", "--yes", "--approval", str(number[0]),
                          "-p", "desk-a", expect=5)
    assert "does not match" in sent.stderr, sent
    assert "amount" in sent.stderr, sent

    def spend(db: psycopg.Connection[Any], entry: int) -> None:
        db.execute("UPDATE walletctl.approvals SET state = 'spent', spent_at = 'x', "
                   "spent_entry = %s WHERE id = %s", (entry, number[0]))

    with pytest.raises(psycopg.Error, match="approved another movement"):
        _append(team, "alice", {"operation": "refund", "original_ref": ref,
                                "new_ref": ref + "-R1", "amount": "450.00",
                                "reason": "parcel lost", "approval": number[0]}, before=spend)
    assert _approved(team, ref) == []
    # what was approved can still be sent, once
    team.alice.run("refund", ref, "--amount", "110.00", "--new-ref", ref + "-R1", "--reason",
                   "parcel lost", "--yes", "--approval", str(number[0]), "-p", "desk-a",
                   expect=0)
    assert _approved(team, ref) == ["110.00"]


def test_a_batch_approval_binds_rows_not_a_batch_id(team: Team, tmp_path: Path) -> None:
    """Item 3: rows appended to an approved batch, another file under its batch id, and a
    row sent after the approval expired."""
    _policy(team, "approvals.refund", "100.00")
    refs = [team.desk.sale(unique("O"), "500.00") for _ in range(4)]
    batch = tmp_path / "b.csv"
    batch.write_text("ref,amount,currency\n"
                     f"{refs[0]},105.00,EUR\n{refs[1]},50.00,EUR\n")
    run = ("refund", "--batch", str(batch), "--batch-id", "nightly", "--yes", "-p", "desk-a")
    filed = team.alice.run(*run, expect=12)
    number = filed.stderr.split("filed as approval #")[1].split()[0].rstrip(":;,")
    shown = team.bob.run("-o", "json", "approvals", "show", number, "-p", "desk-a",
                         expect=0).json()
    assert shown["batch_detail"]["rows"] == [
        {"line": 2, "ref": refs[0], "amount": "105.00", "currency": "EUR"}], shown
    team.bob.run("approve", number, "--yes", "-p", "desk-a", expect=0)
    team.alice.run(*run, "--approval", number, expect=0)
    assert [_approved(team, r) for r in refs[:2]] == [["105.00"], ["50.00"]]
    # appended: the client sees another file; psql under the batch's id: not a bound row
    with batch.open("a") as fh:
        fh.write(f"{refs[2]},450.00,EUR\n")
    team.alice.run(*run, "--approval", number, expect=5)
    for ref, amount in ((refs[2], "450.00"), (refs[0], "105.00")):  # new; and used already
        with pytest.raises(psycopg.Error, match="does not cover this row"):
            _append(team, "alice", {"operation": "refund", "original_ref": ref,
                                    "new_ref": ref + "-Z", "amount": amount,
                                    "batch_id": "nightly", "approval": int(number)})
    # expiry is checked at every row: the owner's maintenance path moves it into the past
    with team.cluster.connect("desk_owner", team.db) as db, db.transaction():
        db.execute("ALTER TABLE walletctl.approvals DISABLE TRIGGER approvals_guard")
        db.execute("UPDATE walletctl.approvals SET expires_at = '2000-01-01T00:00:00.000Z' "
                   "WHERE id = %s", (int(number),))
        db.execute("ALTER TABLE walletctl.approvals ENABLE TRIGGER approvals_guard")
    with pytest.raises(psycopg.Error, match="expired"):
        _append(team, "alice", {"operation": "refund", "original_ref": refs[3],
                                "new_ref": refs[3] + "-Z", "amount": "105.00",
                                "batch_id": "nightly", "approval": int(number)})
    assert [_approved(team, r) for r in refs[2:]] == [[], []]


@pytest.fixture
def carol(team: Team) -> Operator:
    from .conftest import person

    team.owner.run("history", "setup", "--grant", "carol", "--role", "auditor", expect=0)
    return person(team.desk, team.cluster, team.db, "carol",
                  Path(team.owner.env["HOME"]).parent / "carol")


def test_roles_an_auditor_reads_and_writes_nothing(team: Team, carol: Operator) -> None:
    """Item 4: the read-only role for recon cannot decide approvals (nor write anything)."""
    _policy(team, "approvals.refund", "100.00")
    ref = team.desk.sale(unique("AU"), "500.00")
    number = str(team.alice.run("-o", "json", "refund", ref, "--amount", "150.00", "--yes",
                                "-p", "desk-a", expect=12).json()["approval"]["id"])
    refused = carol.run("approve", number, "--yes", "-p", "desk-a")
    assert refused.code != 0, refused
    assert "Traceback" not in refused.stderr, refused
    for argv in (("history",), ("history", "verify"), ("approvals",),
                 ("history", "policy", "show")):
        carol.run(*argv, "-p", "desk-a", expect=0)
    carol.run("refund", ref, "--amount", "5.00", "--yes", "-p", "desk-a", expect=3)
    with team.cluster.connect("carol", team.db) as db:
        for sql in ("UPDATE walletctl.approvals SET state = 'approved', decided_by = 'carol'",
                    "INSERT INTO walletctl.policy (key, value) VALUES ('approval_hours', '1')",
                    "INSERT INTO walletctl.roles (role, kind) VALUES ('carol', 'approver')",
                    "DELETE FROM walletctl.events"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                db.execute(sql)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _append(team, "carol", {"operation": "refund", "original_ref": ref, "amount": "1.00"})
    state = team.bob.run("-o", "json", "approvals", "show", number, "-p", "desk-a",
                         expect=0).json()["state"]
    assert state == "pending"
    # an operator who is not an approver decides nothing either
    team.owner.run("history", "setup", "--grant", "carol", "--role", "operator", expect=0)
    decided = carol.run("approve", number, "--yes", "-p", "desk-a")
    assert decided.code == 3, decided
    assert "permission denied" in decided.stderr, decided
    assert "--role operator|approver|auditor" in decided.stderr, decided


def test_policy_changes_only_by_the_owner_each_in_the_chain(team: Team) -> None:
    _policy(team, "approvals.refund", "100.00")
    team.owner.run("history", "policy", "set", "approvals.refund", "80", expect=0)
    shown = team.alice.run("-o", "json", "history", "policy", "show", expect=0).json()
    assert [(r["key"], r["value"], r["setBy"]) for r in shown["rules"]] == [
        ("approvals.refund", "80", "desk_owner")]
    mine = team.alice.run("history", "policy", "unset", "approvals.refund", expect=5)
    assert "only the history's owner" in mine.stderr, mine
    bad = team.owner.run("history", "policy", "set", "limits.refund", "1e3", expect=2)
    assert "limits.refund: must be an amount" in bad.stderr, bad
    with team.cluster.connect("alice", team.db) as db, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("DELETE FROM walletctl.policy")
    # the owner by psql, without the chain entry: refused at commit
    with team.cluster.connect("desk_owner", team.db) as db, \
            pytest.raises(psycopg.Error, match="written with its entry"):
        db.execute("UPDATE walletctl.policy SET value = '100000'")
    steps = [e for e in team.owner.run("-o", "json", "history", expect=0).json()
             if e["operation"] == "policy"]
    assert [(s["operator"], s["note"]) for s in steps] == [
        ("desk_owner", "policy approvals.refund: (unset) -> 100.00"),
        ("desk_owner", "policy approvals.refund: 100.00 -> 80")]
    team.owner.run("history", "verify", expect=0)


def test_one_insert_cannot_wedge_the_history(team: Team) -> None:
    """Item 5: a begin event numbered 2**63 - 1 is refused; everyone goes on."""
    ref = team.desk.sale(unique("W"), "50.00")
    with pytest.raises(psycopg.Error, match="not the next entry"):
        _append(team, "alice", {"operation": "note", "outcome": "refused"},
                entry=9223372036854775807)
    team.bob.run("refund", ref, "--amount", "5.00", "--yes", "-p", "desk-a", expect=0)
    assert _approved(team, ref) == ["5.00"]
    team.owner.run("history", "verify", expect=0)


def test_the_request_hash_is_the_databases(team: Team) -> None:
    """The database's hash of a request is the one walletctl computes for a local file."""
    from walletctl.history.approvals import Request

    request = Request(kind="single", profile="p", base_url="u", merchant_id="M-1001",
                      store_id="S-01", operation="refund", original_ref="Ö-1 \"q\"",
                      new_ref="Ö-1-R1", amount="1.00", currency="EUR", reason="ünïcode \\")
    with team.cluster.connect("alice", team.db) as db:
        row = db.execute(
            "INSERT INTO walletctl.approvals (kind, merchant_id, store_id, operation, "
            "original_ref, new_ref, amount, currency, reason, created_at, expires_at, "
            "request_hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 'x', to_char(now() + "
            "interval '1 hour', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), %s) RETURNING request_hash",
            (request.kind, request.merchant_id, request.store_id, request.operation,
             request.original_ref, request.new_ref, request.amount, request.currency,
             request.reason, GENESIS)).fetchone()
    assert row is not None
    assert row[0] == request.digest(), json.dumps(row)
