"""One original's comparison: what the desk recorded against what one lookup shows.

The rules of interpretation are the money protocol's, not a second version of them:
:func:`walletctl.ops.money.earlier.judge` decides whether the record under an entry's
reference IS that entry (operation, amount, currency), and
:func:`walletctl.models.outcome.history_outcome` what a state means. What recon adds is
whether the history's outcome agrees with it:

=================  ==========================================================
history outcome    agrees with
=================  ==========================================================
approved           the record, Approved
created            the record, in any state (the customer decides later)
declined, error    no record, or the record in a refusal state
unknown            never: listed as still open, with what the gateway shows
refused            not compared (nothing was sent)
=================  ==========================================================
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from walletctl.models.ledger import kind_of
from walletctl.models.money import format_major
from walletctl.models.outcome import history_outcome, meaning_of_state
from walletctl.ops.money.earlier import judge
from walletctl.ops.recon.model import Counts, Expected, Finding, Kind, Seen, Totals

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord

# the record kinds a follow-up creates -> the history's operation names
OP_OF_KIND = {"capture": "capture", "refund": "refund", "reversal": "reverse"}
MOVED = ("approved", "created")  # outcomes that say something is at the gateway
NOT_APPLIED = ("declined", "error")


def seen(record: TransactionRecord) -> Seen:
    return Seen(record.client_system_transaction_id, record.type, record.state,
                record.transaction_amount, record.currency_code.upper(),
                record.transaction_date_time)


def money_text(amount: str | Decimal | None, currency: str | None) -> str:
    """``15.00 EUR`` ("" without an amount or currency; as given when it is no amount)."""
    if amount is None or not currency:
        return ""
    try:
        return format_major(Decimal(amount), currency)
    except (ArithmeticError, KeyError, ValueError):
        return f"{amount} {currency}"


def _finding(kind: Kind, exp: Expected, note: str,
             record: TransactionRecord | None) -> Finding:
    e = exp.entry
    return Finding(kind, exp.original, e.reference, e.operation, note, source=exp.source,
                   entry=e.id or None, outcome=e.outcome, amount=e.amount, currency=e.currency,
                   who=e.who if e.id else None, gateway=None if record is None else seen(record))


def _agrees(outcome: str, state: str, operation: str) -> bool:
    shown = history_outcome(state, operation)
    return (outcome == "created" or (outcome == "approved" and shown == "approved")
            or (outcome in NOT_APPLIED and shown == "declined"))


def judge_expected(exp: Expected, records: list[TransactionRecord],
                   accounted: set[str]) -> Finding | None:
    """The finding about one entry (None: the gateway confirms it). ``accounted`` gains
    the references whose record this entry explains or names."""
    e = exp.entry
    judged = judge(e, records)
    record = judged.record
    said = f"the history says {e.operation} {e.outcome} {money_text(e.amount, e.currency)}"
    said = said.rstrip()  # no amount: nothing after the outcome
    if e.outcome == "unknown":
        if record is not None:
            accounted.add(e.reference)
        how = ("walletctl history --unknown --reconcile" if e.id
               else "run the batch again to resolve it")
        return _finding("unknown", exp, f"outcome unknown: {judged.note} (settle it: {how})",
                        record)
    if judged.verdict == "conflict" and record is not None:
        if e.outcome not in MOVED:
            return None  # not applied; the other transaction is checked on its own
        accounted.add(e.reference)
        money = any(c.startswith(("amount", "currency")) for c in judged.conflicts)
        return _finding("amount" if money else "type", exp, judged.note, record)
    if record is None:  # absent (or an authorisation lookup cannot show)
        if e.outcome in MOVED:
            return _finding("absent", exp, f"{said}; the gateway has no transaction "
                                           f"{e.reference}", None)
        return None
    accounted.add(e.reference)
    if _agrees(e.outcome, record.state, e.operation):
        return None
    return _finding("state", exp, f"{said}; the gateway shows it {record.state}", record)


def compare_original(
    original: str,
    expected: list[Expected],
    records: list[TransactionRecord],
    *,
    in_window: Callable[[TransactionRecord], bool],
    recorded_elsewhere: Callable[[], set[str]],
    operations: frozenset[str],
    totals: Totals,
    counts: Counts,
) -> list[Finding]:
    """Findings about ``original``: its entries the gateway does not confirm, its entries
    still unknown, and the money its lookup shows that no entry records.

    ``recorded_elsewhere`` (called only when a record is not explained by ``expected``):
    the references the desk recorded for this original outside the window or journals."""
    found: list[Finding] = []
    accounted: set[str] = set()
    for exp in expected:
        e = exp.entry
        if e.outcome == "approved" and e.operation in OP_OF_KIND.values() and e.currency \
                and e.amount is not None:
            with contextlib.suppress(InvalidOperation):
                totals.history(e.currency.upper(), e.operation, Decimal(e.amount))
        finding = judge_expected(exp, records, accounted)
        if finding is None:
            counts.agreed += 1
        else:
            found.append(finding)
    elsewhere: set[str] | None = None
    for rec in records:
        op = OP_OF_KIND.get(kind_of(rec.type) or "")
        ref = rec.client_system_transaction_id
        if op is None or ref == original or op not in operations or not in_window(rec):
            continue
        counts.gateway_records += 1
        meaning = meaning_of_state(rec.state)
        if meaning == "approved":
            totals.gateway(rec.currency_code.upper(), op, rec.transaction_amount)
        if meaning == "declined" or ref in accounted:
            continue  # nothing moved, or an entry above explains or names it
        if elsewhere is None:
            elsewhere = recorded_elsewhere()
        if ref in elsewhere:
            continue
        money = format_major(rec.transaction_amount, rec.currency_code)
        found.append(Finding(
            "unrecorded", original, ref, op,
            f"{op} {ref} of {money} is {rec.state} at the gateway; no history entry or "
            f"journal row records it", gateway=seen(rec)))
    return found
