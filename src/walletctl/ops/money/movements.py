"""What each operation brings to :func:`.pipeline.move`: how its earlier intents are found, its
plan and pre-flight, its request and the meaning of its answer — :class:`FollowUp` (capture,
refund, reversal) and :class:`Checkout`; an authorization's is ``ops/walletpay.Authorization``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from walletctl.errors import DeclinedError, GatewayError, UnknownOutcomeError, WalletctlError
from walletctl.models.ledger import KIND_OF_OP, kind_of
from walletctl.models.money import parse_major
from walletctl.models.outcome import Planned, exit_of, history_outcome, meaning_of_failure
from walletctl.ops.money.approval import references as approval_references
from walletctl.ops.money.duplicates import likely_duplicate
from walletctl.ops.money.earlier import (
    Judged,
    lookup_or_none,
    resolve_earlier,
    settle,
    unresolved_for,
)
from walletctl.ops.money.pipeline import Ask, Desk, Moved, move

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.history.recorder import Recording
    from walletctl.history.store import HistoryStore
    from walletctl.models.checkout import CheckoutRequest, CheckoutResponse
    from walletctl.models.followup import FollowUpResponse
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.redirect import FollowUpPlan

NOUN = KIND_OF_OP  # capture, refund, reversal: what the command calls its movement


class UnderItsOwnReference:
    """A movement under a reference of its own (checkout, authorization): its identity.
    Earlier intents under it are looked up only when there are some; no duplicate hold."""

    op: str

    def own_reference(self) -> str:
        raise NotImplementedError

    def earlier(self, client: GatewayClient, store: HistoryStore | None,
                dry_run: bool) -> tuple[list[TransactionRecord], list[Judged]]:
        pending = [] if dry_run else unresolved_for(store, client.profile, self.op,
                                                    self.own_reference())
        if not pending:
            return [], []
        return [], settle(store, pending, lookup_or_none(client, self.own_reference()))

    def repeated(self, judged: list[Judged]) -> Judged | None:
        conflict = next((j for j in judged if j.verdict == "conflict"), None)
        if conflict is not None:
            return conflict
        return next((j for j in reversed(judged) if j.verdict == "applied"), None)

    def hold_duplicate(self, store: HistoryStore | None, client: GatewayClient, plan: object,
                       records: list[TransactionRecord]) -> None:
        return None


# ---- capture, refund, reversal --------------------------------------------------------------
@dataclass(frozen=True)
class FollowUp:
    ask: Ask

    def earlier(self, client: GatewayClient, store: HistoryStore | None,
                dry_run: bool) -> tuple[list[TransactionRecord], list[Judged]]:
        records = client.lookup(self.ask.ref)
        judged = [] if dry_run else resolve_earlier(store, client.profile, self.ask.op,
                                                    self.ask.ref, records)
        return records, judged

    def repeated(self, judged: list[Judged]) -> Judged | None:
        """The newest earlier intent this command repeats (same new reference if one is
        given, same amount if one is given), now judged applied, absent or in conflict."""
        ask = self.ask
        for j in reversed(judged):
            e = j.entry
            if j.verdict not in ("applied", "absent", "conflict"):
                continue
            if ask.new_ref is not None and e.new_ref != ask.new_ref:
                continue
            if ask.amount is not None and e.amount is not None and e.currency:
                try:
                    if parse_major(ask.amount, e.currency) != Decimal(e.amount):
                        continue
                except (ValueError, ArithmeticError):
                    continue
            return j
        return None

    def plan(self, client: GatewayClient, store: HistoryStore | None,
             records: list[TransactionRecord], same: Judged | None,
             rec: Recording) -> FollowUpPlan:
        from walletctl.ops.redirect import checked_currency, plan_from_records

        ask, profile = self.ask, client.profile
        currency = checked_currency(ask.currency)
        new_ref, amount, reserved = ask.new_ref, ask.amount, frozenset[str]()
        if same is not None:  # proven not applied: the same request, the same reference
            new_ref, amount = same.entry.new_ref, amount or same.entry.amount
        elif new_ref is None and not ask.dry_run:  # four eyes: the approved reference
            new_ref, reserved = approval_references(store, profile, ask.op, ask.ref,
                                                    ask.approval)
        asked_currency = currency or profile.currency
        if amount is not None and asked_currency is not None:
            # what was asked, before the pre-flight (a bad amount is refused by the plan)
            with contextlib.suppress(ValueError, ArithmeticError):
                rec.planned(new_ref, parse_major(amount, asked_currency), asked_currency)
        return plan_from_records(profile, ask.op,  # type: ignore[arg-type]
                                 ask.ref, records, amount=amount, currency=currency,
                                 new_reference=new_ref, reserved=reserved)

    def planned(self, plan: FollowUpPlan) -> Planned:
        req = plan.request
        return Planned(plan.op, req.client_system_invoice_id, req.client_system_transaction_id,
                       req.amount, req.currency_code)

    def hold_duplicate(self, store: HistoryStore | None, client: GatewayClient,
                       plan: FollowUpPlan, records: list[TransactionRecord]) -> None:
        req = plan.request
        now = datetime.now(UTC)
        dup = likely_duplicate(store, client.profile, operation=plan.op,
                               original_ref=req.client_system_invoice_id, amount=req.amount,
                               currency=req.currency_code, records=records, now=now,
                               itself=frozenset({req.client_system_transaction_id}))
        if dup is not None:
            raise dup.error(now)

    def send(self, client: GatewayClient, plan: FollowUpPlan,
             rec: Recording) -> FollowUpResponse:
        """An answer that does not prove "not applied" leaves the intent unknown, for the
        re-run (or ``history --unknown --reconcile``) to look up; nothing is re-sent here."""
        new = plan.request.client_system_transaction_id
        try:
            response = client.followup(plan.request)
        except WalletctlError as exc:
            is_409 = isinstance(exc, GatewayError) and exc.status == 409
            if not is_409 and meaning_of_failure(exc) == "unknown":
                exc.hint = (f"the outcome is recorded unknown: check with `walletctl lookup "
                            f"{new}`, or run the same command again: it looks {new} up first, "
                            "reports it done if applied, re-sends it under the same reference "
                            "if not")
            raise
        rec.answered(response.state)
        return response


# ---- checkout -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Created:
    """A checkout's answer: created now, or replayed (an identical checkout already
    existed; ``state`` is its state now, None when the lookup failed)."""

    response: CheckoutResponse
    replayed: bool = False
    state: str | None = None


@dataclass(frozen=True)
class Checkout(UnderItsOwnReference):
    request: CheckoutRequest
    op = "checkout"

    def own_reference(self) -> str:
        return self.request.client_system_transaction_id

    def plan(self, client: GatewayClient, store: HistoryStore | None,
             records: list[TransactionRecord], same: Judged | None,
             rec: Recording) -> CheckoutRequest:
        return self.request  # built and checked by the command (request file, flags)

    def planned(self, plan: CheckoutRequest) -> Planned:
        return Planned("checkout", self.own_reference(), None, plan.amount, plan.currency_code,
                       kind_of(plan.type))

    def send(self, client: GatewayClient, plan: CheckoutRequest, rec: Recording) -> Created:
        response = client.checkout(plan)
        if response.replayed:
            state = _state_now(client, self.own_reference())
            rec.answered("Pending", outcome="created", note="checkout already existed "
                         f"(answer replayed); state {state or 'unknown'}")
            return Created(response, replayed=True, state=state)
        # created, not approved: the customer has yet to approve it behind the redirect URL
        rec.answered("Pending", outcome="created",
                     note="checkout created; waiting for the customer")
        return Created(response)


def _state_now(client: GatewayClient, ref: str) -> str | None:
    """A replayed checkout's latest state by one lookup; None when it cannot be told."""
    try:
        records = lookup_or_none(client, ref)
    except WalletctlError:  # the checkout stands; only its state is not known
        return None
    return records[-1].state if records else None


def follow_up(client: GatewayClient, store: HistoryStore | None, ask: Ask,
              desk: Desk[FollowUpPlan]) -> Moved[FollowUpPlan, FollowUpResponse]:
    """One capture, refund or reversal through the pipeline, with its exit (:func:`judged`)."""
    return judged(ask, move(client, store, FollowUp(ask), ask, desk))


def judged(ask: Ask, moved: Moved[FollowUpPlan, FollowUpResponse]
           ) -> Moved[FollowUpPlan, FollowUpResponse]:
    """``moved`` with its exit, decided once from the outcome the history records for it
    (:func:`~walletctl.models.outcome.exit_of`): 0 for Approved; a stated refusal (exit 5)
    or an unknown state (exit 8: looked up by the next run, never taken as refused) with the
    failure the command raises once it has shown the answer. An earlier movement found
    applied (nothing sent now) is judged by its state at the gateway the same way."""
    earlier = moved.earlier
    applied = moved.found or (earlier.record if earlier is not None else None)
    if applied is not None:
        new, state = applied.client_system_transaction_id, applied.state
        said = f"the earlier {NOUN[ask.op]} {new} is {state} at the gateway"
        original = ask.ref
    elif moved.plan is not None and moved.answer is not None:
        new, state = moved.plan.request.client_system_transaction_id, moved.answer.state
        code = moved.answer.provider_state_code
        said = (f"the gateway answered {state}" + (f" ({code})" if code else "")
                + f" for the {NOUN[ask.op]} {new}")
        original = moved.plan.request.client_system_invoice_id
    else:  # a dry run: nothing was sent
        return moved
    outcome = history_outcome(state, ask.op)
    exit_code = exit_of(outcome)
    failure: WalletctlError | None = None
    if outcome == "unknown":
        failure = UnknownOutcomeError(new, f"{said}: not known to be done or refused"
                                      if applied is not None else
                                      f"the gateway answered state {state!r}: not known to "
                                      "be done or refused")
    elif outcome == "declined":
        failure = DeclinedError(said, hint=f"see `walletctl lookup {original}`")
    if failure is not None:
        failure.exit_code = exit_code  # the one exit: what the history records
    return replace(moved, exit_code=int(exit_code), failure=failure)
