"""The desk's rules hold on every path into the history (issue 44): each attack tried with a
few lines of Python (psycopg) or psql as the role that wants around the rules — alice, an
operator and approver; bob, an approver who is not an operator; carol, an auditor; and the
database's owner — and refused by the database's own error (migrations/V6.sql)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_fixtures import PgDesk
from walletctl.history.chain import Tip

from .conftest import Team

ROW: dict[str, Any] = {"time": "2026-11-25T10:00:00.000Z", "os_user": "x", "host": "h",
                       "profile": "desk-a", "base_url": "http://x", "merchant_id": "M-1001",
                       "store_id": "S-01", "currency": "EUR"}
OWNER = "desk_owner"
SOON = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@pytest.fixture
def rules(pg_desk: PgDesk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PgDesk:
    """A desk whose owner set it up: alice operates and approves, bob approves only, carol
    audits; the rulebook asks an approval above 100 EUR on a refund, a reason for every one."""
    from walletctl.config.dburl import parse_db_url
    from walletctl.history.postgres import setup

    monkeypatch.setenv("PGPASSFILE", str(pg_desk.cluster.write_pgpass(tmp_path, OWNER)))
    url = parse_db_url(pg_desk.url(OWNER))
    setup(url, ["alice"], "operator")
    setup(url, ["alice", "bob"], "approver")
    setup(url, ["carol"], "auditor")
    for key, value in (("approvals.refund", "100"), ("require_reason", "refund")):
        _as(pg_desk, OWNER, _policy(key, value))
    return pg_desk


def _policy(key: str, value: str) -> Any:
    def change(db: psycopg.Connection[Any], tip: Tip) -> None:
        db.execute("INSERT INTO walletctl.policy (key, value) VALUES (%s, %s)", (key, value))
        tip.append("begin", None, {**ROW, "operation": "policy", "original_ref": key,
                                   "outcome": "approved"}, True)
    return change


def _as(desk: PgDesk, role: str, step: Any) -> None:
    """``step(db, tip)`` in one transaction as ``role``, the chain's hashes made right (so
    that only the database's rules can refuse what it writes)."""
    with desk.connect(role) as db, db.transaction():
        db.execute("SET search_path = walletctl")
        tip = Tip(db, lambda sql: sql.replace("?", "%s"), role)
        step(db, tip)
        tip.write()


def _begin(desk: PgDesk, role: str, **row: Any) -> int:
    found: list[int] = []
    _as(desk, role, lambda db, tip: found.append(tip.append("begin", None, {**ROW, **row}, True)))
    return found[0]


def _complete(desk: PgDesk, role: str, entry: int, outcome: str) -> None:
    _as(desk, role, lambda db, tip: tip.append(
        "complete", entry, {"time": ROW["time"], "outcome": outcome}, True))


def _refund(ref: str, amount: str, **more: Any) -> dict[str, Any]:
    return {"operation": "refund", "original_ref": ref, "new_ref": f"{ref}-R1",
            "amount": amount, **more}


def _entries(desk: PgDesk) -> list[tuple[Any, ...]]:
    with desk.connect(OWNER) as db:
        return db.execute("SELECT entry, operation, o.outcome FROM walletctl.entry_outcome o "
                          "JOIN walletctl.events USING (entry) WHERE kind = 'begin' "
                          "AND operation = 'refund' ORDER BY entry").fetchall()


def test_a_movement_born_complete_is_refused(rules: PgDesk) -> None:
    """alice's 400 EUR refund recorded as a begin event already `approved`, with no approval
    and no reason; bob (no operator) recording an approved 999 refund the same way."""
    with pytest.raises(psycopg.errors.CheckViolation, match="is begun approved"):
        _begin(rules, "alice", **_refund("O-1", "400.00", outcome="approved", exit_code=0))
    with pytest.raises(psycopg.errors.CheckViolation, match="bob is not an operator"):
        _begin(rules, "bob", **_refund("O-2", "999.00", outcome="approved"))
    with pytest.raises(psycopg.errors.CheckViolation, match="bob is not an operator"):
        _begin(rules, "bob", **_refund("O-2", "999.00"))
    # born refused with a gateway answer is no refusal before sending
    with pytest.raises(psycopg.errors.CheckViolation, match="is begun refused"):
        _begin(rules, "alice", **_refund("O-3", "400.00", outcome="refused", http_status=200))
    # an operation spelt otherwise, carrying money, is held to the same rule
    with pytest.raises(psycopg.errors.CheckViolation, match="is begun approved"):
        _begin(rules, "alice", **_refund("O-4", "400.00", operation="Refund",
                                         outcome="approved"))
    # unsent, it meets the rulebook (events_rulebook, V3): no reason, then no approval
    with pytest.raises(psycopg.errors.CheckViolation, match="needs a reason"):
        _begin(rules, "alice", **_refund("O-5", "400.00"))
    with pytest.raises(psycopg.errors.CheckViolation, match="names no approval"):
        _begin(rules, "alice", **_refund("O-5", "400.00", reason="customer"))
    assert _entries(rules) == []


def test_a_refused_entry_never_becomes_money_moved(rules: PgDesk) -> None:
    """The variant: a request recorded refused (pending approval), an `approved` completion
    appended to it; and bob settling alice's entry."""
    pending = _begin(rules, "alice", **_refund("O-6", "400.00", reason="r", outcome="refused",
                                               exit_code=12))
    for outcome in ("approved", "unknown", "refused"):
        with pytest.raises(psycopg.errors.CheckViolation, match="takes no outcome"):
            _complete(rules, "alice", pending, outcome)
    sent = _begin(rules, "alice", **_refund("O-7", "40.00", reason="r"))
    with pytest.raises(psycopg.errors.CheckViolation, match="bob is not an operator"):
        _complete(rules, "bob", sent, "approved")
    _complete(rules, "alice", sent, "declined")
    with pytest.raises(psycopg.errors.CheckViolation, match="is declined: its outcome never"):
        _complete(rules, "alice", sent, "approved")
    _complete(rules, "alice", sent, "declined")  # said again: allowed
    assert _entries(rules) == [(pending, "refund", "refused"), (sent, "refund", "declined")]


def test_one_statement_of_several_movements_is_refused_whole_when_a_later_one_breaks_a_rule(
        rules: PgDesk) -> None:
    """The rulebook and settling triggers (V9) look only at the rows of a statement that could
    break a rule: several events in one INSERT, the first ones lawful and a later one not,
    are refused together, whichever rule the later one breaks and wherever it stands."""
    fine = [_refund(f"S-{i}", "40.00", reason="r") for i in range(3)]
    cases: list[tuple[list[dict[str, Any]], str]] = [
        ([*fine, _refund("S-9", "400.00", reason="r")], "names no approval"),
        ([*fine, _refund("S-9", "40.00")], "needs a reason"),
        ([fine[0], _refund("S-9", "400.00", reason="r", outcome="approved"), fine[1]],
         "is begun approved"),
        ([*fine, {**_refund("S-9", "40.00", reason="r"), "operation": "Refund",
                  "outcome": "approved"}], "is begun approved"),
    ]
    for rows, why in cases:
        def several(db: psycopg.Connection[Any], tip: Tip, rows: list[dict[str, Any]] = rows,
                    ) -> None:
            for row in rows:
                tip.append("begin", None, {**ROW, **row}, True)
        with pytest.raises(psycopg.errors.CheckViolation, match=why):
            _as(rules, "alice", several)
    assert _entries(rules) == []
    # the completions of one statement: two lawful, then one of an entry recorded refused
    sent = [_begin(rules, "alice", **_refund(f"C-{i}", "40.00", reason="r")) for i in range(2)]
    pending = _begin(rules, "alice", **_refund("C-9", "400.00", reason="r",
                                               outcome="refused", exit_code=12))

    def settle(db: psycopg.Connection[Any], tip: Tip) -> None:
        for entry in (*sent, pending):
            tip.append("complete", entry, {"time": ROW["time"], "outcome": "approved"}, True)
    with pytest.raises(psycopg.errors.CheckViolation, match="takes no outcome"):
        _as(rules, "alice", settle)
    assert [row[2] for row in _entries(rules)] == ["unknown", "unknown", "refused"]
    # the same statement without the unlawful row goes through, every row of it
    _as(rules, "alice", lambda db, tip: [tip.append(
        "complete", entry, {"time": ROW["time"], "outcome": "approved"}, True)
        for entry in sent])
    assert [row[2] for row in _entries(rules)] == ["approved", "approved", "refused"]


def test_control_characters_are_refused_in_every_text_field(rules: PgDesk) -> None:
    """An escape sequence in a reason (it redrew the approver's screen), a bidi override in
    a reference, a C1 control in a request: refused by the tables' CHECKs, whoever writes."""
    for text in ("ok\x1b[2J\x1b[Hamount: 45.00 EUR", "O-\u202e9", "a\x9bb", "x\ny"):
        with pytest.raises(psycopg.errors.CheckViolation, match="_plain"):
            _begin(rules, "alice", **_refund("O-8", "40.00", reason=text))
    with rules.connect("alice") as db, pytest.raises(psycopg.errors.CheckViolation,
                                                     match="approvals_reason_plain"):
        db.execute(
            "INSERT INTO walletctl.approvals (kind, merchant_id, store_id, operation, amount, "
            "currency, reason, created_at, expires_at, request_hash) VALUES ('single', 'M', "
            "'S', 'refund', '4500.00', 'EUR', %s, '', %s, %s)",
            ("\x1b[1Aamount: 45.00 EUR", SOON, "0" * 64))
    # ordinary text, accents and all, is kept
    _begin(rules, "alice", **_refund("O-9", "40.00", reason="Kundin möchte Rückerstattung"))


def test_statements_no_row_trigger_sees_are_refused_even_for_the_owner(rules: PgDesk) -> None:
    for table in ("policy", "roles", "findings", "entry_outcome", "schema_version",
                  "events", "approvals", "approval_rows"):
        with rules.connect(OWNER) as db, pytest.raises(psycopg.errors.InsufficientPrivilege,
                                                       match="refused"):
            db.execute(f"TRUNCATE walletctl.{table} CASCADE")
    with rules.connect(OWNER) as db, pytest.raises(psycopg.errors.InsufficientPrivilege,
                                                   match=r"DELETE of walletctl\.findings"):
        db.execute("DELETE FROM walletctl.findings")
    with rules.connect(OWNER) as db:
        assert db.execute("SELECT count(*) FROM walletctl.policy").fetchone() == (2,)
    # the others may not even try (no privilege), the auditor included
    for role in ("alice", "bob", "carol"):
        with rules.connect(role) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("TRUNCATE walletctl.policy")


def test_policy_currency_keys_are_iso_4217(rules: PgDesk) -> None:
    with pytest.raises(psycopg.errors.CheckViolation, match="policy_key_currency"):
        _as(rules, OWNER, _policy("approvals.capture.ZZZ", "10"))
    _as(rules, OWNER, _policy("approvals.capture.JPY", "1000"))


def test_the_database_sets_a_requests_expiry(rules: PgDesk) -> None:
    """A request filed by psql asking to live 29 days lives the desk's approval_hours."""
    _as(rules, OWNER, _policy("approval_hours", "2"))
    with rules.connect("alice") as db:
        row = db.execute(
            "INSERT INTO walletctl.approvals (kind, merchant_id, store_id, operation, amount, "
            "currency, created_at, expires_at, request_hash) VALUES ('single', 'M', 'S', "
            "'refund', '400.00', 'EUR', '', to_char((now() + interval '29 days') AT TIME ZONE "
            "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), %s) RETURNING "
            "expires_at::timestamptz - now()", ("0" * 64,)).fetchone()
    assert row is not None
    assert row[0].total_seconds() == pytest.approx(2 * 3600, abs=2), row


def test_a_finding_with_no_desk_entry_is_resolved_by_another_approver(rules: PgDesk) -> None:
    """alice records the finding about money moved off the desk (nobody's entry), then
    tries to close it herself; bob may."""
    def record(db: psycopg.Connection[Any], tip: Tip) -> None:
        entry = tip.append("begin", None, {**ROW, "operation": "finding", "original_ref": "O-9",
                                           "new_ref": "O-9-X", "outcome": "approved"}, True)
        tip.write()
        db.execute("INSERT INTO walletctl.findings (id, merchant_id, store_id, kind, original,"
                   " reference, entry, detail, recorded_at, state) VALUES (%s, 'M-1001', "
                   "'S-01', 'unrecorded', 'O-9', 'O-9-X', 0, 'refund 400.00 EUR', '', 'open')",
                   (entry,))

    _as(rules, "alice", record)

    def resolve(db: psycopg.Connection[Any], tip: Tip) -> None:
        entry = tip.append("begin", None, {**ROW, "operation": "resolve", "original_ref": "O-9",
                                           "new_ref": "O-9-X", "outcome": "approved"}, True)
        tip.write()
        db.execute("UPDATE walletctl.findings SET state = 'resolved', resolution = 'fine', "
                   "resolved_entry = %s", (entry,))

    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="recorded by alice"):
        _as(rules, "alice", resolve)
    _as(rules, "bob", resolve)
    with rules.connect("carol") as db:
        assert db.execute("SELECT recorded_by, resolved_by FROM walletctl.findings"
                          ).fetchone() == ("alice", "bob")


def test_psql_as_alice_meets_the_same_refusals(rules: PgDesk, tmp_path: Path) -> None:
    """The same through psql, the client an operator has at hand."""
    env = {**rules.cluster.env_for("alice", tmp_path / "alice"), "PATH": "/usr/bin:/bin"}
    for sql, said in (
            ("UPDATE walletctl.events SET outcome = 'approved'", "permission denied"),
            ("INSERT INTO walletctl.policy (key, value) VALUES ('approvals.capture.ZZZ', '1')",
             "permission denied"),
            ("TRUNCATE walletctl.findings", "permission denied"),
            ("INSERT INTO walletctl.approvals (kind, merchant_id, store_id, operation, "  # noqa: S608 - a constant of the test
             "created_at, expires_at, request_hash, reason) VALUES ('single', 'M', 'S', "
             f"'refund', '', '{SOON}', repeat('0', 64), E'x\\u202ey')",
             "approvals_reason_plain")):
        done = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", rules.url("alice"),
                               "-c", sql], env=env, capture_output=True, text=True,
                              timeout=30, check=False)
        assert done.returncode != 0, (sql, done.stderr)
        assert said in done.stderr, (sql, done.stderr)


def test_an_approver_sees_what_the_database_bound(
        rules: PgDesk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A batch request filed by Python saying "(2 rows, 250.00 EUR)" over 20 bound rows of
    499.00: bob's summary, full view and confirmation read 20 rows, 9,980.00 EUR."""
    from walletctl.config.dburl import parse_db_url
    from walletctl.history import approvals
    from walletctl.history.postgres import PostgresHistory
    from walletctl.render.approvals import render_request

    with rules.connect("alice") as db, db.transaction():
        row = db.execute(
            "INSERT INTO walletctl.approvals (kind, merchant_id, store_id, operation, "
            "batch_file, batch_sha256, batch_rows, batch_totals, created_at, expires_at, "
            "request_hash) VALUES ('batch', 'M-1001', 'S-01', 'refund', 'small.csv', %s, 2, "
            "'250.00 EUR', '', %s, %s) RETURNING id",
            ("a" * 64, SOON, "0" * 64)).fetchone()
        assert row is not None
        for line in range(1, 21):
            db.execute("INSERT INTO walletctl.approval_rows VALUES (%s, %s, %s, '499.00', "
                       "'EUR')", (row[0], line, f"O-{line}"))
    monkeypatch.setenv("PGPASSFILE", str(rules.cluster.write_pgpass(tmp_path, "bob")))
    with PostgresHistory(parse_db_url(rules.url("bob"))) as store:
        found = approvals.get(store, int(row[0]))
    assert found is not None
    assert found.what() == ("refund batch small.csv (20 bound rows above the approval amount,"
                            " 9,980.00 EUR)"), found
    render_request("table", found, "2026-01-01T00:00:00.000Z")
    shown = capsys.readouterr().out
    assert "9,980.00 EUR" in shown, shown
    assert "250.00" not in shown, shown


def test_the_gateway_holds_no_money_the_desk_did_not_allow(
        team: Team, tmp_path: Path) -> None:
    """The team's desk (walletctl as alice, bob and the owner, a real sandbox gateway): a
    refund above the approval amount is filed, not sent; alice's Python recording it as done,
    or completing her pending entry as approved, is refused; money she moves with another
    config (no team history) is named by recon."""
    from money.conftest import unique

    for key, value in (("approvals.refund", "100.00"), ("require_reason", "refund")):
        team.owner.run("history", "policy", "set", key, value, expect=0)
    ref = team.desk.sale(unique("AT"), "500.00")
    team.alice.run("refund", ref, "--amount", "400.00", "--reason", "damaged", "--yes",
                   "-p", "desk-a", expect=12)
    [pending] = team.alice.run("-o", "json", "history", "--ref", ref, expect=0).json()
    assert pending["outcome"] == "refused", pending
    alice = PgDesk(team.cluster, team.db)
    with pytest.raises(psycopg.errors.CheckViolation, match="is begun approved"):
        _begin(alice, "alice", **_refund(ref, "400.00", merchant_id=team.desk.merchant_id,
                                         store_id=team.desk.store_id, outcome="approved"))
    with pytest.raises(psycopg.errors.CheckViolation, match="takes no outcome"):
        _complete(alice, "alice", pending["id"], "approved")
    assert not _refunds(team, ref)
    team.bob.run("-p", "desk-a", "recon", "--ref", ref, expect=0)
    # another config: her own local history, none of the team's
    team.alice.run("refund", ref, "--amount", "400.00", "--reason", "x", "--yes", "-p",
                   "desk-a", expect=0, env={"WALLETCTL_HISTORY_URL": "",
                                            "WALLETCTL_AUDIT_LOG": str(tmp_path / "own.db")})
    assert _refunds(team, ref) == ["400.00"]
    found = team.bob.run("-p", "desk-a", "-o", "json", "recon", "--ref", ref,
                         expect=13).json()
    assert [f["kind"] for f in found["unrecorded"]] == ["unrecorded"], found
    # the owner's maintenance path (triggers disabled) writes it in as moved: recon and
    # `order` still name it, money moved above the approval amount with no approval
    [record] = [r for r in team.desk.followups(ref, "refund") if r.get("state") == "Approved"]

    def write_in(db: psycopg.Connection[Any], tip: Tip) -> None:
        db.execute("ALTER TABLE walletctl.events DISABLE TRIGGER events_rulebook, "
                   "DISABLE TRIGGER events_settled")
        tip.append("begin", None, {**ROW, "merchant_id": team.desk.merchant_id,
                                   "store_id": team.desk.store_id, "operation": "refund",
                                   "original_ref": ref, "amount": "400.00", "reason": "x",
                                   "new_ref": record["clientSystemTransactionId"]}, True)
        tip.write()
        tip.append("complete", tip.entry, {"time": ROW["time"], "outcome": "approved"}, True)
        tip.write()
        db.execute("ALTER TABLE walletctl.events ENABLE TRIGGER events_rulebook, "
                   "ENABLE TRIGGER events_settled")

    _as(alice, OWNER, write_in)
    for argv in (("recon", "--ref", ref), ("order", ref)):
        named = team.bob.run("-p", "desk-a", *argv, expect=13)
        assert "moved without an approval" in named.stderr + named.stdout, named


def _refunds(team: Team, ref: str) -> list[str]:
    from decimal import Decimal

    return [f'{Decimal(r["transactionAmount"]).scaleb(-2):.2f}'
            for r in team.desk.followups(ref, "refund") if r.get("state") == "Approved"]
