"""``walletctl recon`` from outside, on a local history file: ``python -m walletctl`` as a
subprocess against a served sandbox (the money tests' ``desk``), money moved behind the
desk's back with raw HTTP, and history entries written through the store's API."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

from money.conftest import Desk, desk, unique  # noqa: F401 - the fixture too
from walletctl.history import open_history

from .helpers import post_followup, run_together, write_entry

MISMATCH = 13


def _fits(text: str, width: int = 80) -> None:
    """Every line within ``width``, except the one naming the history file (a path is one
    word, and may be longer than any terminal)."""
    for line in text.splitlines():
        if "history.sqlite3" not in line:
            assert len(line.rstrip()) <= width, f"wider than {width}: {line!r}\n{text}"


def test_clean_then_money_moved_behind_the_desks_back_is_named(desk: Desk) -> None:  # noqa: F811
    order = desk.sale(unique("REC"), "50.00")
    desk.run("-p", "desk-a", "refund", order, "--amount", "5.00", "--yes", expect=0)
    desk.run("-p", "desk-a", "capture", desk.preauth(unique("RECA"), "40.00"), "--amount",
             "15.00", expect=0)
    clean = desk.run("-p", "desk-a", "-o", "json", "recon", expect=0)
    doc = clean.json()
    assert (doc["agrees"], doc["exitCode"]) == (True, 0), clean
    assert (doc["counts"]["entries"], doc["counts"]["agreed"]) == (2, 2), doc["counts"]
    assert doc["totals"]["EUR"]["refund"] == {
        "history": {"count": 1, "amount": "5.00"}, "gateway": {"count": 1, "amount": "5.00"},
        "difference": "0.00"}, doc["totals"]
    assert clean.stderr == "", clean  # quiet: made for a nightly job

    # a refund made in a dashboard (straight to the gateway) on an order the desk refunded
    post_followup(desk, order, f"{order}-DASH1", "3.00")
    # and one on an order walletctl never touched: found only when the order is named
    untouched = desk.sale(unique("SHOP"), "20.00")
    post_followup(desk, untouched, f"{untouched}-DASH1", "20.00")
    found = desk.run("-p", "desk-a", "-o", "json", "recon", expect=MISMATCH)
    doc = found.json()
    assert [(f["original"], f["reference"], f["operation"], f["gateway"]["amount"],
             f["gateway"]["state"]) for f in doc["unrecorded"]] == [
        (order, f"{order}-DASH1", "refund", "3.00", "Approved")], doc
    assert (doc["unconfirmed"], doc["unknown"]) == ([], []), doc
    assert doc["totals"]["EUR"]["refund"]["difference"] == "3.00", doc["totals"]
    assert f"{order}-DASH1 not in the history" in found.stderr, found
    assert len(found.stderr.strip().splitlines()) == 1, found

    export = desk.tmp / "orders.csv"
    export.write_text(f"ref,total\n{untouched},20.00\n{order},50.00\n")
    with_export = desk.run("-p", "desk-a", "-o", "json", "recon", "--refs", str(export),
                           expect=MISMATCH).json()
    assert [f["reference"] for f in with_export["unrecorded"]] == sorted(
        [f"{order}-DASH1", f"{untouched}-DASH1"]), with_export
    assert with_export["counts"]["originals"] == 3, with_export["counts"]
    # --ref narrows to one order (and looks it up, recorded or not)
    one = desk.run("-p", "desk-a", "-o", "json", "recon", "--ref", untouched,
                   expect=MISMATCH).json()
    assert [f["reference"] for f in one["unrecorded"]] == [f"{untouched}-DASH1"], one
    assert one["recon"]["since"] is None, one["recon"]
    # --op: a desk that only compares its refunds sees the same; captures alone agree
    desk.run("-p", "desk-a", "recon", "--op", "capture", expect=0)

    table = desk.run("-p", "desk-a", "-o", "table", "recon", "--refs", str(export),
                     env={"COLUMNS": "80"}, expect=MISMATCH)
    _fits(table.stdout)
    assert "Money moved at the gateway with no history entry" in table.stdout, table
    for ref in (f"{order}-DASH1", f"{untouched}-DASH1"):
        assert ref in table.stdout, table
    assert "3.00 EUR" in table.stdout, table
    assert "Approved" in table.stdout, table


def test_entries_the_gateway_does_not_confirm_and_unknown_ones(desk: Desk) -> None:  # noqa: F811
    absent, short, declined, still_open, fine = (
        desk.sale(unique(p), "50.00") for p in ("ABS", "AMT", "DEC", "UNK", "OK"))
    desk.run("-p", "desk-a", "refund", fine, "--amount", "1.00", "--yes", expect=0)
    post_followup(desk, short, f"{short}-REF1", "7.00")
    post_followup(desk, declined, f"{declined}-REF1", "4.00")
    with open_history(Path(desk.env["WALLETCTL_AUDIT_LOG"])) as store:
        gone = write_entry(store, desk, absent, f"{absent}-REF1", "10.00", "approved")
        wrong = write_entry(store, desk, short, f"{short}-REF1", "10.00", "approved")
        said_no = write_entry(store, desk, declined, f"{declined}-REF1", "4.00", "declined")
        unknown = write_entry(store, desk, still_open, f"{still_open}-REF1", "2.00", None)
        write_entry(store, desk, fine, f"{fine}-REF9", "9.00", "refused")  # nothing sent
        # another merchant's entry is not this profile's business
        write_entry(store, desk, absent, f"{absent}-X", "1.00", "approved", merchant="M-9")
    result = desk.run("-p", "desk-a", "-o", "json", "recon", expect=MISMATCH)
    doc = result.json()
    problems = {f["reference"]: (f["kind"], f["entry"], f["history"]["outcome"],
                                 f["gateway"] and (f["gateway"]["state"],
                                                   f["gateway"]["amount"]))
                for f in doc["unconfirmed"]}
    assert problems == {
        f"{absent}-REF1": ("absent", gone, "approved", None),
        f"{short}-REF1": ("amount", wrong, "approved", ("Approved", "7.00")),
        f"{declined}-REF1": ("state", said_no, "declined", ("Approved", "4.00")),
    }, doc["unconfirmed"]
    assert [(f["reference"], f["entry"], f["gateway"]) for f in doc["unknown"]] == [
        (f"{still_open}-REF1", unknown, None)], doc["unknown"]
    assert "not at the gateway" in doc["unknown"][0]["note"], doc["unknown"]
    assert (doc["unrecorded"], doc["unchecked"]) == ([], []), doc
    assert (doc["counts"]["notCompared"], doc["counts"]["agreed"]) == (1, 1), doc["counts"]
    assert sorted(doc) == ["agrees", "counts", "exitCode", "recon", "resolved", "summary",
                           "totals", "unchecked", "unconfirmed", "unknown", "unrecorded"]
    assert sorted(doc["unconfirmed"][0]) == ["entry", "finding", "gateway", "history", "kind",
                                             "note", "operation", "original",
                                             "outsideWindow", "reference", "source"]
    for ref in (f"{absent}-REF1", f"{short}-REF1", f"{declined}-REF1", f"{still_open}-REF1"):
        assert ref in result.stderr, result

    # the same report, every format, in the same order
    again, as_csv, as_ndjson, table = run_together(
        desk, *(["-p", "desk-a", "-o", fmt, "recon"] for fmt in ("json", "csv", "ndjson",
                                                                  "table")),
        expect=MISMATCH, env={"COLUMNS": "80"})
    assert again.json()["unconfirmed"] == doc["unconfirmed"]
    assert again.json()["unknown"] == doc["unknown"]
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [r["kind"] for r in rows if r["kind"] != "total"] == [
        f["kind"] for f in sorted([*doc["unconfirmed"], *doc["unknown"]],
                                  key=lambda f: (f["original"], f["reference"]))]
    totals = [r for r in rows if r["kind"] == "total"]
    assert [(t["currency"], t["operation"], t["history_count"]) for t in totals] == [
        ("EUR", "refund", "3")], totals  # approved: 1.00 + 10.00 + 10.00
    parsed = [json.loads(line) for line in as_ndjson.stdout.splitlines()]
    assert len(parsed) == len(doc["unconfirmed"]) + len(doc["unknown"]) + 1
    assert parsed[-1]["exitCode"] == MISMATCH, parsed
    assert "totals" in parsed[-1], parsed
    _fits(table.stdout)
    for text in ("History entries the gateway does not confirm", " amount ", " state ",
                 " absent ", "Unknown outcomes", f"{still_open}-REF1", f"{short}-REF1"):
        assert text in table.stdout, table


def test_a_batch_journal_is_compared_too(desk: Desk) -> None:  # noqa: F811
    """Refunds made by a batch whose history went elsewhere: the journal records them, so
    with --journal they agree; without it they are money the desk's history cannot show."""
    orders = [desk.sale(unique(f"JRN{i}"), "30.00") for i in range(3)]
    rows = desk.tmp / "refunds.csv"
    rows.write_text("ref,amount,currency\n" + "".join(f"{o},5.00,EUR\n" for o in orders))
    journal = desk.tmp / "refunds.journal"
    desk.run("-p", "desk-a", "refund", "--batch", str(rows), "--yes", "--journal",
             str(journal), env={"WALLETCTL_AUDIT_LOG": str(desk.tmp / "elsewhere.sqlite3")},
             expect=0)
    refs = [arg for o in orders for arg in ("--ref", o)]
    blind = desk.run("-p", "desk-a", "-o", "json", "recon", *refs, expect=MISMATCH).json()
    assert len(blind["unrecorded"]) == 3, blind
    seen = desk.run("-p", "desk-a", "-o", "json", "recon", *refs, "--journal", str(journal),
                    expect=0).json()
    assert (seen["counts"]["journalRows"], seen["counts"]["agreed"]) == (3, 3), seen

    # bad input: one line naming the flag and the rule, exit 2, no traceback
    not_a_journal = desk.tmp / "other.sqlite3"
    sqlite3.connect(not_a_journal).execute("CREATE TABLE t (x)").connection.close()
    export = desk.tmp / "bad-refs.csv"
    export.write_text("ref\nORDER-1\nORDER\u200b2\n")  # a zero-width space: not a reference
    cases = [
        (["--since", "last tuesday"], "--since"),
        (["--since", "1d", "--until", "2d"], "--since"),
        (["--refs", str(desk.tmp / "missing.csv")], "--refs"),
        (["--refs", str(desk.tmp)], "--refs"),
        (["--refs", str(export)], f"--refs {export} line 3"),
        (["--journal", str(rows)], "--journal"),
        (["--journal", str(not_a_journal)], "--journal"),
        (["--op", "chargeback"], "--op"),
    ]
    results = run_together(desk, *(["-p", "desk-a", "recon", *argv] for argv, _ in cases),
                           expect=2)
    # a reference the rule refuses: exit 4 with the rule, as lookup and the money commands
    bad_ref = desk.run("-p", "desk-a", "recon", "--ref", "has\ttab", expect=4)
    assert bad_ref.stderr.startswith("walletctl: error: invalid request: --ref: has U+0009")
    for (_, named), bad in zip(cases, results, strict=True):
        assert bad.stdout == "", bad
        first = bad.stderr.strip().splitlines()[0]
        assert first.startswith("walletctl: error: "), bad
        assert named in first, bad
