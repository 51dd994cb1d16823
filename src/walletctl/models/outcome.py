"""What an answer proves: the money protocol's rules of interpretation, written once.

Every money movement (single command or batch row, first try or re-run) is judged by
:func:`meaning_of_state`, :func:`meaning_of_failure` and :func:`record_conflicts` only.
Unknown unless proven: only ``not_sent`` and ``refused`` are final without a lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from walletctl.constants import ExitCode
from walletctl.errors import (
    DeclinedError,
    GatewayError,
    NotConnectedError,
    RefusedError,
    RequestValidationError,
)
from walletctl.models.ledger import KIND_OF_OP, kind_of
from walletctl.models.money import format_major

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord

APPROVED = "Approved"
# States that state a refusal: final, nothing moved. Any other state but Approved is unknown.
REFUSAL_STATES = frozenset({"Declined", "Errored", "Cancelled", "Expired"})
# 4xx answers that prove the request was refused before anything was stored (documented
# validation, authentication and not-found answers). 408, 409 and 429 are not among them:
# a proxy or the gateway may send them after the request was read.
REFUSING_STATUSES = frozenset({400, 401, 403, 404, 405, 413, 415, 422})

Meaning = Literal["approved", "declined", "unknown"]
Failure = Literal["not_sent", "refused", "declined", "unknown"]


def meaning_of_state(state: str | None) -> Meaning:
    if state == APPROVED:
        return "approved"
    if state in REFUSAL_STATES:
        return "declined"
    return "unknown"


def history_outcome(state: str | None, operation: str | None = None) -> str:
    """The history's outcome for a state (a checkout's ``Pending`` is ``created``)."""
    if operation == "checkout" and state in ("Pending", "", None):
        return "created"  # accepted, waiting for the customer: no money has moved
    return meaning_of_state(state)


def exit_of(outcome: str) -> ExitCode:
    """A movement's exit for the outcome the history records for it (``approved``,
    ``created``, ``declined``, ``unknown``): the one mapping, so what the history says a
    command exited with and what it exits with never differ."""
    return {"declined": ExitCode.DECLINED,
            "unknown": ExitCode.UNKNOWN_OUTCOME}.get(outcome, ExitCode.OK)


def meaning_of_failure(exc: BaseException) -> Failure:
    """What an error while sending a money movement proves."""
    if isinstance(exc, RefusedError | RequestValidationError):
        return "refused"  # walletctl's own pre-flight: nothing was sent
    if isinstance(exc, DeclinedError):
        return "declined"
    if isinstance(exc, NotConnectedError):
        return "not_sent"
    if isinstance(exc, GatewayError):
        return "refused" if exc.status in REFUSING_STATUSES else "unknown"
    # connected then no answer, an unknown outcome, an unreadable answer, a redirect,
    # an interrupt, or a bug after the request left: it may have been read
    return "unknown"


@dataclass(frozen=True)
class Intended:
    """What an intent asked the gateway for, under its reference."""

    reference: str
    operation: str  # capture | refund | reverse | checkout | authorize
    amount: Decimal | None
    currency: str | None
    kind: str | None = None  # a checkout's record kind (sale, preauth), when known

    def describe(self) -> str:
        money = (f" of {format_major(self.amount, self.currency)}"
                 if self.amount is not None and self.currency else "")
        return f"{self.operation} {self.reference}{money}"


def find_record(records: list[TransactionRecord], reference: str) -> TransactionRecord | None:
    return next((r for r in records if r.client_system_transaction_id == reference), None)


def record_conflicts(record: TransactionRecord, intended: Intended) -> list[str]:
    """How the record under ``intended.reference`` differs from the intent (empty: it is it).
    A field the gateway does not show is not a difference."""
    found: list[str] = []
    want_kind = intended.kind or KIND_OF_OP.get(intended.operation)
    shown_kind = kind_of(record.type)
    if want_kind is not None and record.type and shown_kind != want_kind:
        found.append(f"type {record.type}, not a {want_kind}")
    if intended.currency and record.currency_code.upper() != intended.currency.upper():
        found.append(f"currency {record.currency_code}, not {intended.currency.upper()}")
    elif intended.amount is not None and record.transaction_amount != intended.amount:
        cur = record.currency_code
        found.append(f"amount {format_major(record.transaction_amount, cur)}, not "
                     f"{format_major(intended.amount, cur)}")
    return found


def describe_record(record: TransactionRecord) -> str:
    kind = kind_of(record.type) or record.type or "transaction"
    return (f"{kind} {record.client_system_transaction_id} of "
            f"{format_major(record.transaction_amount, record.currency_code)} "
            f"({record.state})")


def conflict_note(intended: Intended, record: TransactionRecord, conflicts: list[str]) -> str:
    """How a conflict is named, everywhere: both transactions, and what differs."""
    return (f"conflict: intended {intended.describe()}, the gateway shows "
            f"{describe_record(record)} ({'; '.join(conflicts)})")


@dataclass(frozen=True)
class Planned:
    """What every operation's plan says of itself: the movement the desk's rules judge."""

    op: str
    original: str  # the original's reference (a checkout's and an authorization's own)
    new_ref: str | None  # the new transaction's (None: a checkout, which is the original)
    amount: Decimal
    currency: str
    kind: str | None = None  # a checkout's record kind (sale, preauth)

    @property
    def reference(self) -> str:
        return self.new_ref or self.original
