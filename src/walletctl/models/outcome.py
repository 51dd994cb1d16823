"""What an answer proves: the money protocol's rules of interpretation, written once.

Every money movement (single command or batch row, first try or re-run) is judged by
:func:`meaning_of_state`, :func:`meaning_of_failure` and :func:`record_conflicts` only.
Unknown unless proven: only ``not_sent`` and ``refused`` are final without a lookup.
What a meaning becomes is written here once too, for both: the history's outcome
(:func:`history_outcome`, :func:`outcome_of_error`), a batch row's journal state
(:func:`row_state`, :func:`outcome_of_row`) and the exit (:func:`exit_of`).
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
# A batch row's result: its journal's final state, or ``pending`` (never reached the gateway)
RowState = Literal["confirmed", "refused", "unknown", "pending"]


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


# history outcome -> (a batch row's state, the exit): the one table. ``refused``: refused
# before anything was sent; ``error``: never reached the gateway (nothing was sent).
_OUTCOMES: dict[str, tuple[RowState, ExitCode]] = {
    "approved": ("confirmed", ExitCode.OK),
    "created": ("confirmed", ExitCode.OK),
    "declined": ("refused", ExitCode.DECLINED),
    "refused": ("refused", ExitCode.DECLINED),
    "unknown": ("unknown", ExitCode.UNKNOWN_OUTCOME),
    "error": ("pending", ExitCode.NETWORK),
}
# a batch row's state -> the history outcome its entry records
_OUTCOME_OF_ROW: dict[str, str] = {"confirmed": "approved", "refused": "declined",
                                   "unknown": "unknown", "pending": "error"}


def exit_of(outcome: str) -> ExitCode:
    """A movement's exit for the outcome the history records for it (``approved``,
    ``created``, ``declined``, ``unknown``; a batch row's ``refused`` and ``error`` too): the
    one mapping, so what the history says a command exited with and what it exits with never
    differ."""
    found = _OUTCOMES.get(outcome)
    return ExitCode.OK if found is None else found[1]


def row_state(outcome: str) -> RowState:
    """A batch row's state for a history outcome (``approved`` is ``confirmed``, a refusal
    ``refused``, ``error`` ``pending``; anything else is unknown)."""
    found = _OUTCOMES.get(outcome)
    return "unknown" if found is None else found[0]


def outcome_of_row(status: str) -> str:
    """The history outcome a batch row's entry records for the row's state."""
    return _OUTCOME_OF_ROW.get(status, "unknown")


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


def outcome_of_error(exc: BaseException) -> str:
    """The history outcome of a failed movement: what the failure proves."""
    meaning = meaning_of_failure(exc)
    if meaning == "not_sent":
        return "error"
    if meaning == "refused" and isinstance(exc, GatewayError):
        return "error" if exc.status in (401, 403) else "declined"
    return meaning


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
