"""The smoke scenarios: named step sequences with assertions on state and amounts.

Amounts are whole major units by default so they are valid in every currency (JPY, EUR, BHD)
and never hit the sandbox's magic endings (01-05: see ``walletctl.sandbox.magic``);
``--amount NAME=VALUE`` overrides them (e.g. for a gateway with a minimum amount).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from walletctl.errors import GatewayError, RefusedError, UsageError
from walletctl.models.money import format_major
from walletctl.ops.smoke.framework import (
    RunContext,
    Scenario,
    ScenarioRun,
    Step,
    StepFailed,
    check,
    check_equal,
)

if TYPE_CHECKING:
    from walletctl.models.ledger import Balance
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.smoke.target import Target

APPROVED = "Approved"
NOUNS = {"capture": "capture", "refund": "refund", "reverse": "reversal"}
DEFAULT_REDIRECTS = {
    "returnUrl": "https://shop.example/smoke/return",
    "successUrl": "https://shop.example/smoke/ok",
    "pendingUrl": "https://shop.example/smoke/pending",
    "errorUrl": "https://shop.example/smoke/error",
    "cancelUrl": "https://shop.example/smoke/cancel",
    "refusedUrl": "https://shop.example/smoke/refused",
}
_PROFILE_REDIRECTS = {
    "returnUrl": "return_url",
    "successUrl": "success_url",
    "pendingUrl": "pending_url",
    "errorUrl": "error_url",
    "cancelUrl": "cancel_url",
    "refusedUrl": "refused_url",
}


@dataclass(frozen=True)
class Amounts:
    """Scenario amounts in major units of the run's currency (``--amount NAME=VALUE``)."""

    sale: Decimal = Decimal(10)
    preauth: Decimal = Decimal(50)
    capture1: Decimal = Decimal(20)
    capture2: Decimal = Decimal(15)
    refund: Decimal = Decimal(5)
    reversal_preauth: Decimal = Decimal(30)
    refusal_preauth: Decimal = Decimal(40)
    wallet_sale: Decimal = Decimal(12)
    wallet_preauth: Decimal = Decimal(25)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def with_overrides(self, pairs: list[str]) -> Amounts:
        """Apply ``NAME=VALUE`` pairs; raises UsageError naming the bad pair."""
        from walletctl.models.money import to_decimal

        changes: dict[str, Decimal] = {}
        for pair in pairs:
            name, sep, value = pair.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in self.names():
                raise UsageError(
                    f"--amount: {pair!r} must be NAME=VALUE with NAME one of "
                    + ", ".join(self.names())
                )
            try:
                amount = to_decimal(value.strip())
            except ValueError as exc:
                raise UsageError(f"--amount {name}: {exc}") from None
            if amount <= 0:
                raise UsageError(f"--amount {name}: must be greater than zero")
            changes[name] = amount
        return replace(self, **changes)


# --------------------------------------------------------------------------- helpers


def _target(run: ScenarioRun) -> Target:
    target: Target = run.target
    return target


def _amounts(run: ScenarioRun) -> Amounts:
    amounts = run.ctx.params.get("amounts")
    return amounts if isinstance(amounts, Amounts) else Amounts()


def _money(run: ScenarioRun, amount: Decimal) -> str:
    return format_major(amount, _target(run).currency)


def checkout_step(tag: str, kind: str, amount_of: Callable[[Amounts], Decimal]) -> Step:
    """POST checkout (``kind`` sale|preauth) under a fresh reference; keep the redirect URL."""

    def action(run: ScenarioRun) -> str:
        from walletctl.models.checkout import parse_checkout_type
        from walletctl.ops.redirect import build_checkout_request

        target = _target(run)
        amount = amount_of(_amounts(run))
        ref = run.ref(tag, f"{kind} checkout")
        redirects = {
            alias: url
            for alias, url in DEFAULT_REDIRECTS.items()
            if _PROFILE_REDIRECTS[alias] not in target.profile.redirects
        }
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
    ref = run.state["original"]
    for rec in records:
        if rec.client_system_transaction_id == ref:
            return rec
    raise StepFailed(f"lookup of {ref} returned no record with that reference")


def lookup_approved_step(kind: str) -> Step:
    """Lookup: the original is Approved with the checkout's amount and currency."""

    def action(run: ScenarioRun) -> str:
        from walletctl.models.ledger import kind_of

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
        from walletctl.ops.redirect import plan_followup, send_followup

        target = _target(run)
        original = run.state["original"]
        new_ref = run.ref(tag, f"{NOUNS[op]} of {original}")
        amount = amount_of(_amounts(run)) if amount_of else None
        plan = plan_followup(
            target.client,
            op,  # type: ignore[arg-type]
            original,
            amount=amount,
            currency=target.currency,
            new_reference=new_ref,
        )
        response = send_followup(target.client, plan)
        check_equal(response.state, APPROVED, f"state of the {NOUNS[op]} {new_ref}")
        if response.client_system_transaction_id is not None:
            check_equal(
                response.client_system_transaction_id, new_ref,
                f"clientSystemTransactionId of the {NOUNS[op]} answer",
            )
        return f"{NOUNS[op]} of {_money(run, plan.request.amount)}: {response.state}"

    return Step(name, action, f"POST apmTransactions ({NOUNS[op]})")


def _balance(run: ScenarioRun) -> tuple[Balance, list[TransactionRecord]]:
    from walletctl.models.ledger import balance_from_records

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
        from walletctl.ops.redirect import make_followup_request, plan_followup

        target = _target(run)
        original = run.state["original"]
        balance, _ = _balance(run)
        amount = amount_of(_amounts(run), balance)
        new_ref = run.ref(tag, f"refused {NOUNS[op]} of {original}")
        try:
            plan_followup(
                target.client,
                op,  # type: ignore[arg-type]
                original,
                amount=amount,
                currency=target.currency,
                new_reference=new_ref,
            )
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
            return (
                f"{NOUNS[op]} of {_money(run, amount)} refused by the pre-flight and by the "
                f"gateway (HTTP {exc.status}{code})"
            )
        check(
            response.state != APPROVED,
            f"the gateway ACCEPTED a {NOUNS[op]} of {_money(run, amount)} on {original} "
            f"({balance.summary()}): {new_ref} is {response.state}",
        )
        return (
            f"{NOUNS[op]} of {_money(run, amount)} refused by the pre-flight and by the "
            f"gateway (state {response.state})"
        )

    return Step(name, action, f"{NOUNS[op]} that must be refused")


def walletpay_unavailable(ctx: RunContext) -> str | None:
    """The browser-wallet scenario needs ``walletctl.ops.walletpay`` (see scenarios_walletpay)."""
    from walletctl.ops.smoke import walletpay_steps

    return walletpay_steps.unavailable(ctx)


def _walletpay_steps() -> tuple[Step, ...]:
    from walletctl.ops.smoke import walletpay_steps

    return walletpay_steps.steps()


# --------------------------------------------------------------------------- the catalogue


def build_scenarios() -> list[Scenario]:
    z = Decimal(0)
    return [
        Scenario(
            name="redirect-sale",
            code="sale",
            description="Redirect-wallet sale: checkout -> approve -> lookup Approved",
            steps=(
                checkout_step("co", "sale", lambda a: a.sale),
                approve_step(),
                lookup_approved_step("sale"),
            ),
        ),
        Scenario(
            name="preauth-capture-refund",
            code="pcr",
            description="Pre-authorisation -> partial capture -> second capture -> partial "
            "refund -> lookup totals",
            steps=(
                checkout_step("auth", "preauth", lambda a: a.preauth),
                approve_step(),
                lookup_approved_step("preauth"),
                followup_step("partial capture", "capture", "cap1", lambda a: a.capture1),
                followup_step("second capture", "capture", "cap2", lambda a: a.capture2),
                followup_step("partial refund", "refund", "ref1", lambda a: a.refund),
                totals_step(
                    authorised=lambda a: a.preauth,
                    captured=lambda a: a.capture1 + a.capture2,
                    refunded=lambda a: a.refund,
                ),
            ),
        ),
        Scenario(
            name="preauth-reversal",
            code="rev",
            description="Pre-authorisation -> reversal -> lookup shows it reversed",
            steps=(
                checkout_step("auth", "preauth", lambda a: a.reversal_preauth),
                approve_step(),
                lookup_approved_step("preauth"),
                followup_step("reversal", "reverse", "rev1", None),
                totals_step(
                    authorised=lambda a: a.reversal_preauth,
                    captured=lambda a: z,
                    refunded=lambda a: z,
                    reversed_=True,
                ),
            ),
        ),
        Scenario(
            name="refusals",
            code="rfs",
            description="Over-capture, over-refund and reversal after capture are refused "
            "(by walletctl's pre-flight and by the gateway)",
            steps=(
                checkout_step("auth", "preauth", lambda a: a.refusal_preauth),
                approve_step(),
                refusal_step(
                    "over-capture refused", "capture", "ocap",
                    lambda a, b: b.capturable + _unit(b.currency),
                ),
                followup_step("capture in full", "capture", "cap1", lambda a: a.refusal_preauth),
                refusal_step(
                    "over-refund refused", "refund", "oref",
                    lambda a, b: b.refundable + _unit(b.currency),
                ),
                refusal_step(
                    "reversal after capture refused", "reverse", "orev",
                    lambda a, b: b.authorised,
                ),
                totals_step(
                    authorised=lambda a: a.refusal_preauth,
                    captured=lambda a: a.refusal_preauth,
                    refunded=lambda a: z,
                    name="lookup unchanged",
                ),
            ),
        ),
        Scenario(
            name="browser-wallet",
            code="wp",
            description="Browser wallet: keys -> payment account (create API) -> account -> "
            "authorize sale and pre-authorisation -> capture -> lookup",
            steps=_walletpay_steps(),
            unavailable=walletpay_unavailable,
        ),
    ]


def _unit(currency: str) -> Decimal:
    """The smallest amount of ``currency`` (0.01 EUR, 1 JPY): one past a limit."""
    from walletctl.models.money import exponent

    return Decimal(1).scaleb(-exponent(currency))


SCENARIOS: dict[str, Scenario] = {s.name: s for s in build_scenarios()}


def select(names: list[str]) -> list[Scenario]:
    """The scenarios named (in catalogue order, each once); all of them when none is named."""
    if not names:
        return list(SCENARIOS.values())
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise UsageError(
            f"--scenario: unknown scenario {unknown[0]!r}; choose from "
            + ", ".join(SCENARIOS),
            hint="`walletctl smoke --list` describes them",
        )
    wanted = set(names)
    return [s for s in SCENARIOS.values() if s.name in wanted]


def describe() -> list[dict[str, Any]]:
    return [
        {"name": s.name, "description": s.description, "steps": [st.name for st in s.steps]}
        for s in SCENARIOS.values()
    ]
