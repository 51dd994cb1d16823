"""One history entry per money movement, whatever journals do (driven from outside)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from .conftest import WALLETCTL, Desk, unique


def _rows(path: Path, orders: list[str]) -> Path:
    path.write_text("ref,amount,currency\n" + "".join(f"{o},5.00,EUR\n" for o in orders))
    return path


def test_two_journals_over_the_same_file_record_each_refund_once(desk: Desk) -> None:
    """The same CSV run twice with different --journal files (two desks' copies of one job):
    the same derived references, one refund each at the gateway, one history entry each."""
    orders = [desk.sale(unique(f"TWO{i}"), "50.00") for i in range(6)]
    rows = _rows(desk.tmp / "refunds.csv", orders)
    for journal in ("one.journal", "two.journal"):
        desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes",
                 "--journal", str(desk.tmp / journal), expect=0)
    refunds = {o: desk.followups(o, "refund") for o in orders}
    assert all(len(r) == 1 for r in refunds.values()), refunds
    entries = [e for e in desk.history() if e["operation"] == "refund"]
    per_ref = Counter(e["new_ref"] for e in entries)
    assert sorted(per_ref) == sorted(r[0]["clientSystemTransactionId"]
                                     for r in refunds.values()), per_ref
    assert set(per_ref.values()) == {1}, per_ref
    assert {e["outcome"] for e in entries} == {"approved"}, entries


def test_a_single_refund_then_a_batch_row_for_it_is_held(desk: Desk) -> None:
    """A movement made outside the batch (a desk refund minutes before the nightly file):
    the identical row is held (exit 11, nothing sent), the others go; --allow-duplicate
    sends it."""
    done, other = desk.sale(unique("OUT"), "50.00"), desk.sale(unique("OK"), "50.00")
    desk.run("-p", "desk-b", "refund", done, "--amount", "5", "--yes", expect=0)
    rows = _rows(desk.tmp / "nightly.csv", [done, other])
    out = desk.tmp / "res.ndjson"
    held = desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes",
                    "--results", str(out), expect=11)
    assert f"{done}-REF1" in out.read_text(), held
    assert len(desk.followups(done, "refund")) == 1
    assert len(desk.followups(other, "refund")) == 1
    desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes", "--allow-duplicate",
             expect=0)
    assert len(desk.followups(done, "refund")) == 2
    assert len(desk.followups(other, "refund")) == 1


def test_two_desks_with_their_own_history_files_still_move_money_once(desk: Desk) -> None:
    """Two operators on one machine, each with their own history file (WALLETCTL_AUDIT_LOG):
    the per-order lock lives beside each history, so they do not take turns; still one
    refund: the second either sees the first's refund at the gateway (not in its own
    history) or sends the same reference and is told the gateway replayed the first's
    answer; either way it claims nothing (exit 11)."""
    order = desk.sale(unique("TWOH"), "50.00")
    argv = ("-p", "desk-a", "refund", order, "--amount", "5", "--yes")
    procs = [subprocess.Popen([*WALLETCTL, *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              env={**desk.env, "WALLETCTL_AUDIT_LOG": str(desk.tmp / f"h{i}")})
             for i in range(2)]
    results = [desk.finish(p, argv) for p in procs]
    story = "".join(map(str, results))
    assert sorted(r.code for r in results) == [0, 11], story
    assert len(desk.followups(order, "refund")) == 1, story
    held = next(r for r in results if r.code == 11)
    assert f"{order}-REF1" in held.stderr
    assert ("not made through this history" in held.stderr
            or "stored answer of an earlier identical request" in held.stderr), held


def test_a_409_after_forward_is_looked_up_and_reported_applied(desk: Desk) -> None:
    """A gateway that answers 409 (reference already used) to the request it has just
    applied: not a refusal; one lookup of the reference shows this very refund, so it is
    reported already applied (exit 0) and recorded so, one entry, sent once."""
    order = desk.sale(unique("C409"), "50.00")
    argv = ("-p", "desk-a", "-o", "json", "refund", order, "--amount", "5", "--yes")
    desk.proxy.status_after_forward(409)
    first = desk.run(*argv, expect=0)
    assert first.json()["alreadyApplied"] is True, first
    assert [(e["outcome"], e["http_status"]) for e in desk.history()] == [("approved", 409)]
    assert len(desk.proxy.posts()) == 1, first
    assert len(desk.followups(order, "refund")) == 1
