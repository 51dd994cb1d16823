"""Anchors on a local history file: `history anchor` prints the head as one JSON line kept
outside the file; `history verify --anchor FILE` fails once the newest entries are deleted
or the chain is recomputed, both of which leave a chain that verifies by itself. Also: a
malformed anchors file, and a spent approval whose decision is not in the chain."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from history_helpers import expect, history_cli, rechain, record_refunds, refund_intent

from walletctl.history.sqlite import SqliteHistory


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """Six entries (12 events), with a nightly job's anchors file: one line after entry 3,
    one after entry 6."""
    path = tmp_path / "h.sqlite3"
    anchors = tmp_path / "anchors.jsonl"
    record_refunds(path, 1, 3)
    for last in (3, 6):
        if last == 6:
            record_refunds(path, 4, 6)
        made = history_cli(path, "history", "anchor")
        assert made.returncode == 0, made
        with anchors.open("a") as out:
            out.write(made.stdout)
    return path


def test_an_anchor_is_one_json_line_naming_the_head(history: Path) -> None:
    lines = (history.parent / "anchors.jsonl").read_text().splitlines()
    assert len(lines) == 2
    newest = json.loads(lines[-1])
    assert list(newest) == ["event", "entry", "hash", "time", "history", "size", "root", "log"]
    with sqlite3.connect(history) as db:
        tip = db.execute("SELECT seq, entry, hash, time FROM events ORDER BY seq DESC "
                         "LIMIT 1").fetchone()
    assert (newest["event"], newest["entry"], newest["hash"], newest["time"]) == tip
    assert (newest["event"], newest["entry"], newest["time"]) == (
        12, 6, "2026-11-06T10:00:01.000Z")
    assert newest["history"] == str(history)
    for fmt in ("json", "table", "ndjson"):  # the same line, whatever -o says
        assert history_cli(history, "-o", fmt, "history", "anchor").stdout == lines[-1] + "\n"
    ok = history_cli(history, "-o", "table", "history", "verify", "--anchor",
              str(history.parent / "anchors.jsonl"))
    assert ok.returncode == 0, ok
    # the newest line is the head: nothing was added since, so nothing is walked
    assert "intact, 0 events after anchored event 12, hash chain verified" in ok.stdout
    assert "2 anchor lines matched" in ok.stdout
    full = history_cli(history, "-o", "table", "history", "verify", "--full", "--anchor",
                str(history.parent / "anchors.jsonl"))
    assert full.returncode == 0, full
    assert "intact, 12 events, hash chain verified" in full.stdout
    alone = history_cli(history, "history", "verify", "--full")
    expect(alone, 2, "--full: goes with --anchor FILE")


def test_a_dropped_tail_verifies_alone_and_fails_against_its_anchor(history: Path) -> None:
    anchors = str(history.parent / "anchors.jsonl")
    with sqlite3.connect(history) as db:
        db.execute("DELETE FROM events WHERE seq > 8")
    alone = history_cli(history, "history", "verify")
    assert alone.returncode == 0, alone
    assert json.loads(alone.stdout)["intact"] is True  # the file alone cannot tell
    cut = history_cli(history, "history", "verify", "--anchor", anchors)
    expect(cut, 3, "event 12 of anchor line 2 (2026-11-06T10:00:01.000Z) is gone: newer "
                   "entries were deleted (the chain now ends at event 8)")
    record = json.loads(cut.stdout)
    assert record["intact"] is False
    assert record["anchors"] == 2
    assert record["anchorFailures"] == [{
        "line": 2, "event": 12, "hash": json.loads(Path(anchors).read_text().splitlines()[1])[
            "hash"], "found": None}]


def test_a_recomputed_chain_verifies_alone_and_fails_against_its_anchors(
        history: Path) -> None:
    anchors = str(history.parent / "anchors.jsonl")
    with sqlite3.connect(history) as db:
        db.execute("UPDATE events SET amount = '2000.00' WHERE seq = 3")  # entry #2's refund
    assert history_cli(history, "history", "verify").returncode == 3  # edited: the chain shows it
    rechain(history)
    alone = history_cli(history, "history", "verify")
    assert alone.returncode == 0, alone  # recomputed: intact in itself
    rewritten = history_cli(history, "history", "verify", "--anchor", anchors)
    expect(rewritten, 3, "event 6 no longer has the hash of anchor line 1 "
                         "(2026-11-03T10:00:01.000Z): the chain was rewritten at or before "
                         "event 6; 1 more of 2 anchor lines fail")
    assert [f["line"] for f in json.loads(rewritten.stdout)["anchorFailures"]] == [1, 2]
    # --expect-head, the older check, still works and sees it too
    head = json.loads(Path(anchors).read_text().splitlines()[1])["hash"]
    gone = history_cli(history, "history", "verify", "--expect-head", head[:16])
    expect(gone, 3, "newer entries were deleted")


@pytest.mark.parametrize(("content", "said"), [
    ('{"event": 12}\nnot json\n', "line 1: field 'entry' missing"),
    ('\n# kept by the nightly job\n{"event": 1, "entry": 1\n', "line 3: not a JSON object"),
    ('[1, 2]\n', "line 1: not a JSON object"),
    ('{"event": "12", "entry": 6}\n', "line 1: field 'event' must be a number of 1 or more"),
    ('{"event": 12, "entry": 6, "hash": "ABC"}\n', "line 1: field 'hash' must be 64 lowercase"),
    ('{"event": 12, "entry": 6, "hash": "' + "a" * 64 + '", "time": 5, "history": "h"}\n',
     "line 1: field 'time' must be text"),
    ('# nothing yet\n\n', "holds no anchor"),
])
def test_a_malformed_anchors_file_is_a_usage_error_naming_line_and_field(
        history: Path, content: str, said: str) -> None:
    bad = history.parent / "bad.jsonl"
    bad.write_text(content)
    proc = history_cli(history, "history", "verify", "--anchor", str(bad))
    assert proc.returncode == 2, proc
    assert said in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stdout == ""
    missing = history_cli(history, "history", "verify", "--anchor", str(history.parent / "none"))
    expect(missing, 2, "--anchor: cannot read")


def test_an_empty_history_has_nothing_to_anchor(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    SqliteHistory(path).close()
    expect(history_cli(path, "history", "anchor"), 3, "no events yet, nothing to anchor")


def test_a_spent_approval_without_its_decision_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two approvals decided and spent as walletctl does; then the file's owner marks a
    third, never decided, as spent (a local file keeps its rules against nobody)."""
    from walletctl.history import approvals, recorder

    path = tmp_path / "h.sqlite3"
    now, later = "2026-11-24T10:00:00.000Z", "2099-01-01T00:00:00.000Z"
    with SqliteHistory(path) as store:
        for i in (1, 2, 3):
            intent = refund_intent(i, amount="150.00")
            request = approvals.Request(
                kind="single", profile="desk", base_url=intent.base_url, merchant_id="M-1",
                store_id="S-1", operation="refund", original_ref=intent.original_ref,
                new_ref=intent.new_ref, amount="150.00", currency="EUR")
            monkeypatch.setattr(recorder, "os_user", lambda: "ana")
            filed = approvals.file_request(store, request, now=now, expires_at=later,
                                           host="desk-1")
            # the money command records its filing: refused, exit 12, the request's id
            store.begin(refund_intent(i, amount="150.00", outcome="refused", exit_code=12,
                                approval=filed.id))
            if i == 3:
                continue
            monkeypatch.setattr(recorder, "os_user", lambda: "bo")
            approvals.decide(store, filed.id, approve=True, reason=None, now=now,
                             step=refund_intent(i, operation="approval", amount=None,
                                          outcome="approved", os_user="bo"))
            monkeypatch.setattr(recorder, "os_user", lambda: "ana")
            store.begin(intent, hook=approvals.spender(store, filed.id, request, now=now))
    fine = history_cli(path, "history", "verify")
    assert fine.returncode == 0, fine
    assert json.loads(fine.stdout)["spentWithoutDecision"] == []
    with sqlite3.connect(path) as db:
        db.execute("UPDATE approvals SET state = 'spent', decided_by = 'bo', spent_at = ?, "
                   "spent_entry = 7 WHERE id = 3", (now,))
    forged = history_cli(path, "history", "verify")
    expect(forged, 3, "approval #3 was spent, but no decision approving it is in the chain")
    record = json.loads(forged.stdout)
    assert (record["intact"], record["brokenAt"], record["spentWithoutDecision"]) == (
        False, None, [3])
