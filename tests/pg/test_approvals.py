"""Four eyes on a team's shared history: a refund above the profile's approval amount is
filed, not sent; only another operator (another database role) approves it; the requester
sends exactly what was approved, once, before it expires. The database refuses what the
client would, for a client that skips walletctl (psql)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import psycopg
import pytest
import tomli_w

from money.conftest import unique

from .conftest import Operator, Team


def with_approvals(person: Operator, profile: str = "desk-a", **amounts: str) -> None:
    """Set ``[history.approvals]`` in ``person``'s own profiles file."""
    path = Path(person.env["WALLETCTL_CONFIG"])
    doc = tomllib.loads(path.read_text())
    doc["profiles"][profile].setdefault("history", {})["approvals"] = amounts
    path.write_text(tomli_w.dumps(doc))


def _approved_refunds(team: Team, ref: str) -> list[dict[str, Any]]:
    return [r for r in team.desk.followups(ref, "refund") if r.get("state") == "Approved"]


@pytest.fixture
def four_eyes(team: Team) -> Team:
    for person in (team.alice, team.bob):
        with_approvals(person, refund="100.00")
    return team


def test_a_refund_above_the_amount_needs_another_operator(four_eyes: Team) -> None:
    team = four_eyes
    alice, bob = team.alice, team.bob
    ref = team.desk.sale(unique("ORD"), "300.00")
    refund = ("refund", ref, "--amount", "150.00", "--reason", "damaged", "--yes", "-p", "desk-a")
    filed = alice.run("-o", "json", *refund, expect=12)
    request = filed.json()["approval"]
    number = str(request["id"])
    assert request["state"] == "pending", request
    assert request["requester"] == "alice", request
    assert (request["amount"], request["currency"], request["original_ref"]) == (
        "150.00", "EUR", ref)
    assert f"walletctl approve {number}" in filed.stderr, filed
    assert _approved_refunds(team, ref) == [], "nothing may reach the gateway"
    # below the amount: no approval needed
    alice.run("refund", ref, "--amount", "20.00", "--yes", "-p", "desk-a", expect=0)

    # the requester cannot approve (nor refuse) their own request
    own = alice.run("approve", number, "--yes", "-p", "desk-a", expect=5)
    assert "alice filed it and may not approve it" in own.stderr, own
    # nor send it before it is approved
    early = alice.run(*refund, "--approval", number, expect=5)
    assert "still pending" in early.stderr, early

    listed = bob.run("-o", "json", "approvals", "--state", "pending", "-p", "desk-a",
                     expect=0).json()
    assert [a["id"] for a in listed] == [int(number)], listed
    done = bob.run("-o", "json", "approve", number, "--yes", "-p", "desk-a", expect=0).json()
    assert (done["state"], done["decided_by"], done["approver"]) == ("approved", "bob", "bob")

    # only what was approved: another amount, another reason
    for changed, field in ((("--amount", "149.00"), "amount"),
                           (("--reason", "other"), "reason")):
        argv = list(refund)
        at = argv.index(changed[0])
        argv[at + 1] = changed[1]
        wrong = alice.run(*argv, "--approval", number, expect=5)
        assert "does not match" in wrong.stderr, wrong
        assert field in wrong.stderr, wrong
    # bob approved it; only alice, who asked, sends it
    other = bob.run(*refund, "--approval", number, expect=5)
    assert "only they send it" in other.stderr, other
    assert len(_approved_refunds(team, ref)) == 1  # the 20.00 one

    sent = alice.run(*refund, "--approval", number, expect=0)
    assert len(_approved_refunds(team, ref)) == 2, sent
    again = alice.run(*refund, "--approval", number, expect=5)
    assert "is spent" in again.stderr, again
    assert len(_approved_refunds(team, ref)) == 2

    spent = bob.run("-o", "json", "approvals", "show", number, "-p", "desk-a", expect=0).json()
    assert spent["state"] == "spent", spent
    assert spent["spent_entry"], spent
    history = alice.run("-o", "json", "history", "--ref", ref, expect=0).json()
    steps = [(e["operation"], e["outcome"], e["exit_code"], e["operator"], e["approval"])
             for e in history]
    n = int(number)
    assert ("refund", "refused", 12, "alice", n) in steps, steps  # filed
    assert ("approval", "approved", 0, "bob", n) in steps, steps  # approved
    assert ("refund", "approved", 0, "alice", n) in steps, steps  # spent and sent
    alice.run("history", "verify", expect=0)
    # the filing and the decision moved nothing: the gateway and the history agree
    recon = bob.run("-o", "json", "recon", "--ref", ref, "-p", "desk-a", expect=0).json()
    assert recon["agrees"], recon


def test_the_database_keeps_the_rules_for_any_client(four_eyes: Team) -> None:
    """psql as alice or bob: no self-approval, no changed request, no second spend, no
    delete; and an event cannot claim an approval it did not spend."""
    team = four_eyes
    ref = team.desk.sale(unique("ORD"), "300.00")
    filed = team.alice.run("-o", "json", "refund", ref, "--amount", "120.00", "--yes",
                           "-p", "desk-a", expect=12).json()["approval"]
    number = filed["id"]

    def as_role(role: str, sql: str, *args: Any) -> None:
        with team.cluster.connect(role, team.db) as db:
            db.execute(sql, args)

    refused = psycopg.errors.InsufficientPrivilege
    with pytest.raises(refused, match="may not decide it"):
        as_role("alice", "UPDATE walletctl.approvals SET state = 'approved', "
                         "decided_by = 'alice' WHERE id = %s", number)
    # the request itself: no grant for an operator, a trigger for the owner too
    with pytest.raises(refused, match="permission denied"):
        as_role("bob", "UPDATE walletctl.approvals SET amount = '1.00' WHERE id = %s", number)
    with pytest.raises(refused, match="cannot be changed"):
        as_role("desk_owner", "UPDATE walletctl.approvals SET amount = '1.00' WHERE id = %s",
                number)
    with pytest.raises(refused, match="not alice"):  # bob deciding in alice's name
        as_role("bob", "UPDATE walletctl.approvals SET state = 'approved', "
                       "decided_by = 'alice' WHERE id = %s", number)
    with pytest.raises(refused, match="filed by the role that authenticated"):
        as_role("bob", "INSERT INTO walletctl.approvals (kind, merchant_id, store_id, "
                       "operation, created_at, expires_at, requester, request_hash) VALUES "
                       "('single', 'M', 'S', 'refund', '', '2999-01-01T00:00:00Z', 'alice', "
                       "repeat('0', 64))")
    for role in ("alice", "bob", "desk_owner"):
        with pytest.raises(refused):
            as_role(role, "DELETE FROM walletctl.approvals")
    team.bob.run("approve", str(number), "--yes", "-p", "desk-a", expect=0)
    with pytest.raises(refused, match="spent by its requester"):
        as_role("bob", "UPDATE walletctl.approvals SET state = 'spent', spent_entry = 1 "
                       "WHERE id = %s", number)
    team.alice.run("refund", ref, "--amount", "120.00", "--yes", "-p", "desk-a",
                   "--approval", str(number), expect=0)
    with pytest.raises(refused, match="it cannot become"):
        as_role("alice", "UPDATE walletctl.approvals SET state = 'approved' WHERE id = %s",
                number)


def test_an_expired_approval_is_refused(four_eyes: Team) -> None:
    team = four_eyes
    ref = team.desk.sale(unique("ORD"), "300.00")
    number = str(team.alice.run("-o", "json", "refund", ref, "--amount", "101.00", "--yes",
                                "-p", "desk-a", expect=12).json()["approval"]["id"])
    team.bob.run("approve", number, "--yes", "-p", "desk-a", expect=0)
    # time passes: the owner's deliberate maintenance path moves the expiry into the past
    with team.cluster.connect("desk_owner", team.db) as db, db.transaction():
        db.execute("ALTER TABLE walletctl.approvals DISABLE TRIGGER approvals_guard")
        db.execute("UPDATE walletctl.approvals SET expires_at = '2000-01-01T00:00:00.000Z' "
                   "WHERE id = %s", (int(number),))
        db.execute("ALTER TABLE walletctl.approvals ENABLE TRIGGER approvals_guard")
    late = team.alice.run("refund", ref, "--amount", "101.00", "--yes", "-p", "desk-a",
                          "--approval", number, expect=5)
    assert "is expired" in late.stderr, late
    assert _approved_refunds(team, ref) == []
    listed = team.bob.run("-o", "json", "approvals", "--state", "expired", "-p", "desk-a",
                          expect=0).json()
    assert [a["id"] for a in listed] == [int(number)]


def test_a_batch_approval_is_bound_to_its_file(four_eyes: Team, tmp_path: Path) -> None:
    team = four_eyes
    refs = [team.desk.sale(unique("B"), "300.00") for _ in range(3)]
    batch = tmp_path / "refunds.csv"
    text = "ref,amount,currency\n" + "".join(
        f"{r},{a},EUR\n" for r, a in zip(refs, ("10.00", "250.00", "20.00"), strict=True))
    batch.write_text(text)
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    filed = team.alice.run(*run, expect=12)
    assert "filed as approval #" in filed.stderr, filed
    number = filed.stderr.split("filed as approval #")[1].split()[0].rstrip(":;,")
    assert all(_approved_refunds(team, r) == [] for r in refs)

    shown = team.bob.run("-o", "json", "approvals", "show", number, "-p", "desk-a",
                         expect=0).json()
    assert shown["kind"] == "batch", shown
    # what the approver is shown is what the database bound: the one row above 100
    assert shown["batch_rows"] == 1, shown
    assert shown["batch_totals"] == "250.00 EUR", shown
    assert shown["batch_detail"]["rows"] == [
        {"line": 3, "ref": refs[1], "amount": "250.00", "currency": "EUR"}], shown
    table = team.bob.run("approvals", "show", number, "-p", "desk-a", expect=0,
                         env={"COLUMNS": "80"})
    assert shown["batch_sha256"] in table.stdout, table
    assert refs[1] in table.stdout, table
    team.bob.run("approve", number, "--yes", "-p", "desk-a", expect=0)

    batch.write_text(text.replace("20.00", "90.00"))  # edited after the approval
    edited = team.alice.run(*run, "--approval", number, expect=5)
    assert "does not match" in edited.stderr, edited
    assert "file sha256" in edited.stderr, edited
    assert all(_approved_refunds(team, r) == [] for r in refs)

    batch.write_text(text)
    team.alice.run(*run, "--approval", number, expect=0)
    assert [len(_approved_refunds(team, r)) for r in refs] == [1, 1, 1]
    # the same batch again (its journal): nothing twice; another batch id: spent
    team.alice.run(*run, "--approval", number, expect=0)
    other = team.alice.run(*run, "--approval", number, "--batch-id", "another-run",
                           "--journal", str(tmp_path / "another.journal"), expect=5)
    assert "is spent" in other.stderr, other
    assert [len(_approved_refunds(team, r)) for r in refs] == [1, 1, 1]
    rows = [e for e in team.alice.run("-o", "json", "history", expect=0).json()
            if e["batch_id"] and e["operation"] == "refund" and e["outcome"] == "approved"]
    assert {e["approval"] for e in rows} == {int(number)}, json.dumps(rows)


def _on_terminal(person: Operator, argv: list[str], answer: str,
                 timeout: float = 60) -> tuple[int, str]:
    """Run walletctl on a real pseudo-terminal; answer its question with ``answer``."""
    import os
    import select
    import subprocess
    import time

    from money.conftest import WALLETCTL

    master, slave = os.openpty()
    env = {**person.desk.env, **person.env, "COLUMNS": "80", "TERM": "dumb"}
    proc = subprocess.Popen([*WALLETCTL, *argv], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    output, answered = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the terminal's other end closed: the process ended
                    break
                if not chunk:
                    break
                output += chunk
                if not answered and b"Proceed" in output:
                    os.write(master, answer.encode() + b"\n")
                    answered = True
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise AssertionError(f"timed out: {output.decode(errors='replace')}")
        return proc.wait(timeout=10), output.decode(errors="replace")
    finally:
        os.close(master)


def test_approving_on_a_terminal_shows_the_request_first(four_eyes: Team) -> None:
    team = four_eyes
    ref = team.desk.sale(unique("ORD"), "300.00")
    number = str(team.alice.run("-o", "json", "refund", ref, "--amount", "180.00",
                                "--reason", "ticket 88", "--yes", "-p", "desk-a",
                                expect=12).json()["approval"]["id"])
    code, screen = _on_terminal(team.bob, ["approve", number, "-p", "desk-a"], "n")
    assert code == 2, screen
    for shown in (ref, f"{ref}-REF1", "180.00 EUR", "ticket 88", "alice", "cancelled"):
        assert shown in screen, (shown, screen)
    assert all(len(line) <= 80 for line in screen.splitlines()), screen
    code, screen = _on_terminal(team.bob, ["approve", number, "-p", "desk-a"], "y")
    assert code == 0, screen
    assert f"approved #{number}" in screen, screen


def test_approving_against_a_production_profile_needs_its_name(four_eyes: Team) -> None:
    team = four_eyes
    for person in (team.alice, team.bob):
        path = Path(person.env["WALLETCTL_CONFIG"])
        doc = tomllib.loads(path.read_text())
        doc["profiles"]["desk-a"]["environment"] = "production"
        path.write_text(tomli_w.dumps(doc))
    ref = team.desk.sale(unique("ORD"), "300.00")
    number = str(team.alice.run("-o", "json", "refund", ref, "--amount", "110.00", "--yes",
                                "-p", "desk-a", expect=12).json()["approval"]["id"])
    piped = team.bob.run("approve", number, "--yes", "-p", "desk-a", expect=2)
    assert "--confirm-profile desk-a" in piped.stderr, piped
    wrong = team.bob.run("approve", number, "--yes", "-p", "desk-a",
                         "--confirm-profile", "desk-b", expect=2)
    assert "does not match" in wrong.stderr, wrong
    pending = team.bob.run("-o", "json", "approvals", "show", number, "-p", "desk-a",
                           expect=0).json()
    assert pending["state"] == "pending", pending
    team.bob.run("approve", number, "--yes", "-p", "desk-a", "--confirm-profile", "desk-a",
                 expect=0)
    sent = team.alice.run("-o", "table", "refund", ref, "--amount", "110.00", "--yes",
                          "-p", "desk-a", "--approval", number, expect=0)
    assert sent.stdout.startswith("PRODUCTION"), sent
