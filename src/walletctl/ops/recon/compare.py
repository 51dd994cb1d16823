"""What ``walletctl recon`` finds and how one original is compared: what the desk recorded
against what one lookup shows (docs/history.md, "Reconciliation"). Whether a record IS an
entry is the money protocol's rule (:func:`walletctl.ops.money.earlier.judge`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal

from walletctl.constants import ExitCode
from walletctl.models import operations
from walletctl.models.ledger import kind_of
from walletctl.models.money import format_major
from walletctl.models.outcome import history_outcome, meaning_of_state
from walletctl.ops.money.earlier import judge

if TYPE_CHECKING:
    from walletctl.history.findings import Recorded
    from walletctl.history.store import Entry
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.batch.balance_report import Report

Kind = Literal["unrecorded", "absent", "state", "amount", "type", "unapproved", "unknown",
               "unchecked"]
# unapproved: the gateway may agree, the desk's rulebook does not (money moved above the
# approval amount with no approval spent for it)
UNCONFIRMED: tuple[Kind, ...] = ("absent", "state", "amount", "type", "unapproved")
MISMATCHES: tuple[Kind, ...] = ("unrecorded", *UNCONFIRMED, "unknown")
KINDS: tuple[Kind, ...] = (*MISMATCHES, "unchecked")
# Each kind as a mismatch is named in one line ("ORDER-1-REF2 not in the history").
LABELS: dict[Kind, str] = {
    "unrecorded": "not in the history", "absent": "absent", "state": "state differs",
    "amount": "amount differs", "type": "another transaction",
    "unapproved": "moved without an approval", "unknown": "unknown",
    "unchecked": "not checked"}
# The operations recon compares (the history's names).
OPERATIONS: tuple[str, ...] = operations.HISTORY_NAMES


@dataclass(frozen=True)
class Expected:
    """A movement the desk's records say was made: a history entry, or a batch journal's
    row (then ``entry.id`` is 0 and ``source`` names the journal and line)."""

    entry: Entry
    source: str

    @property
    def original(self) -> str:
        return self.entry.original_ref or self.entry.reference


@dataclass(frozen=True)
class Seen:
    """A transaction as the gateway shows it."""

    reference: str
    type: str | None
    state: str
    amount: Decimal
    currency: str
    time: str | None  # as given

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "type": self.type, "state": self.state,
                "amount": f"{self.amount:f}", "currency": self.currency, "time": self.time}


@dataclass(frozen=True)
class Finding:
    kind: Kind
    original: str
    reference: str
    operation: str | None
    note: str
    source: str | None = None  # "history #12", "journal FILE line 3"; None: nowhere
    entry: int | None = None
    outcome: str | None = None  # the history's (or journal's) outcome
    amount: str | None = None  # the history's amount, major units as text
    currency: str | None = None
    who: str | None = None  # who made the entry (a shared history: the database role)
    gateway: Seen | None = None
    recorded: Recorded | None = None  # on file in the history (recon --record), if it is
    # an unrecorded record dated outside the window, found by recon --open: not in the totals
    outside_window: bool = False

    @property
    def resolved(self) -> bool:
        """Looked at and closed with a note (recon resolve): not reported as new."""
        return self.recorded is not None and self.recorded.state == "resolved"

    def sort_key(self) -> tuple[str, str, int, str]:
        return (self.original, self.reference, self.entry or 0, self.source or "")

    def as_dict(self) -> dict[str, Any]:
        desk = None if self.source is None else {
            "outcome": self.outcome, "amount": self.amount, "currency": self.currency,
            "operator": self.who}
        return {"kind": self.kind, "original": self.original, "reference": self.reference,
                "operation": self.operation, "source": self.source, "entry": self.entry,
                "history": desk,
                "gateway": None if self.gateway is None else self.gateway.as_dict(),
                "note": self.note, "finding": None if self.recorded is None else {
                    "id": self.recorded.id, "state": self.recorded.state,
                    "recordedBy": self.recorded.recorded_by,
                    "resolvedBy": self.recorded.resolved_by,
                    "resolvedAt": self.recorded.resolved_at,
                    "resolution": self.recorded.resolution}}


@dataclass
class Side:
    count: int = 0
    amount: Decimal = Decimal(0)

    def add(self, amount: Decimal) -> None:
        self.count += 1
        self.amount += amount


@dataclass
class Totals:
    """currency -> operation -> (history side, gateway side), follow-ups only."""

    sums: dict[str, dict[str, tuple[Side, Side]]] = field(default_factory=dict)

    def _pair(self, currency: str, operation: str) -> tuple[Side, Side]:
        return self.sums.setdefault(currency, {}).setdefault(operation, (Side(), Side()))

    def history_entry(self, e: Entry) -> None:
        """An approved follow-up's amount on the history's side."""
        if e.outcome == "approved" and e.operation in OP_OF_KIND.values() and e.currency \
                and e.amount is not None:
            with contextlib.suppress(InvalidOperation):
                self._pair(e.currency.upper(), e.operation)[0].add(Decimal(e.amount))

    def gateway(self, currency: str, operation: str, amount: Decimal) -> None:
        self._pair(currency, operation)[1].add(amount)

    def rows(self) -> list[tuple[str, str, Side, Side]]:
        """(currency, operation, history, gateway), sorted."""
        return [(cur, op, *self.sums[cur][op])
                for cur in sorted(self.sums) for op in sorted(self.sums[cur])]


@dataclass
class Counts:
    originals: int = 0  # orders looked up
    entries: int = 0  # history entries compared
    journal_rows: int = 0  # journal rows compared (not already in the history)
    gateway_records: int = 0  # follow-ups at the gateway in the window
    outside_window: int = 0  # follow-ups dated outside it, compared by recon --open
    agreed: int = 0  # entries and rows the gateway confirms
    not_compared: int = 0  # refused (nothing sent), journal rows of other profiles

    def as_dict(self) -> dict[str, int]:
        return {"originals": self.originals, "entries": self.entries,
                "journalRows": self.journal_rows, "gatewayRecords": self.gateway_records,
                "outsideWindow": self.outside_window, "agreed": self.agreed,
                "notCompared": self.not_compared}


@dataclass
class ReconResult:
    profile: str
    merchant_id: str
    store_id: str
    history: str  # a file's path or a database URL without a password
    backend: str  # sqlite | postgresql | none
    journals: list[str]
    since: str | None
    until: str
    operations: list[str]
    report: Report
    findings: list[Finding] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    counts: Counts = field(default_factory=Counts)
    open_since: str | None = None  # recon --open: orders with an entry since then looked up

    def of(self, *kinds: Kind, resolved: bool | None = None) -> list[Finding]:
        """The findings of these kinds (``resolved``: only those resolved, or not)."""
        return [f for f in self.findings if f.kind in kinds
                and (resolved is None or f.resolved == resolved)]

    @property
    def mismatches(self) -> list[Finding]:
        """The open ones: a finding resolved in the history is not reported as new."""
        return [f for f in self.of(*MISMATCHES) if not f.resolved]

    @property
    def resolved(self) -> list[Finding]:
        return [f for f in self.findings if f.resolved]

    @property
    def exit_code(self) -> int:
        """0 when everything agrees and every original was looked up; 13 on a mismatch; else
        the code of what kept lookups from being answered (130, 9, 7 or 6)."""
        if self.report.interrupted:
            return int(ExitCode.INTERRUPTED)
        if self.mismatches:
            return int(ExitCode.MISMATCH)
        if self.report.fatal_code is not None:
            return self.report.fatal_code
        if self.report.breaker_open or self.of("unchecked"):
            return int(ExitCode.GATEWAY)
        return int(ExitCode.OK)

    def kind_counts(self) -> dict[str, int]:
        """Open findings per kind, and how many were resolved before."""
        return {**{kind: len(self.of(kind, resolved=False)) for kind in KINDS},
                "resolved": len(self.resolved)}


# the record kinds a follow-up creates -> the history's operation names
OP_OF_KIND: dict[str, str] = dict(operations.OP_OF_KIND)
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


def unapproved(expected: list[Expected],
               why: Callable[[Entry], str | None]) -> list[Finding]:
    """The entries of ``expected`` that moved money the desk's rulebook did not allow
    (``why``: :func:`walletctl.history.rulebook.unapproved_check`), each a finding."""
    found: list[Finding] = []
    for exp in expected:
        if exp.entry.id and (note := why(exp.entry)) is not None:
            found.append(_finding("unapproved", exp, note, None))
    return found


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
    every_record: bool = False,
) -> list[Finding]:
    """Findings about ``original``: its entries the gateway does not confirm or still unknown,
    and money its lookup shows that no entry records (``recorded_elsewhere``: asked lazily).
    The gateway's side of the totals and counts holds its records dated in the window only;
    ``every_record`` (recon --open): a record dated outside it is looked at too, and money no
    entry records is a finding marked ``outside_window``."""
    found: list[Finding] = []
    accounted: set[str] = set()
    for exp in expected:
        totals.history_entry(exp.entry)
        finding = judge_expected(exp, records, accounted)
        if finding is None:
            counts.agreed += 1
        else:
            found.append(finding)
    elsewhere: set[str] | None = None
    for rec in records:
        op = OP_OF_KIND.get(kind_of(rec.type) or "")
        ref = rec.client_system_transaction_id
        if op is None or ref == original or op not in operations:
            continue
        dated_in = in_window(rec)
        if not dated_in and not every_record:
            continue  # another night's business
        meaning = meaning_of_state(rec.state)
        if not dated_in:
            counts.outside_window += 1
        else:
            counts.gateway_records += 1
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
            f"journal row records it", gateway=seen(rec), outside_window=not dated_in))
    return found
