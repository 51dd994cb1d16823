"""What a batch run is given and gives back, and how a row becomes its request.

* :class:`RunOptions` — the runner's knobs; :class:`RowResult` — one row's outcome;
  :class:`RunReport` — the run's counts and events;
* :func:`build_request` — the row's spec 2.3 request (also what ``--dry-run`` prints);
  :func:`request_problem` — the same model as a validation step during planning;
  :class:`RequestTemplate` — the runner's per-row bytes of that request, without the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from walletctl.ops.batch.flow import BACKOFF_INITIAL, BACKOFF_MAX, MAX_ATTEMPTS
from walletctl.ops.batch.journal import JournalRow
from walletctl.ops.batch.rows import Op, Problem, Row

if TYPE_CHECKING:
    from walletctl.client.gateway import FollowUpCall
    from walletctl.config.profile import Profile
    from walletctl.models.followup import FollowUpRequest


@dataclass(frozen=True)
class RunOptions:
    op: Op
    concurrency: int = 8
    rate: float | None = None
    max_failures: int = 10
    max_attempts: int = MAX_ATTEMPTS
    preflight: bool = True
    # After a timeout/drop, wait this long before trusting "absent" (a slow gateway may still
    # be committing the first request). 5xx answers need no settling: the gateway is done.
    settle: float = 0.5
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    # One round trip for rows that need no lookup (see _direct); False: full pre-flight always.
    direct: bool = True
    # Dry run: lookups and pre-flight only; rows that would be sent are journaled as such.
    predict: bool = False
    # Connect failures before any answer that make the gateway "unreachable" (stop the batch).
    unreachable_after: int = 3
    # Send rows identical to a recent movement made outside this batch (else: held).
    allow_duplicate: bool = False


@dataclass
class RowResult:
    line: int
    ref: str
    new_ref: str
    op: Op
    amount: Decimal
    currency: str
    status: str  # confirmed | refused | unknown | pending
    txn_id: str | None = None
    txn_state: str | None = None
    detail: str | None = None
    attempts: int = 0
    earlier_run: bool = False
    profile: str | None = None  # the row's profile column (None: the command's)

    def as_dict(self) -> dict[str, Any]:
        return {
            "line": self.line, "op": self.op, "ref": self.ref, "new_ref": self.new_ref,
            "amount": f"{self.amount:f}", "currency": self.currency, "status": self.status,
            "transaction_id": self.txn_id, "state": self.txn_state, "attempts": self.attempts,
            "earlier_run": self.earlier_run, "detail": self.detail,
        }


@dataclass
class RunReport:
    counts: dict[str, int] = field(
        default_factory=lambda: {"confirmed": 0, "refused": 0, "unknown": 0, "pending": 0}
    )
    confirmed_totals: dict[str, Decimal] = field(default_factory=dict)
    earlier: int = 0  # rows finished by an earlier run
    requests: int = 0
    sent_rows: int = 0  # rows whose request left in this run (the rate counts these only)
    elapsed: float = 0.0
    interrupted: bool = False
    breaker_open: bool = False
    breaker_reason: str | None = None
    fatal: str | None = None  # e.g. credentials refused: every row would fail the same way
    fatal_code: int | None = None  # the ExitCode for ``fatal``
    fatal_hint: str | None = None  # the single command's hint for the same error
    breaker_threshold: int = 0
    # What happened on the way (for the summary and the fault tests): throttled, gateway_5xx,
    # network, no_answer, found_on_lookup (an unclear send that had been applied),
    # absent_on_lookup (an unclear send proven not applied, then re-sent).
    events: dict[str, int] = field(default_factory=dict)

    def note(self, event: str) -> None:
        self.events[event] = self.events.get(event, 0) + 1

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


_FIELD_OF = {"clientSystemInvoiceId": "ref", "clientSystemTransactionId": "new_ref",
             "amount": "amount", "currencyCode": "currency"}


def request_problem(profile: Profile, op: Op, row: Row) -> Problem | None:
    """Build ``row``'s request with the request model (with a stand-in for a derived new
    reference); a refusal becomes the row's problem, named by the batch column."""
    from pydantic import ValidationError

    stand_in = JournalRow("", row.line, row.ref, row.new_ref or "cap-00000000-0", row.amount,
                          row.currency, row.profile, "planned", 0, None, None, None)
    try:
        build_request(profile, op, stand_in)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(x) for x in first.get("loc", ())]
        wire = loc[0] if loc else ""
        msg = str(first.get("msg", "is invalid")).removeprefix("Value error, ")
        if not loc and ":" in msg:  # model-level rule: "amount: ..." / "clientSystem...: ..."
            wire, msg = (part.strip() for part in msg.split(":", 1))
        return Problem(row.line, _FIELD_OF.get(wire, wire or "(row)"), msg)
    return None


def build_request(profile: Profile, op: Op, row: JournalRow) -> FollowUpRequest:
    """The spec 2.3 request for one row (also what --dry-run prints)."""
    from walletctl.constants import APM_PROVIDER
    from walletctl.models.followup import OPERATION_TYPES, ApmRequestDetails, FollowUpRequest

    return FollowUpRequest(
        merchant_id=profile.merchant_id,
        store_id=profile.store_id,
        user_id=profile.user_id,
        type=OPERATION_TYPES[op],
        amount=row.amount,
        currency_code=row.currency,
        client_system_transaction_id=row.new_ref,
        client_system_invoice_id=row.ref,
        apm_details=ApmRequestDetails(apm_provider=APM_PROVIDER),
    )


class RequestTemplate:
    """A profile's follow-up body for one operation, with the row's fields filled in: the
    bytes :func:`build_request` would send for the row (tests/batch check that they are
    equal, byte for byte), without building and validating a model per row again. Every row
    of a run passed ``build_request`` when the run was planned (``request_problem``);
    building it a second time per row cost a tenth of a row's CPU."""

    def __init__(self, profile: Profile, op: Op) -> None:
        from walletctl.constants import APM_PROVIDER
        from walletctl.models.base import dumps
        from walletctl.models.followup import OPERATION_TYPES

        self.op = op
        self.type = OPERATION_TYPES[op]
        self.fmt = profile.amount_format
        head = {"merchantId": profile.merchant_id, "storeId": profile.store_id,
                "userId": profile.user_id, "type": self.type}
        self._head = dumps(head)[:-1] + ',"amount":'
        self._tail = ',"apmDetails":' + dumps({"apmProvider": APM_PROVIDER}) + "}"
        # imported once here, not per row (client.aio brings aiohttp: only a real run needs it)
        from walletctl.client.gateway import FollowUpCall
        from walletctl.models.money import to_wire

        self._call, self._to_wire = FollowUpCall, to_wire

    def call(self, row: JournalRow) -> FollowUpCall:
        text = json.dumps  # JSON string literals, escaped as the model's encoder does
        amount = self._to_wire(row.amount, row.currency, self.fmt)
        body = (f'{self._head}{text(amount)},"currencyCode":{text(row.currency)},'
                f'"clientSystemTransactionId":{text(row.new_ref)},'
                f'"clientSystemInvoiceId":{text(row.ref)}{self._tail}')
        return self._call(body.encode(), row.new_ref, row.ref, row.amount, row.currency,
                          self.type, self.op)
