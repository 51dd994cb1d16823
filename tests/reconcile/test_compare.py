"""The comparison's rules, one order at a time, in process (no gateway needed): which history
outcome agrees with which record, and which records are money the desk did not record."""

from __future__ import annotations

from decimal import Decimal

import pytest

from walletctl.history.store import Entry
from walletctl.models.records import TransactionRecord
from walletctl.ops.recon.compare import (
    OPERATIONS,
    Counts,
    Expected,
    Finding,
    Totals,
    compare_original,
)

ORDER = "ORDER-1"
TYPES = {"sale": "ecom.sale", "refund": "ecom.refund", "capture": "ecom.capture"}


def record(ref: str, kind: str, state: str = "Approved", amount: str = "5.00",
           when: str = "2026-11-23T10:00:00.0000000") -> TransactionRecord:
    return TransactionRecord.from_wire({
        "state": state, "currencyCode": "EUR", "transactionAmount": amount,
        "clientSystemTransactionId": ref, "type": TYPES[kind],
        "clientSystemInvoiceId": None if kind == "sale" else ORDER,
        "transactionDateTime": when})


def entry(ref: str, outcome: str, operation: str = "refund", amount: str = "5.00",
          entry_id: int = 1) -> Expected:
    return Expected(Entry(
        id=entry_id, time="2026-11-23T10:00:00.000Z", os_user="ana", host="pc",
        profile="desk", base_url="http://gw", operation=operation, original_ref=ORDER,
        new_ref=None if operation == "checkout" else ref, amount=amount, currency="EUR",
        outcome=outcome, http_status=None, exit_code=None, batch_id=None, batch_row=None,
        reason=None, note=None, completed=None, merchant_id="M", store_id="S"),
        f"history #{entry_id}")


def compare(expected: list[Expected], records: list[TransactionRecord],
            elsewhere: frozenset[str] = frozenset(), *,
            in_window: bool = True,
            every_record: bool = False) -> tuple[list[Finding], Totals, Counts]:
    totals, counts = Totals(), Counts()
    found = compare_original(
        ORDER, expected, records, in_window=lambda _rec: in_window,
        recorded_elsewhere=lambda: set(elsewhere), operations=frozenset(OPERATIONS),
        totals=totals, counts=counts, every_record=every_record)
    return found, totals, counts


SALE = record(ORDER, "sale", amount="50.00")


@pytest.mark.parametrize(("outcome", "state", "kind"), [
    ("approved", "Approved", None),
    ("approved", "Pending", "state"),
    ("approved", "Declined", "state"),
    ("declined", "Declined", None),
    ("declined", "Approved", "state"),  # money moved that the desk believes did not
    ("error", "Approved", "state"),
    ("unknown", "Approved", "unknown"),
])
def test_a_followup_entry_against_its_record(outcome: str, state: str,
                                             kind: str | None) -> None:
    found, _, counts = compare([entry("ORDER-1-REF1", outcome)],
                               [SALE, record("ORDER-1-REF1", "refund", state)])
    assert [f.kind for f in found] == ([kind] if kind else []), found
    assert counts.agreed == (0 if kind else 1)


@pytest.mark.parametrize(("outcome", "kind"), [
    ("approved", "absent"), ("declined", None), ("error", None), ("unknown", "unknown")])
def test_a_followup_entry_with_nothing_under_its_reference(outcome: str,
                                                           kind: str | None) -> None:
    found, _, _ = compare([entry("ORDER-1-REF1", outcome)], [SALE])
    assert [f.kind for f in found] == ([kind] if kind else []), found


@pytest.mark.parametrize("state", ["Pending", "Approved", "Declined", "Cancelled"])
def test_a_created_checkout_agrees_whatever_the_customer_did(state: str) -> None:
    sale = record(ORDER, "sale", state, amount="50.00")
    found, _, _ = compare([entry(ORDER, "created", "checkout", "50.00")], [sale])
    assert found == []
    other_amount, _, _ = compare([entry(ORDER, "created", "checkout", "49.00")], [sale])
    assert [f.kind for f in other_amount] == ["amount"]


def test_money_no_entry_records_is_reported_once_and_only_when_it_moved() -> None:
    records = [SALE, record("ORDER-1-REF1", "refund"), record("ORDER-1-X", "refund", "Pending"),
               record("ORDER-1-Y", "refund", "Declined"), record("ORDER-1-Z", "capture")]
    found, totals, counts = compare([entry("ORDER-1-REF1", "approved")], records,
                                    elsewhere=frozenset({"ORDER-1-Z"}))
    assert [(f.kind, f.reference, f.gateway and f.gateway.state) for f in found] == [
        ("unrecorded", "ORDER-1-X", "Pending")]  # declined: nothing moved; Z: recorded earlier
    assert counts.gateway_records == 4
    [(cur, op, hist, gw), *rest] = totals.rows()
    assert (cur, op, hist.amount, gw.amount) == ("EUR", "capture", Decimal(0), Decimal("5.00"))
    assert [(r[1], r[2].count, r[3].count) for r in rest] == [("refund", 1, 1)]
    outside, _, _ = compare([], records, in_window=False)
    assert outside == []  # dated outside the window: another night's business


def test_open_reports_money_outside_the_window_apart_and_never_in_the_totals() -> None:
    records = [SALE, record("ORDER-1-REF1", "refund"), record("ORDER-1-Z", "capture")]
    found, totals, counts = compare([], records, elsewhere=frozenset({"ORDER-1-Z"}),
                                    in_window=False, every_record=True)
    assert [(f.kind, f.reference, f.outside_window) for f in found] == [
        ("unrecorded", "ORDER-1-REF1", True)]  # Z: recorded on an earlier night
    assert totals.rows() == []  # the window's totals hold the window's records only
    assert (counts.gateway_records, counts.outside_window) == (0, 2)
    inside, totals, counts = compare([], records, in_window=True, every_record=True)
    assert [(f.reference, f.outside_window) for f in inside] == [
        ("ORDER-1-REF1", False), ("ORDER-1-Z", False)]
    assert (counts.gateway_records, counts.outside_window, len(totals.rows())) == (2, 0, 2)


def test_an_entry_whose_reference_another_transaction_holds() -> None:
    capture = record("ORDER-1-REF1", "capture")
    approved, _, _ = compare([entry("ORDER-1-REF1", "approved")], [SALE, capture])
    assert [f.kind for f in approved] == ["type"]
    # a refund that failed under a reference now held by a capture nobody recorded
    failed, _, _ = compare([entry("ORDER-1-REF1", "error")], [SALE, capture])
    assert [(f.kind, f.operation) for f in failed] == [("unrecorded", "capture")]
