"""An order's evidence bundle from outside: written by ``walletctl order REF --evidence``
on a real sandbox and history, checked by ``walletctl history check-evidence`` as a
subprocess with no profile, no history and no gateway; then edited ten ways, each caught
(exit 3, naming what broke); and no key or secret in it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.test_secrets import leaks

from .conftest import Desk
from .test_order import MISMATCH, an_order

BROKEN = 3
Doc = dict[str, Any]
# what each edit's one line names
NAMED = {"amount": "amount", "event": "changed after it was written",
         "drop-event": "missing", "drop-entry": "left out", "approver": "decided by",
         "approved-amount": "request_hash", "record-state": "records and entries give",
         "verdict": "verdict", "finding": "findings", "reorder": "missing",
         "head": "anchor", "spent-by": "spent by"}


def _offline(desk: Desk, tmp: Path) -> dict[str, str]:
    """An environment with no profile, no history and no gateway: only the bundle."""
    return {"WALLETCTL_CONFIG": str(tmp / "none.toml"), "WALLETCTL_AUDIT_LOG": str(
        tmp / "no-history.sqlite3"), "WALLETCTL_HISTORY_URL": "", "HTTP_PROXY": "",
        "WALLETCTL_MONEY_KEY": ""}


def _entry_of(doc: Doc, operation: str, amount: str) -> Doc:
    return next(e for e in doc["history"] if (e["operation"], e["amount"]) == (
        operation, amount))


def _event_of(doc: Doc, entry: int) -> Doc:
    return next(e for e in doc["events"] if e["entry"] == entry and e["kind"] == "begin")


def _relinked(doc: Doc) -> None:
    """Recompute every hash after an edit: a chain intact in itself (what only an anchor
    kept elsewhere shows)."""
    from walletctl.history.chain import ALL, event_hash

    prev = doc["events"][0]["prev_hash"]
    for e in doc["events"]:
        e["prev_hash"] = prev
        e["hash"] = prev = event_hash(prev, e["seq"], [e[c] for c in ALL])
    doc["anchor"]["hash"] = prev


def _edits(number: int) -> dict[str, Callable[[Doc], None]]:
    def amount(doc: Doc) -> None:
        _entry_of(doc, "refund", "150.00")["amount"] = "15.00"

    def event_amount(doc: Doc) -> None:
        _event_of(doc, _entry_of(doc, "refund", "20.00")["id"])["amount"] = "2.00"

    def drop_event(doc: Doc) -> None:
        del doc["events"][len(doc["events"]) // 2]

    def drop_entry(doc: Doc) -> None:
        doc["history"].remove(_entry_of(doc, "capture", "200.00"))

    def approver(doc: Doc) -> None:
        doc["approvals"][0]["decided_by"] = "someone-else"

    def approved_amount(doc: Doc) -> None:
        doc["approvals"][0]["amount"] = "1500.00"

    def record_state(doc: Doc) -> None:
        capture = next(r for r in doc["gateway"]["records"]
                       if r["transactionAmount"] in ("200.00", "200", 200))
        capture["state"] = "Declined"

    def verdict(doc: Doc) -> None:
        doc["verdict"]["agrees"] = True

    def finding(doc: Doc) -> None:
        doc["findings"].clear()

    def reorder(doc: Doc) -> None:
        events = doc["events"]
        events[1], events[2] = events[2], events[1]

    def head(doc: Doc) -> None:
        doc["events"].pop()

    def spent_by(doc: Doc) -> None:
        doc["approvals"][0]["spent_entry"] = _entry_of(doc, "refund", "20.00")["id"]

    return {"amount": amount, "event": event_amount, "drop-event": drop_event,
            "drop-entry": drop_entry, "approver": approver, "approved-amount": approved_amount,
            "record-state": record_state, "verdict": verdict, "finding": finding,
            "reorder": reorder, "head": head, "spent-by": spent_by}


def test_a_bundle_checked_offline_and_every_edit_caught(
        desk: Desk, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ref, number = an_order(desk, monkeypatch)
    bundle = tmp_path / "evidence.json"
    got = desk.run("-p", "desk-a", "order", ref, "--evidence", str(bundle), expect=MISMATCH)
    assert "check-evidence" in got.stderr, got
    text = bundle.read_text()
    # the secrets grep of every output (tests/core/test_secrets.py), over the bundle
    assert not leaks(text, desk.api_key), "the bundle shows the API key"
    for secret in ("service_secret", "serviceSecret", "4111111111111111", "cryptogram"):
        assert secret not in text, secret
    doc = json.loads(text)
    assert doc["format"] == "walletctl-evidence/1"
    assert [f["reference"] for f in doc["findings"]] == [f"{ref}-DASH1"], doc["findings"]
    offline = _offline(desk, tmp_path)
    ok = desk.run("-o", "json", "history", "check-evidence", str(bundle), env=offline,
                  expect=0).json()
    assert (ok["holds"], ok["entries"], ok["approvals"]) == (True, len(doc["history"]), 1), ok
    desk.run("history", "check-evidence", str(bundle), env=offline, expect=0)

    for name, edit in _edits(number).items():
        changed = copy.deepcopy(doc)
        edit(changed)
        path = tmp_path / f"edited-{name}.json"
        path.write_text(json.dumps(changed))
        failed = desk.run("history", "check-evidence", str(path), env=offline, expect=BROKEN)
        assert "Traceback" not in failed.stderr, (name, failed)
        assert len(failed.stderr.strip().splitlines()) <= 2, (name, failed.stderr)
        assert NAMED[name] in failed.stderr, (name, failed.stderr)

    # an edit with every hash after it recomputed holds in itself; the anchor kept
    # elsewhere is what catches it
    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text(desk.run("history", "anchor", expect=0).stdout)
    anchored = tmp_path / "anchored.json"
    desk.run("-p", "desk-a", "order", ref, "--evidence", str(anchored), "--anchor",
             str(anchors), expect=MISMATCH)
    desk.run("history", "check-evidence", str(anchored), "--anchor", str(anchors),
             env=offline, expect=0)
    forged = json.loads(anchored.read_text())
    _event_of(forged, _entry_of(forged, "refund", "20.00")["id"])["reason"] = "forged"
    _entry_of(forged, "refund", "20.00")["reason"] = "forged"
    _relinked(forged)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    desk.run("history", "check-evidence", str(path), env=offline, expect=0)  # in itself
    caught = desk.run("history", "check-evidence", str(path), "--anchor", str(anchors),
                      env=offline, expect=BROKEN)
    assert "anchor" in caught.stderr, caught
    # not a bundle at all: one line, exit 3; a missing file: a usage error
    (tmp_path / "junk.json").write_text("{not json")
    desk.run("history", "check-evidence", str(tmp_path / "junk.json"), env=offline,
             expect=BROKEN)
    desk.run("history", "check-evidence", str(tmp_path / "absent.json"), env=offline,
             expect=2)
