"""The smoke scenarios: named step sequences with assertions on state and amounts.

The catalogue (:data:`SCENARIOS`, :func:`select`, :func:`describe`) built from the steps of
:mod:`walletctl.ops.smoke.steps` and :mod:`walletctl.ops.smoke.walletpay_steps`; the amounts
(:class:`Amounts`, re-exported here for the tests) live in :mod:`walletctl.ops.smoke.amounts`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from walletctl.errors import UsageError
from walletctl.ops.smoke import walletpay_steps
from walletctl.ops.smoke.amounts import Amounts
from walletctl.ops.smoke.framework import Scenario
from walletctl.ops.smoke.steps import (
    approve_step,
    checkout_step,
    followup_step,
    lookup_approved_step,
    refusal_step,
    totals_step,
)

__all__ = ["SCENARIOS", "Amounts", "build_scenarios", "describe", "select"]


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
            steps=walletpay_steps.steps(),
            unavailable=walletpay_steps.unavailable,
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
