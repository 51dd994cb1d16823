"""The redirect-wallet smoke steps: checkout, approval, follow-ups, lookups and refusals.

Each builder returns a :class:`~walletctl.ops.smoke.framework.Step` whose action runs through
walletctl's own paths (request building, pre-flight, client) and asserts on states and
amounts. The run accessors (``_target``, ``_amounts``, ``_money``) are shared with the
browser-wallet steps (:mod:`walletctl.ops.smoke.walletpay_steps`).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from walletctl.errors import GatewayError, RefusedError
from walletctl.models.ledger import Balance, balance_from_records, kind_of
from walletctl.models.money import format_major
from walletctl.ops.smoke.amounts import Amounts
from walletctl.ops.smoke.framework import (
    ScenarioRun,
    Step,
    StepFailed,
    check,
    check_equal,
)

if TYPE_CHECKING:
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.redirect import FollowUpPlan
    from walletctl.ops.smoke.target import Target

APPROVED = "Approved"
NOUNS = {"capture": "capture", "refund": "refund", "reverse": "reversal"}
# checkout's redirectDetails where the profile's [redirects] has none (its keys)
DEFAULT_REDIRECTS = {
    "return_url": "https://shop.example/smoke/return",
    "success_url": "https://shop.example/smoke/ok",
    "pending_url": "https://shop.example/smoke/pending",
    "error_url": "https://shop.example/smoke/error",
    "cancel_url": "https://shop.example/smoke/cancel",
    "refused_url": "https://shop.example/smoke/refused",
}


# --------------------------------------------------------------------------- helpers


def _target(run: ScenarioRun) -> Target:
    target: Target = run.target
    return target


def _amounts(run: ScenarioRun) -> Amounts:
    amounts = run.ctx.params.get("amounts")
    return amounts if isinstance(amounts, Amounts) else Amounts()


def _money(run: ScenarioRun, amount: Decimal) -> str:
    return format_major(amount, _target(run).currency)


def _plan_followup(run: ScenarioRun, op: str, original: str, amount: Decimal | None,
                   new_ref: str) -> FollowUpPlan:
    """walletctl's own follow-up path: lookup + pre-flight (raises RefusedError)."""
    from walletctl.ops.redirect import plan_followup

    target = _target(run)
    return plan_followup(target.client, op, original, amount=amount,  # type: ignore[arg-type]
                         currency=target.currency, new_reference=new_ref)


def checkout_step(tag: str, kind: str, amount_of: Callable[[Amounts], Decimal]) -> Step:
    """POST checkout (``kind`` sale|preauth) under a fresh reference; keep the redirect URL."""

    def action(run: ScenarioRun) -> str:
        from pydantic.alias_generators import to_camel

        from walletctl.models.checkout import parse_checkout_type
        from walletctl.ops.redirect import build_checkout_request

        target = _target(run)
        amount = amount_of(_amounts(run))
        ref = run.ref(tag, f"{kind} checkout")
        redirects = {to_camel(key): url for key, url in DEFAULT_REDIRECTS.items()
                     if key not in target.profile.redirects}
        request = build_checkout_request(
            target.profile,
            {"redirectDetails": redirects} if redirects else None,
            {
                "type": parse_checkout_type(kind),
                "amount": str(amount),
                "currencyCode": target.currency,
                "clientSystemTransactionId": ref,
                "providerDiscretionaryData": f"walletctl smoke {run.ctx.run_id}",
            },
        )
        response = target.client.checkout(request)
        url = response.redirect_url
        check(
            url.startswith(("https://", "http://")),
            f"checkout answered a redirectUrl that is not an http(s) URL: {url[:80]!r}",
        )
        run.state["redirect_url"] = url
        run.state["original"] = ref
        run.state["amount"] = amount
        return f"{kind} of {_money(run, amount)}, redirectUrl received"

    return Step("checkout", action, f"POST checkout ({kind})")


def approve_step() -> Step:
    def action(run: ScenarioRun) -> str:
        return _target(run).approve(run.state["original"], run.state["redirect_url"])

    return Step("approve", action, "customer approval of the redirect")


def _original(run: ScenarioRun, records: list[TransactionRecord]) -> TransactionRecord:
    from walletctl.ops.smoke.target import original_record

    ref = run.state["original"]
    if (rec := original_record(records, ref)) is None:
        raise StepFailed(f"lookup of {ref} returned no record with that reference")
    return rec


def lookup_approved_step(kind: str) -> Step:
    """Lookup: the original is Approved with the checkout's amount and currency."""

    def action(run: ScenarioRun) -> str:
        target = _target(run)
        ref = run.state["original"]
        records = target.settled_records(ref)
        rec = _original(run, records)
        check_equal(rec.state, APPROVED, f"state of {ref}")
        check_equal(rec.transaction_amount, run.state["amount"], f"transactionAmount of {ref}")
        check_equal(rec.currency_code.upper(), target.currency, f"currencyCode of {ref}")
        check_equal(kind_of(rec.type), kind, f"type of {ref} ({rec.type})")
        return f"{rec.state}, {_money(run, rec.transaction_amount)}"

    return Step("lookup approved", action, "GET apmTransactions: original Approved")


def followup_step(
    name: str, op: str, tag: str, amount_of: Callable[[Amounts], Decimal] | None
) -> Step:
    """A follow-up through walletctl's own path: lookup + pre-flight, then send; Approved."""

    def action(run: ScenarioRun) -> str:
        target = _target(run)
        original = run.state["original"]
        new_ref = run.ref(tag, f"{NOUNS[op]} of {original}")
        amount = amount_of(_amounts(run)) if amount_of else None
        plan = _plan_followup(run, op, original, amount, new_ref)
        response = target.client.followup(plan.request)
        check_equal(response.state, APPROVED, f"state of the {NOUNS[op]} {new_ref}")
        if response.client_system_transaction_id is not None:
            check_equal(
                response.client_system_transaction_id, new_ref,
                f"clientSystemTransactionId of the {NOUNS[op]} answer",
            )
        return f"{NOUNS[op]} of {_money(run, plan.request.amount)}: {response.state}"

    return Step(name, action, f"POST apmTransactions ({NOUNS[op]})")


def _balance(run: ScenarioRun) -> tuple[Balance, list[TransactionRecord]]:
    target = _target(run)
    ref = run.state["original"]
    records = target.client.lookup(ref)
    try:
        return balance_from_records(ref, records), records
    except RefusedError as exc:
        raise StepFailed(f"lookup of {ref}: {exc.message}") from None


def totals_step(
    *,
    authorised: Callable[[Amounts], Decimal],
    captured: Callable[[Amounts], Decimal],
    refunded: Callable[[Amounts], Decimal],
    reversed_: bool = False,
    name: str = "lookup totals",
) -> Step:
    def action(run: ScenarioRun) -> str:
        amounts = _amounts(run)
        ref = run.state["original"]
        balance, records = _balance(run)
        check_equal(balance.state, APPROVED, f"state of {ref}")
        for what, expected, actual in (
            ("authorised", authorised(amounts), balance.authorised),
            ("captured", captured(amounts), balance.captured),
            ("refunded", refunded(amounts), balance.refunded),
        ):
            if actual != expected:
                raise StepFailed(
                    f"{what} total of {ref}: expected {_money(run, expected)}, got "
                    f"{_money(run, actual)} ({balance.summary()})"
                )
        check_equal(balance.reversed, reversed_, f"reversed flag of {ref}")
        followups = [r for r in run.result.references if r != ref]
        by_ref = {r.client_system_transaction_id: r for r in records}
        for fref in followups:
            if fref in run.state.get("refused", set()):
                rec = by_ref.get(fref)
                check(
                    rec is None or rec.state != APPROVED,
                    f"{fref} was refused by the gateway but its record is {APPROVED}",
                )
            else:
                check(fref in by_ref, f"lookup of {ref} has no record for {fref}")
                check_equal(by_ref[fref].state, APPROVED, f"state of {fref}")
        return f"{balance.summary()} ({len(records)} records)"

    return Step(name, action, "GET apmTransactions: balance of the original")


def refusal_step(
    name: str, op: str, tag: str, amount_of: Callable[[Amounts, Balance], Decimal]
) -> Step:
    """Both walletctl's pre-flight AND the gateway itself must refuse this follow-up."""

    def action(run: ScenarioRun) -> str:
        from walletctl.ops.redirect import make_followup_request

        target = _target(run)
        original = run.state["original"]
        balance, _ = _balance(run)
        amount = amount_of(_amounts(run), balance)
        new_ref = run.ref(tag, f"refused {NOUNS[op]} of {original}")
        try:
            _plan_followup(run, op, original, amount, new_ref)
        except RefusedError:
            pass  # walletctl would not send it: good; now prove the gateway refuses it too
        else:
            raise StepFailed(
                f"walletctl's pre-flight accepted a {NOUNS[op]} of {_money(run, amount)} on "
                f"{original} ({balance.summary()})"
            )
        request = make_followup_request(
            target.profile, op, original, new_ref, amount, target.currency  # type: ignore[arg-type]
        )
        run.state.setdefault("refused", set()).add(new_ref)
        refused = (f"{NOUNS[op]} of {_money(run, amount)} refused by the pre-flight and by "
                   "the gateway")
        try:
            response = target.client.followup(request)
        except GatewayError as exc:
            if exc.status in (401, 403):
                raise
            check(
                exc.status == 422,
                f"expected the gateway to refuse the {NOUNS[op]} with HTTP 422, got: {exc.message}",
            )
            code = f", code {exc.code}" if exc.code else ""
            return f"{refused} (HTTP {exc.status}{code})"
        check(
            response.state != APPROVED,
            f"the gateway ACCEPTED a {NOUNS[op]} of {_money(run, amount)} on {original} "
            f"({balance.summary()}): {new_ref} is {response.state}",
        )
        return f"{refused} (state {response.state})"

    return Step(name, action, f"{NOUNS[op]} that must be refused")
