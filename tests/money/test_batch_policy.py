"""A batch obeys the desk's rules as a single command does (docs/batch.md, "The desk's
rules"): the profile's ``[history] require_reason`` and ``limits`` hold for its rows, checked
before anything is sent, with the total of the rows above the limit typed to confirm.
Real ``walletctl`` subprocesses against a served sandbox (tests/money/conftest.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from .conftest import Desk, unique
from .test_approvals_local import _approve_as, _four_eyes


def _rules(desk: Desk, **history: Any) -> None:
    path = Path(desk.env["WALLETCTL_CONFIG"])
    doc = tomllib.loads(path.read_text())
    doc["profiles"]["desk-a"].setdefault("history", {}).update(history)
    path.write_text(tomli_w.dumps(doc))


def _rows(path: Path, rows: list[tuple[str, str]], currency: str = "EUR") -> Path:
    path.write_text("".join(f'{{"ref": "{r}", "amount": "{a}", "currency": "{currency}"}}\n'
                            for r, a in rows))
    return path


def _refunds(desk: Desk, refs: list[str]) -> list[int]:
    return [sum(1 for r in desk.followups(ref, "refund") if r.get("state") == "Approved")
            for ref in refs]


def _batch_entries(desk: Desk, outcome: str) -> list[dict[str, Any]]:
    return [e for e in desk.history()
            if e["operation"] == "refund" and e["outcome"] == outcome and e["batch_id"]]


def test_a_batch_without_the_required_reason_sends_nothing(desk: Desk, tmp_path: Path) -> None:
    _rules(desk, require_reason=["refund"])
    refs = [desk.sale(unique("BR"), "50.00") for _ in range(2)]
    batch = _rows(tmp_path / "rows.jsonl", [(r, "10.00") for r in refs])
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    refused = desk.run(*run, expect=5)
    assert ("refund refused by profile desk-a: a reason is required; nothing was sent"
            in refused.stderr), refused
    assert refused.stdout == "", refused
    assert _refunds(desk, refs) == [0, 0]
    assert not (tmp_path / "rows.jsonl.refund.journal").exists()  # no row marked sent
    [entry] = _batch_entries(desk, "refused")
    assert entry["exit_code"] == 5, entry
    assert "a reason is required" in entry["note"], entry

    desk.run(*run, "--reason", "  parcel lost in transit ", expect=0)
    assert _refunds(desk, refs) == [1, 1]
    sent = _batch_entries(desk, "approved")
    assert [e["reason"] for e in sent] == ["parcel lost in transit"] * 2, sent
    blank = desk.run(*run, "--reason", " ", expect=4)
    assert "--reason: must not be empty" in blank.stderr, blank


def test_rows_above_the_limit_need_their_total_typed(desk: Desk, tmp_path: Path) -> None:
    _rules(desk, limits={"refund": "100.00"})
    refs = [desk.sale(unique("BL"), "300.00") for _ in range(3)]
    batch = _rows(tmp_path / "rows.jsonl", list(zip(refs, ("150.00", "120.00", "20.00"),
                                                    strict=True)))
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    stated = "2 rows of refund above profile desk-a's limit of 100.00 EUR total 270.00 EUR"

    no_reason = desk.run(*run, expect=5)
    assert stated in no_reason.stderr, no_reason
    assert "a reason is required" in no_reason.stderr, no_reason
    unconfirmed = desk.run(*run, "--reason", "recall", expect=5)  # --yes does not replace it
    assert stated in unconfirmed.stderr, unconfirmed
    assert "pass --confirm-amount 270.00" in unconfirmed.stderr, unconfirmed
    wrong = desk.run(*run, "--reason", "recall", "--confirm-amount", "150.00", expect=5)
    assert "the confirmed total '150.00' is not 270.00 EUR" in wrong.stderr, wrong
    assert _refunds(desk, refs) == [0, 0, 0]
    assert len(_batch_entries(desk, "refused")) == 3

    desk.run(*run, "--reason", "recall", "--confirm-amount", "270", expect=0)
    assert _refunds(desk, refs) == [1, 1, 1]
    assert {e["reason"] for e in _batch_entries(desk, "approved")} == {"recall"}


def test_a_batch_below_the_limit_is_unaffected(desk: Desk, tmp_path: Path) -> None:
    _rules(desk, limits={"refund": "100.00"}, require_reason=["reverse"])
    refs = [desk.sale(unique("BU"), "300.00") for _ in range(2)]
    batch = _rows(tmp_path / "rows.jsonl", [(refs[0], "100.00"), (refs[1], "99.99")])
    desk.run("refund", "--batch", str(batch), "--yes", "-p", "desk-a", expect=0)
    assert _refunds(desk, refs) == [1, 1]
    assert [e["reason"] for e in _batch_entries(desk, "approved")] == [None, None]


def test_rows_above_the_limit_in_two_currencies_are_refused(desk: Desk,
                                                             tmp_path: Path) -> None:
    _rules(desk, limits={"refund": "100.00"})
    eur = desk.sale(unique("BC"), "300.00")
    usd = desk.checkout(unique("BC"), "300.00", currency="USD")
    batch = tmp_path / "rows.jsonl"
    batch.write_text(f'{{"ref": "{eur}", "amount": "150.00", "currency": "EUR"}}\n'
                     f'{{"ref": "{usd}", "amount": "150.00", "currency": "USD"}}\n')
    refused = desk.run("refund", "--batch", str(batch), "--yes", "-p", "desk-a",
                       "--reason", "recall", "--confirm-amount", "300.00", expect=5)
    assert "in 2 currencies (150.00 EUR, 150.00 USD)" in refused.stderr, refused
    assert "split the file by currency" in refused.stderr, refused
    assert _refunds(desk, [eur, usd]) == [0, 0]


def test_an_approved_batch_needs_no_typed_total(desk: Desk, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _four_eyes(desk, refund="200.00")
    _rules(desk, limits={"refund": "100.00"})
    refs = [desk.sale(unique("BA"), "300.00") for _ in range(2)]
    batch = _rows(tmp_path / "rows.jsonl", [(refs[0], "250.00"), (refs[1], "150.00")])
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    number = desk.run("-o", "json", *run, expect=12).json()["approval"]["id"]
    _approve_as(desk, monkeypatch, "second-operator", number)
    desk.run(*run, "--approval", str(number), expect=0)  # the approval replaces the limit
    assert _refunds(desk, refs) == [1, 1]


def _rules_of(desk: Desk, profile: str, **history: Any) -> None:
    path = Path(desk.env["WALLETCTL_CONFIG"])
    doc = tomllib.loads(path.read_text())
    doc["profiles"][profile].setdefault("history", {}).update(history)
    path.write_text(tomli_w.dumps(doc))


def _row_of(path: Path, ref: str, amount: str, profile: str) -> Path:
    path.write_text(f'{{"ref": "{ref}", "amount": "{amount}", "currency": "EUR", '
                    f'"profile": "{profile}"}}\n')
    return path


def test_a_row_of_another_profile_needs_that_profiles_approval(desk: Desk,
                                                               tmp_path: Path) -> None:
    """A row whose ``profile`` column names a four-eyes profile is not sent without a
    second operator's approval, whichever profile the command runs under."""
    _rules_of(desk, "desk-b", approvals={"refund": "10.00"})
    ref = desk.sale(unique("BP"), "50.00")
    batch = _row_of(tmp_path / "rows.jsonl", ref, "25.00", "desk-b")
    filed = desk.run("-o", "json", "refund", "--batch", str(batch), "--yes", "-p", "desk-a",
                     expect=12)
    assert filed.json()["approval"]["id"] >= 1, filed
    assert _refunds(desk, [ref]) == [0]
    small = desk.sale(unique("BP"), "50.00")  # below the amount: sent
    batch = _row_of(tmp_path / "small.jsonl", small, "5.00", "desk-b")
    desk.run("refund", "--batch", str(batch), "--yes", "-p", "desk-a", expect=0)
    assert _refunds(desk, [small]) == [1]


def test_the_commands_limit_holds_for_a_row_of_another_profile(desk: Desk,
                                                               tmp_path: Path) -> None:
    """Each row is judged by the command's profile and its own, the stricter of the two."""
    _rules(desk, limits={"refund": "10.00"})
    ref = desk.sale(unique("BO"), "50.00")
    batch = _row_of(tmp_path / "rows.jsonl", ref, "25.00", "desk-b")
    run = ("refund", "--batch", str(batch), "--yes", "-p", "desk-a")
    refused = desk.run(*run, expect=5)
    assert "limit of 10.00 EUR total 25.00 EUR" in refused.stderr, refused
    assert _refunds(desk, [ref]) == [0]
    desk.run(*run, "--reason", "recall", "--confirm-amount", "25.00", expect=0)
    assert _refunds(desk, [ref]) == [1]
