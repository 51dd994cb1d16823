"""What ``walletctl recon`` finds: findings, totals per currency, counts, and the exit code.

Kinds of finding (docs/history.md, "Reconciliation"):

* ``unrecorded`` — money moved at the gateway (a capture, refund or reversal, Approved or
  not yet final) under an original that was looked up, with no history entry and no journal
  row for its reference: made in a dashboard or by another tool;
* ``absent`` / ``state`` / ``amount`` / ``type`` — a history entry (or journal row) the
  gateway does not confirm: nothing under its reference, another state, another amount or
  currency, another kind of transaction;
* ``unknown`` — an entry whose outcome is still unknown (what the gateway shows is said);
* ``unchecked`` — an original whose lookup could not be answered: nothing about it is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from walletctl.constants import ExitCode

if TYPE_CHECKING:
    from walletctl.history.findings import Recorded
    from walletctl.history.store import Entry
    from walletctl.ops.batch.lookup import Report

Kind = Literal["unrecorded", "absent", "state", "amount", "type", "unknown", "unchecked"]
UNCONFIRMED: tuple[Kind, ...] = ("absent", "state", "amount", "type")
MISMATCHES: tuple[Kind, ...] = ("unrecorded", *UNCONFIRMED, "unknown")
KINDS: tuple[Kind, ...] = (*MISMATCHES, "unchecked")
# Each kind as a mismatch is named in one line ("ORDER-1-REF2 not in the history").
LABELS: dict[Kind, str] = {
    "unrecorded": "not in the history", "absent": "absent", "state": "state differs",
    "amount": "amount differs", "type": "another transaction", "unknown": "unknown",
    "unchecked": "not checked"}
# The operations recon compares (the history's names).
OPERATIONS: tuple[str, ...] = ("checkout", "authorize", "capture", "refund", "reverse")


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

    def history(self, currency: str, operation: str, amount: Decimal) -> None:
        self._pair(currency, operation)[0].add(amount)

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
    agreed: int = 0  # entries and rows the gateway confirms
    not_compared: int = 0  # refused (nothing sent), journal rows of other profiles

    def as_dict(self) -> dict[str, int]:
        return {"originals": self.originals, "entries": self.entries,
                "journalRows": self.journal_rows, "gatewayRecords": self.gateway_records,
                "agreed": self.agreed, "notCompared": self.not_compared}


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
        """0 when everything checked agrees and every original was looked up; 13 when the
        history and the gateway disagree (or an entry is still unknown); else the code of
        what kept lookups from being answered (130 interrupted, 9 credentials refused, 7 not
        reachable, 6 gateway errors or the circuit breaker)."""
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
