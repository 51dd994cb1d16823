"""The desk's rules on a local history file, tried around walletctl with a few lines of
sqlite3 (issue 44, parity with the database's migrations/V6.sql): a movement born complete,
a refused entry turned into money moved, control characters, DELETE of findings, a policy
key in no currency, a far expiry, one's own off-desk finding closed — each refused by the
file's own checks; and what the store's checks cannot stop, recon's rulebook check names."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from walletctl.history import approvals
from walletctl.history.chain import ALL, Tip
from walletctl.history.rulebook import change, unapproved_check
from walletctl.history.sqlite import SqliteHistory
from walletctl.history.store import Completion, Intent
from walletctl.models.plain import RANGES, checked_plain, escaped, has_control

STEP = Intent(time="2026-11-25T10:00:00.000Z", os_user="me", host="h", profile="p",
              base_url="u", operation="policy", outcome="approved", exit_code=0)
ROW: dict[str, Any] = {"time": "2026-11-25T10:00:01.000Z", "os_user": "me", "host": "h",
                       "profile": "p", "base_url": "u", "merchant_id": "M", "store_id": "S",
                       "currency": "EUR", "operation": "refund", "original_ref": "O-1",
                       "new_ref": "O-1-R1"}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A file whose rulebook asks an approval above 100 on a refund."""
    where = tmp_path / "h.sqlite3"
    with SqliteHistory(where) as store:
        change(store, "approvals.refund", "100", step=STEP)
    return where


def _raw(path: Path, kind: str, entry: int | None, **row: Any) -> int:
    """An event appended with sqlite3 alone, the chain's hash made right."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        tip = Tip(db, lambda sql: sql)
        number = tip.append(kind, entry, {**ROW, **row}, True)
        tip.write()
        db.execute("COMMIT")
        return number
    finally:
        db.close()


def test_a_movement_born_complete_or_revived_is_refused(path: Path) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="begun unsent or refused before"):
        _raw(path, "begin", None, amount="400.00", outcome="approved")
    with pytest.raises(sqlite3.IntegrityError, match="begun unsent or refused before"):
        _raw(path, "begin", None, amount="400.00", outcome="refused", http_status=200)
    pending = _raw(path, "begin", None, amount="400.00", outcome="refused", exit_code=12)
    with pytest.raises(sqlite3.IntegrityError, match="takes no outcome"):
        _raw(path, "complete", pending, outcome="approved")
    sent = _raw(path, "begin", None, amount="40.00")
    _raw(path, "complete", sent, outcome="declined")
    with pytest.raises(sqlite3.IntegrityError, match="never becomes moved"):
        _raw(path, "complete", sent, outcome="approved")
    with SqliteHistory(path) as store:
        assert [(e.id, e.outcome) for e in store.entries() if e.operation == "refund"] == [
            (pending, "refused"), (sent, "declined")]
        assert store.verify()[1] is None


def test_what_slips_past_the_store_is_named_after_the_fact(path: Path) -> None:
    """A 400 refund begun unsent with sqlite3 (the store's rulebook check is walletctl's
    own) and completed approved: recon's and `order`'s rulebook check names it."""
    moved = _raw(path, "begin", None, amount="400.00")
    _raw(path, "complete", moved, outcome="approved")
    small = _raw(path, "begin", None, amount="99.00", original_ref="O-2")
    _raw(path, "complete", small, outcome="approved")
    with SqliteHistory(path) as store:
        why = unapproved_check(store)
        said = {e.id: why(e) for e in store.entries() if e.operation == "refund"}
        # tightened later: the amount in force when it was begun is the one applied
        change(store, "approvals.refund", "50", step=STEP)
        store.rulebook = None
        later = {e.id: unapproved_check(store)(e) for e in store.entries()
                 if e.operation == "refund"}
    assert said[moved] == ("refund of 400.00 EUR is above the desk's approval amount of 100 "
                           "when it was begun and spent no approval"), said
    assert said[small] is None
    assert later == said


def test_control_characters_are_refused_and_shown_escaped(path: Path) -> None:
    for text in ("ok\x1b[2J\x1b[Hamount: 45.00 EUR", "O-\u202e9", "a\x9bb", "x\ny"):
        with pytest.raises(sqlite3.IntegrityError, match="control character"):
            _raw(path, "begin", None, amount="40.00", reason=text)
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="control character"):
        db.execute("INSERT INTO approvals (kind, merchant_id, store_id, operation, created_at,"
                   " expires_at, requester, request_hash, state, reason) VALUES ('single', 'M',"
                   " 'S', 'refund', '', '', 'me', '', 'pending', ?)", ("\x1b[1Aamount: 45",))
    db.close()
    # the CLI's rule (exit 4) and the render's are the same list
    for first, last in RANGES:
        assert has_control(chr(first)), first
        assert has_control(chr(last)), last
        assert "\\" in escaped(chr(last))
    assert not has_control("Kundin möchte Rückerstattung — 45,00 €")
    assert escaped("a\x1b[2Jb\u202ec") == "a\\x1b[2Jb\\u202ec"
    with pytest.raises(Exception, match=r"--reason: must not contain control"):
        checked_plain("--reason", "x\x1by")


def test_findings_are_kept_and_off_desk_ones_need_another_person(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("INSERT INTO findings (id, merchant_id, store_id, kind, original, reference, "
               "entry, movement_by, detail, recorded_at, recorded_by, state) VALUES (1, 'M', "
               "'S', 'unrecorded', 'O-9', 'O-9-X', 0, NULL, 'refund', '', 'alice', 'open')")
    with pytest.raises(sqlite3.IntegrityError, match="DELETE of findings refused"):
        db.execute("DELETE FROM findings")
    with pytest.raises(sqlite3.IntegrityError, match="who recorded it may not resolve it"):
        db.execute("UPDATE findings SET state = 'resolved', resolved_by = 'alice', "
                   "resolution = 'fine'")
    db.execute("UPDATE findings SET state = 'resolved', resolved_by = 'bob', "
               "resolution = 'fine'")
    db.close()


def test_policy_keys_and_request_expiry(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.IntegrityError, match="ISO 4217"):
        db.execute("INSERT INTO policy (key, value) VALUES ('approvals.capture.ZZZ', '1')")
    db.close()
    from walletctl.errors import UsageError

    with SqliteHistory(path) as store:
        with pytest.raises(UsageError, match="ZZZ' is not an ISO 4217"):
            change(store, "approvals.capture.ZZZ", "1", step=STEP)
        change(store, "approval_hours", "2", step=STEP)
        request = approvals.Request(kind="single", profile="p", base_url="u", merchant_id="M",
                                    store_id="S", operation="refund", original_ref="O-1",
                                    new_ref="O-1-R1", amount="400.00", currency="EUR")
        filed = approvals.file_request(store, request, now="2026-01-01T00:00:00.000Z",
                                       expires_at="2099-01-01T00:00:00.000Z", host="h")
    from datetime import UTC, datetime, timedelta

    expires = datetime.fromisoformat(filed.expires_at.replace("Z", "+00:00"))
    assert abs(expires - datetime.now(UTC) - timedelta(hours=2)) < timedelta(minutes=1), filed


def test_walletctls_own_writes_still_pass(path: Path) -> None:
    """What walletctl writes meets every check: a movement, its outcome, a refusal."""
    with SqliteHistory(path) as store:
        entry = store.begin(Intent(**{**{k: v for k, v in ROW.items() if k in ALL},
                                      "amount": "40.00"}))
        store.complete(entry, Completion(time=ROW["time"], outcome="approved"))
        store.begin(Intent(**{**{k: v for k, v in ROW.items() if k in ALL},
                              "amount": "400.00", "outcome": "refused", "exit_code": 12}))
        assert [e.outcome for e in store.entries() if e.operation == "refund"] == [
            "approved", "refused"]
        assert store.verify()[1] is None


def test_the_cli_refuses_control_characters_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 4, one line naming the field, nothing written; an ISO-less policy key: exit 2."""
    from click.testing import CliRunner

    from walletctl.cli.main import app

    history = tmp_path / "h.sqlite3"
    monkeypatch.setenv("WALLETCTL_AUDIT_LOG", str(history))
    monkeypatch.setenv("WALLETCTL_CONFIG", str(tmp_path / "none.toml"))
    for argv, field in ((["recon", "resolve", "1", "--note", "ok\x1b[2Jamount: 45"], "--note"),
                        (["approve", "1", "--reason", "fine\u202e", "--yes"], "--reason")):
        done = CliRunner().invoke(app, argv, catch_exceptions=False)
        assert done.exit_code == 4, done.output
        [line] = done.stderr.strip().splitlines()[:1]
        assert f"{field}: must not contain control characters" in line, done.stderr
        assert "\x1b" not in done.stderr, done.stderr
    assert not history.exists()
    done = CliRunner().invoke(app, ["history", "policy", "set", "approvals.capture.ZZZ", "10"],
                              catch_exceptions=False)
    assert done.exit_code == 2, done.output
    assert "'ZZZ' is not an ISO 4217 currency code" in done.stderr, done.stderr


def test_text_written_before_the_checks_is_shown_escaped(
        path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A reason that redraws the screen, kept from before the checks (a trigger dropped to
    write it): `approvals show` and the approver's question print it escaped."""
    from walletctl.render.approvals import render_request
    from walletctl.render.console import print_stderr

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP TRIGGER approvals_plain_insert")
    db.execute("INSERT INTO approvals (kind, merchant_id, store_id, operation, original_ref, "
               "new_ref, amount, currency, created_at, expires_at, requester, request_hash, "
               "state, reason) VALUES ('single', 'M', 'S', 'refund', 'O-1', 'O-1-R1', "
               "'4500.00', 'EUR', '', '2099-01-01T00:00:00.000Z', 'alice', '', 'pending', ?)",
               ("ok\x1b[2J\x1b[Hamount: 45.00 EUR\u202e",))
    db.close()
    with SqliteHistory(path) as store:
        found = approvals.get(store, 1)
    assert found is not None
    render_request("table", found, "2026-01-01T00:00:00.000Z")
    print_stderr(f"Approve #1: {found.requester}'s {found.what()} ({found.reason})")
    shown = capsys.readouterr()
    for text in (shown.out, shown.err):
        assert "\x1b" not in text, text
        assert "\u202e" not in text, text
    assert "ok\\x1b[2J\\x1b[Hamount: 45.00 EUR\\u202e" in shown.out, shown.out
    assert "4500.00 EUR" in shown.out, shown.out
