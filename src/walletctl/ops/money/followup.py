"""One capture, refund or reversal through the money protocol (a batch of one).

    lock the original (this machine) -> look it up once
    -> resolve earlier unknown intents on it (any profile or URL)   [earlier.py]
    -> plan and pre-flight (the ledger's rules)                      [ops.redirect]
    -> likely-duplicate hold                                         [duplicates.py]
    -> the desk's policy; four eyes above the approval amount        [approval.py]
    -> confirmation
    -> intent recorded (committed; an approval spent with it) -> send -> interpret
    -> record the outcome (one history entry per movement)

The batch runner (ops/batch) goes through the same steps with the same functions; only its
scheduling, retries and group commit are its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from walletctl.errors import (
    DeclinedError,
    GatewayError,
    UnknownOutcomeError,
    WalletctlError,
)
from walletctl.history.policy import check_policy
from walletctl.history.recorder import Recording, recording
from walletctl.models.inputs import check_inputs
from walletctl.models.ledger import KIND_OF_OP
from walletctl.models.money import parse_major
from walletctl.models.outcome import Intended, meaning_of_failure, meaning_of_state
from walletctl.ops.money.approval import gate_single
from walletctl.ops.money.approval import references as approval_references
from walletctl.ops.money.approval import threshold as approval_amount
from walletctl.ops.money.duplicates import likely_duplicate
from walletctl.ops.money.earlier import Judged, resolve_earlier, taken
from walletctl.ops.money.lock import hold_original, lock_key
from walletctl.ops.redirect import (
    FollowUpPlan,
    checked_currency,
    plan_from_records,
)

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.history.store import HistoryStore
    from walletctl.models.followup import FollowUpResponse, Operation
    from walletctl.models.records import TransactionRecord

NOUN = KIND_OF_OP  # capture, refund, reversal: what the command calls its movement


@dataclass(frozen=True)
class Ask:
    """What the operator asked for (already parsed by the command)."""

    op: Operation
    ref: str
    amount: str | None = None
    currency: str | None = None
    new_ref: str | None = None
    reason: str | None = None
    confirm_amount: str | None = None
    allow_duplicate: bool = False
    dry_run: bool = False
    approval: int | None = None  # the id of a second operator's approval (--approval)


@dataclass(frozen=True)
class Desk:
    """The command's conversation with the operator (the CLI passes its prompts)."""

    confirm: Callable[[FollowUpPlan], None]
    ask_amount: Callable[[str], str] | None = None
    on_wait: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Moved:
    """What happened: ``response`` to a request sent now, or ``earlier``: this command's
    earlier intent was applied and nothing was sent, or ``found``: the gateway answered 409
    and showed this very movement already there; ``plan`` alone: a dry run."""

    plan: FollowUpPlan | None = None
    response: FollowUpResponse | None = None
    earlier: Judged | None = None
    # the gateway answered 409 and its lookup shows this very movement: nothing new applied
    found: TransactionRecord | None = None


def follow_up(client: GatewayClient, store: HistoryStore | None, ask: Ask, desk: Desk) -> Moved:
    """Move the money once, or say why not (an exception with its exit code)."""
    profile = client.profile
    check_inputs(references={"REF": ask.ref,
                             "--new-ref (clientSystemTransactionId)": ask.new_ref},
                 amounts={"--amount": ask.amount}, currencies={"--currency": ask.currency})
    currency = checked_currency(ask.currency)
    hold = (contextlib.nullcontext() if ask.dry_run else hold_original(
        store, lock_key(profile.merchant_id, profile.store_id, ask.ref), what=ask.ref,
        on_wait=desk.on_wait))
    with hold, recording(store, profile, ask.op, ask.ref, reason=ask.reason) as rec:
        records = client.lookup(ask.ref)
        judged = [] if ask.dry_run else resolve_earlier(store, profile, ask.op, ask.ref, records)
        same = _repeated(judged, ask)
        if same is not None and same.verdict == "conflict":  # reported once, then recorded
            raise same.error()
        if same is not None and same.verdict == "applied":
            return Moved(earlier=same)
        new_ref, amount, reserved = ask.new_ref, ask.amount, frozenset[str]()
        if same is not None:  # proven not applied: the same request, the same reference
            new_ref, amount = same.entry.new_ref, amount or same.entry.amount
        elif new_ref is None and not ask.dry_run:  # four eyes: the approved reference
            new_ref, reserved = approval_references(store, profile, ask.op, ask.ref,
                                                    ask.approval)
        _requested(rec, new_ref, amount, currency or profile.currency)
        plan = plan_from_records(profile, ask.op, ask.ref, records, amount=amount,
                                 currency=currency, new_reference=new_ref, reserved=reserved)
        req = plan.request
        rec.planned(req.client_system_transaction_id, req.amount, req.currency_code)
        if same is None and not ask.allow_duplicate:  # a dry run shows the hold too
            _hold_duplicate(store, client, plan, records)
        if ask.dry_run:
            return Moved(plan=plan)
        settings = profile.history
        # an earlier intent re-sent under its reference spends (spent) the same approval
        approval = ask.approval if ask.approval is not None or same is None else \
            same.entry.approval
        above = approval_amount(profile, ask.op)
        four_eyes = approval is not None or (above is not None and req.amount > above)
        check_policy(  # a second operator's approval replaces the typed amount
            profile_name=profile.name, operation=ask.op, amount=req.amount,
            currency=req.currency_code, require_reason=settings.require_reason,
            limits={} if four_eyes else settings.limits, reason=ask.reason,
            confirm_amount=ask.confirm_amount, ask=desk.ask_amount,
        )
        spend = gate_single(store, profile, plan, ask.reason, approval, rec)
        desk.confirm(plan)
        rec.sending(hook=spend)
        answer = _send(client, plan, rec)
        from walletctl.models.records import TransactionRecord

        if isinstance(answer, TransactionRecord):
            return Moved(plan=plan, found=answer)
        return Moved(plan=plan, response=answer)


def _repeated(judged: list[Judged], ask: Ask) -> Judged | None:
    """The newest earlier intent this command repeats (same new reference if one is given,
    same amount if one is given), now judged applied, absent or in conflict."""
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


def _requested(rec: Recording, new_ref: str | None, amount: str | None,
               currency: str | None) -> None:
    """What the operator asked for, recorded before the pre-flight: a refused request's
    history entry then carries its amount and currency (the plan refines them)."""
    if amount is None or currency is None:
        return
    # a bad amount is refused by the plan, with its own message
    with contextlib.suppress(ValueError, ArithmeticError):
        rec.planned(new_ref, parse_major(amount, currency), currency)


def _hold_duplicate(store: HistoryStore | None, client: GatewayClient, plan: FollowUpPlan,
                    records: list[TransactionRecord]) -> None:
    req = plan.request
    now = datetime.now(UTC)
    dup = likely_duplicate(store, client.profile, operation=plan.op,
                           original_ref=req.client_system_invoice_id, amount=req.amount,
                           currency=req.currency_code, records=records, now=now,
                           itself=frozenset({req.client_system_transaction_id}))
    if dup is not None:
        raise dup.error(now)


def _send(client: GatewayClient, plan: FollowUpPlan,
          rec: Recording) -> FollowUpResponse | TransactionRecord:
    """Send; an answer that does not prove "not applied" leaves the intent unknown in the
    history, for the next run (or ``history --unknown --reconcile``) to look up. Unlike a
    batch row, a single command does not look up and re-send by itself: the operator
    decides, and the re-run resolves it before anything else is sent."""
    req = plan.request
    new = req.client_system_transaction_id
    try:
        response = client.followup(req)
    except WalletctlError as exc:
        if isinstance(exc, GatewayError) and exc.status == 409:
            # the reference is already used: by another transaction (refused), or by this
            # very movement earlier (a gateway without replay): one lookup tells, as in a
            # batch and a checkout (earlier.taken)
            intended = Intended(new, plan.op, req.amount, req.currency_code)
            return taken(client, intended, req.client_system_invoice_id, rec)
        _unknown_hint(exc, new)
        raise
    rec.answered(response.state)
    return response


def _unknown_hint(exc: WalletctlError, new: str) -> None:
    if meaning_of_failure(exc) == "unknown":
        exc.hint = (f"the outcome is recorded unknown: check with `walletctl lookup {new}`, "
                    f"or run the same command again: it looks {new} up first, reports it "
                    "done if applied, re-sends it under the same reference if not")


def interpret(plan: FollowUpPlan, response: FollowUpResponse) -> None:
    """The answer's meaning for the command's exit (after it was rendered): raise for
    anything but Approved: a stated refusal, or an unknown state (looked up by the next
    run, never taken as refused)."""
    new = plan.request.client_system_transaction_id
    meaning = meaning_of_state(response.state)
    if meaning == "unknown":
        raise UnknownOutcomeError(new, f"the gateway answered state {response.state!r}: "
                                       "not known to be done or refused")
    if meaning == "declined":
        raise DeclinedError(
            f"the gateway answered {response.state}"
            + (f" ({response.provider_state_code})" if response.provider_state_code else "")
            + f" for the {NOUN[plan.op]} {new}",
            hint=f"see `walletctl lookup {plan.request.client_system_invoice_id}`",
        )

