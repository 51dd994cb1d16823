"""The money protocol, driven from outside: ``python -m walletctl`` as real subprocesses against
``walletctl sandbox serve`` on a real port, through the tests' own fault proxy
(:mod:`tests.money.faultproxy`). Every assertion about money reads the gateway's own records
(the sandbox's lookup, never through the proxy), not only walletctl's exit codes.

The contract under test:

* exit 11 = held, nothing was sent: a capture/refund/reversal identical in original,
  operation, amount and currency to one the gateway shows (or the local history holds) from
  the last 10 minutes; stderr names the earlier transaction's reference. ``--allow-duplicate``
  (single and ``--batch``) sends it anyway.
* an unknown outcome (exit 8) is resolved by the next run from ANY profile or URL spelling
  for the same merchant: applied -> reported done, nothing sent; the gateway showing the
  intent's reference as another transaction -> exit 8 "conflict", nothing sent.
"""

from __future__ import annotations

import csv
import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from race_trials import TRIALS

from .conftest import Desk, Result, unique

HELD = 11
UNKNOWN = 8


def _refs(records: list[dict[str, Any]]) -> list[str]:
    return sorted(r["clientSystemTransactionId"] for r in records)


def _write_rows(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["ref", "amount", "currency"])
        writer.writerows(rows)
    return path


def _results(path: Path) -> list[dict[str, Any]]:
    assert path.exists(), f"no results file {path}"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- a. two desks press Enter at the same moment -----------------------------------------------


@pytest.mark.slow
def test_a_two_simultaneous_refunds_exactly_one_goes_through(desk: Desk) -> None:
    trials = TRIALS  # tests/race_trials.py
    orders = [desk.sale(unique(f"SIM{i:02d}"), "50.00") for i in range(trials)]
    problems: list[str] = []
    for order in orders:
        argv = ("-p", "sbx", "refund", order, "--amount", "5", "--yes")
        procs = [desk.popen(*argv), desk.popen(*argv)]
        results = [desk.finish(p, argv) for p in procs]
        refunds = desk.followups(order, "refund")
        codes = sorted(r.code for r in results)
        why: list[str] = []
        if len(refunds) != 1:
            why.append(f"the gateway holds {len(refunds)} refunds: {_refs(refunds)}")
        if codes != [0, HELD]:
            why.append(f"exit codes {codes}, expected [0, {HELD}]")
        else:
            done = next(r for r in results if r.code == 0)
            held = next(r for r in results if r.code == HELD)
            made = done.json().get("clientSystemTransactionId")
            if not made or made not in held.stderr:
                why.append(f"the held run does not name the refund made ({made})")
            if refunds and refunds[0]["clientSystemTransactionId"] != made:
                why.append(f"the gateway's refund {_refs(refunds)} is not the one reported "
                           f"({made})")
        if why:
            problems.append(f"{order}: {'; '.join(why)}{results[0]}{results[1]}")
    assert not problems, (f"{len(problems)} of {trials} trials failed:\n"
                          + "\n".join(problems[:3]))


# -- b. the same movement again, seconds later -------------------------------------------------


@pytest.mark.parametrize(("op", "kind", "amount"), [("refund", "sale", "5"),
                                                     ("capture", "preauth", "10")])
def test_b_the_same_movement_repeated_is_held_until_allowed(desk: Desk, op: str, kind: str,
                                                            amount: str) -> None:
    ref = desk.checkout(unique(f"REP{op[:3].upper()}"), "50.00", kind=kind)
    suffix = "REF" if op == "refund" else "CAP"
    argv = ("-p", "desk-a", op, ref, "--amount", amount, "--yes")
    first = desk.run(*argv, expect=0)
    assert first.json()["clientSystemTransactionId"] == f"{ref}-{suffix}1", first
    posts = len(desk.proxy.posts())
    assert posts == 1, desk.proxy.requests

    held = desk.run(*argv, expect=HELD)
    assert f"{ref}-{suffix}1" in held.stderr, f"the hold must name the earlier one{held}"
    assert len(desk.proxy.posts()) == posts, f"a held {op} sent a POST{held}"
    assert _refs(desk.followups(ref, op)) == [f"{ref}-{suffix}1"], held

    again = desk.run(*argv, "--allow-duplicate", expect=0)
    assert again.json()["clientSystemTransactionId"] == f"{ref}-{suffix}2", again
    moved = desk.followups(ref, op)
    assert _refs(moved) == [f"{ref}-{suffix}1", f"{ref}-{suffix}2"], moved
    assert {r["transactionAmount"] for r in moved} == {int(amount) * 100}, moved


def test_b_another_amount_is_not_a_duplicate(desk: Desk) -> None:
    ref = desk.sale(unique("REPAMT"), "50.00")
    desk.run("-p", "desk-a", "refund", ref, "--amount", "5", "--yes", expect=0)
    desk.run("-p", "desk-a", "refund", ref, "--amount", "6", "--yes", expect=0)
    assert _refs(desk.followups(ref, "refund")) == [f"{ref}-REF1", f"{ref}-REF2"]


def test_b_a_batch_row_repeating_a_recent_refund(desk: Desk) -> None:
    """A batch row identical to a refund made a moment ago outside the batch is not sent;
    ``--allow-duplicate`` on the batch sends it."""
    ref = desk.sale(unique("REPBAT"), "50.00")
    desk.run("-p", "desk-a", "refund", ref, "--amount", "5", "--yes", expect=0)
    rows = _write_rows(desk.tmp / "refunds.csv", [(ref, "5.00", "EUR")])
    out = desk.tmp / "out.ndjson"
    posts = len(desk.proxy.posts())
    held = desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes",
                    "--results", str(out))
    assert held.code != 0, f"a held row is not a success{held}"
    assert len(desk.proxy.posts()) == posts, f"the held row was sent{held}"
    assert len(desk.followups(ref, "refund")) == 1, held
    [row] = _results(out)
    assert row["status"] != "confirmed", (row, str(held))
    assert f"{ref}-REF1" in json.dumps(row) + held.stderr, f"the earlier refund is not named{held}"

    out2 = desk.tmp / "out2.ndjson"
    sent = desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes", "--allow-duplicate",
                    "--results", str(out2), expect=0)
    assert len(desk.followups(ref, "refund")) == 2, sent
    assert [r["status"] for r in _results(out2)] == ["confirmed"], sent


# -- c. commit, drop, and the same command from another desk -----------------------------------


@pytest.mark.parametrize("rerun_profile", ["desk-b", "sbx"])
def test_c_commit_then_drop_rerun_elsewhere_sends_nothing(desk: Desk, rerun_profile: str) -> None:
    ref = desk.preauth(unique("CDROP"), "40.00")
    desk.proxy.drop_after_forward(method="POST", times=1, blackout=True)
    first = desk.run("-p", "desk-a", "capture", ref, "--yes", expect=UNKNOWN)
    assert f"{ref}-CAP1" in first.stderr, first
    assert [(c["clientSystemTransactionId"], c["transactionAmount"])
            for c in desk.followups(ref, "capture")] == [(f"{ref}-CAP1", 4000)], first

    desk.proxy.clear()
    posts = len(desk.proxy.posts())
    again = desk.run("-p", rerun_profile, "capture", ref, "--yes", expect=0)
    assert f"{ref}-CAP1" in again.stdout + again.stderr, again
    assert len(desk.proxy.posts()) == posts, f"the re-run sent a POST{again}"
    caps = desk.followups(ref, "capture")
    assert [(c["clientSystemTransactionId"], c["state"], c["transactionAmount"])
            for c in caps] == [(f"{ref}-CAP1", "Approved", 4000)], again
    # And the history no longer holds it as unknown.
    entries = [e for e in desk.history() if e.get("new_ref") == f"{ref}-CAP1"]
    assert entries, desk.history()
    assert {e["outcome"] for e in entries} == {"approved"}, entries


# -- d. the gateway shows the intent's reference as another transaction ------------------------


def _show_cap1_as(ref: str, field: str) -> Any:
    new = f"{ref}-CAP1"

    def rewrite(records: Any) -> Any:
        for rec in records:
            if rec.get("clientSystemTransactionId") == new:
                if field == "amount":
                    rec["transactionAmount"] = 1600
                elif field == "type":
                    rec["type"] = "ecom.refund"
                else:
                    rec["currencyCode"] = "USD"
        return records

    return rewrite


# (what the gateway shows instead, the words stderr must name: intended and shown)
MISMATCH = {"amount": ("15.00", "16.00"), "type": ("capture", "refund"),
            "currency": ("EUR", "USD")}


@pytest.mark.parametrize("field", sorted(MISMATCH))
def test_d_mismatched_earlier_record_is_a_conflict(desk: Desk, field: str) -> None:
    ref = desk.preauth(unique(f"CONF{field[:3].upper()}"), "40.00")
    argv = ("-p", "desk-a", "capture", ref, "--amount", "15", "--yes")
    desk.proxy.drop_after_forward(method="POST", times=1, blackout=True)
    desk.run(*argv, expect=UNKNOWN)
    assert len(desk.proxy.posts()) == 1

    desk.proxy.clear()
    desk.proxy.rewrite_lookup(_show_cap1_as(ref, field))
    again = desk.run(*argv, expect=UNKNOWN)
    err = again.stderr.lower()
    intended, shown = MISMATCH[field]
    assert "conflict" in err, again
    assert intended.lower() in err, f"stderr must name the intended {intended}{again}"
    assert shown.lower() in err, f"stderr must name the shown {shown}{again}"
    assert f"{ref}-CAP1".lower() in err, again
    assert len(desk.proxy.posts()) == 1, f"a conflict sent a POST{again}"
    assert [(c["clientSystemTransactionId"], c["transactionAmount"])
            for c in desk.followups(ref, "capture")] == [(f"{ref}-CAP1", 1500)], again
    # Reported once, then recorded (not applied under CAP1: another transaction holds it,
    # both named): the order is not blocked for good, and nothing is left unknown.
    entry = [e for e in desk.history() if e.get("new_ref") == f"{ref}-CAP1"]
    assert [e["outcome"] for e in entry] == ["error"], entry
    assert "conflict" in entry[0]["note"], entry
    desk.run("-p", "desk-a", "history", "--unknown", "--reconcile", expect=0)


def test_d_batch_mismatched_earlier_record_is_a_conflict(desk: Desk) -> None:
    ref = desk.preauth(unique("CONFBAT"), "40.00")
    rows = _write_rows(desk.tmp / "captures.csv", [(ref, "15.00", "EUR")])
    base = ("-p", "desk-a", "capture", "--batch", str(rows), "--yes")
    # The POST is committed and dropped, and the gateway goes away: the batch's own lookups
    # after the drop are refused (503). Its retries would take ~17 s to give up (the row is
    # left unknown, exit 8); once one of them has been refused the run is stopped (SIGTERM),
    # which leaves the row unsettled in the journal just the same.
    desk.proxy.drop_after_forward(method="POST", times=1, blackout=True)
    argv = (*base, "--results", str(desk.tmp / "first.ndjson"))
    proc = desk.popen(*argv)
    deadline = time.monotonic() + 30
    while not desk.proxy.refused and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    first = desk.finish(proc, argv)
    assert first.code in (UNKNOWN, 130), first
    [posted] = desk.proxy.posts()
    new_ref = posted.body["clientSystemTransactionId"]
    caps = desk.followups(ref, "capture")
    assert [(c["clientSystemTransactionId"], c["transactionAmount"]) for c in caps] == [
        (new_ref, 1500)], first

    desk.proxy.clear()

    def bigger(records: Any) -> Any:
        for rec in records:
            if rec.get("clientSystemTransactionId") == new_ref:
                rec["transactionAmount"] = 1600
        return records

    desk.proxy.rewrite_lookup(bigger)
    out = desk.tmp / "again.ndjson"
    again = desk.run(*base, "--results", str(out), expect=UNKNOWN)
    [row] = _results(out)
    assert row["status"] == "unknown", (row, str(again))
    detail = str(row.get("detail", "")).lower()
    assert "conflict" in detail, (row, str(again))
    assert "15.00" in detail, (row, str(again))
    assert "16.00" in detail, (row, str(again))
    assert len(desk.proxy.posts()) == 1, f"the re-run sent a POST{again}"
    assert len(desk.followups(ref, "capture")) == 1


# -- e. a 429 that arrives after the request reached the gateway -------------------------------


def test_e_429_after_forward_then_rerun_leaves_one_refund(desk: Desk) -> None:
    ref = desk.sale(unique("L429"), "50.00")
    argv = ("-p", "desk-a", "refund", ref, "--amount", "5", "--yes")
    desk.proxy.status_after_forward(429, times=1, headers={"Retry-After": "0"})
    # 6 (the 429's own exit) with the outcome recorded unknown, never "not applied"
    first = desk.run(*argv, expect=(6, UNKNOWN))
    assert len(desk.followups(ref, "refund")) == 1, first
    entries = [e for e in desk.history() if e.get("new_ref") == f"{ref}-REF1"]
    assert [e["outcome"] for e in entries] == ["unknown"], (entries, str(first))
    posts = len(desk.proxy.posts())

    again = desk.run(*argv)
    # The re-run resolves the earlier intent by lookup: done, exit 0, nothing sent.
    allowed = (0,)
    assert again.code in allowed, f"after{first}\nthe re-run{again}"
    assert f"{ref}-REF1" in again.stdout + again.stderr, again
    assert len(desk.proxy.posts()) == posts, f"the re-run sent a POST{again}"
    assert _refs(desk.followups(ref, "refund")) == [f"{ref}-REF1"], again


def test_e_429_after_forward_and_no_lookup_then_rerun_leaves_one_refund(desk: Desk) -> None:
    """The 429 arrives after the gateway applied the refund, and the gateway then stays
    unreachable, so the command cannot find out: the outcome must be recorded unknown (not
    "not applied"), and the re-run reports it done without sending."""
    ref = desk.sale(unique("B429"), "50.00")
    argv = ("-p", "desk-a", "refund", ref, "--amount", "5", "--yes")
    desk.proxy.status_after_forward(429, times=1, headers={"Retry-After": "0"}, blackout=True)
    # 8, or 6 (the 429's own exit kept) as long as the outcome is recorded unknown
    first = desk.run(*argv, expect=(6, UNKNOWN))
    assert len(desk.followups(ref, "refund")) == 1, first
    entries = [e for e in desk.history() if e.get("new_ref") == f"{ref}-REF1"]
    assert [e["outcome"] for e in entries] == ["unknown"], (entries, str(first))
    desk.proxy.clear()
    posts = len(desk.proxy.posts())

    again = desk.run(*argv, expect=0)
    assert f"{ref}-REF1" in again.stdout + again.stderr, again
    assert len(desk.proxy.posts()) == posts, f"the re-run sent a POST{again}"
    assert _refs(desk.followups(ref, "refund")) == [f"{ref}-REF1"], again


# -- f. SIGTERM in the middle of a batch, then resume -------------------------------------------


@pytest.mark.slow
def test_f_sigterm_mid_batch_then_resume_exactly_once(desk: Desk) -> None:
    n = 30
    orders = [desk.sale(unique(f"TERM{i:02d}"), "50.00") for i in range(n)]
    rows = _write_rows(desk.tmp / "refunds.csv", [(o, "5.00", "EUR") for o in orders])
    argv = ("-p", "desk-a", "refund", "--batch", str(rows), "--yes", "--concurrency", "4",
            "--results", str(desk.tmp / "run1.ndjson"))
    desk.proxy.latency(0.4, after_forward=True)  # committed, then the answer waits
    proc = desk.popen(*argv)
    deadline = time.monotonic() + 30
    while len(desk.proxy.posts()) < 6 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    first = desk.finish(proc, argv)
    sent_before = len(desk.proxy.posts())
    assert 0 < sent_before < n, f"SIGTERM did not land mid-batch ({sent_before} sent){first}"
    assert first.code == 130, first

    desk.proxy.clear()
    runs: list[Result] = [first]
    for attempt in range(4):
        res = desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes", "--resume",
                       "--results", str(desk.tmp / f"run{attempt + 2}.ndjson"))
        runs.append(res)
        if res.code == 0:
            break
    assert runs[-1].code == 0, "".join(map(str, runs))

    refunds = {o: desk.followups(o, "refund") for o in orders}
    wrong = {o: _refs(r) for o, r in refunds.items() if len(r) != 1}
    assert not wrong, f"not exactly one refund per row: {wrong}"
    assert all(r[0]["state"] == "Approved" and r[0]["transactionAmount"] == 500
               for r in refunds.values()), refunds

    entries = [e for e in desk.history() if e["operation"] == "refund"]
    per_ref = Counter(e["new_ref"] for e in entries)
    gateway_refs = {r[0]["clientSystemTransactionId"] for r in refunds.values()}
    assert set(per_ref) == gateway_refs, (sorted(per_ref), sorted(gateway_refs))
    doubled = {ref: c for ref, c in per_ref.items() if c != 1}
    assert not doubled, f"history entries per new_ref: {doubled}"
    assert Counter(e["original_ref"] for e in entries) == Counter(orders)
    left = [e for e in entries if e["outcome"] != "approved"]
    assert not left, left
