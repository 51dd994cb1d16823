"""Hypothesis rule-based state machine: checkouts, approvals, captures, refunds, reversals,
replays and reference reuse against the real HTTP API, checking the LEDGER invariants:

* Σ approved captures ≤ the authorised amount of each pre-authorisation;
* Σ approved refunds ≤ Σ captured (a sale counts as captured in full);
* a reversal only of a pre-authorisation with nothing captured, and nothing after it;
* every reference is stored once (replays store nothing);
* every answer matches a simple model of the rules (status codes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
)

from sandbox_fixtures import AUTH_HEADERS, client_class, make_checkout_body, make_followup_body
from walletctl.sandbox.app import create_app
from walletctl.sandbox.config import SandboxConfig

from .helpers import APM, CHECKOUT

AMOUNTS = st.sampled_from([1000, 2500, 999, 1201, 1202, 1203, 1204, 1205])


@dataclass
class Original:
    ref: str
    kind: str
    amount: int
    state: str = "Pending"
    captured: int = 0
    refunded: int = 0
    reversed: bool = False

    @property
    def magic(self) -> int:
        return self.amount % 100


@dataclass
class Sent:
    body: dict[str, Any]
    status: int
    answer: Any = field(default=None)


class LedgerMachine(RuleBasedStateMachine):
    originals = Bundle("originals")
    sent = Bundle("sent")

    def __init__(self) -> None:
        super().__init__()
        self.app = create_app(SandboxConfig(quiet=True))
        self.client = client_class()(self.app, headers=AUTH_HEADERS)
        self.model: dict[str, Original] = {}
        self.counter = 0

    def _ref(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    def teardown(self) -> None:
        self.client.close()

    # -- rules ------------------------------------------------------------------------------

    @rule(target=originals, kind=st.sampled_from(["sale", "preauth"]), amount=AMOUNTS)
    def checkout(self, kind: str, amount: int) -> Any:
        ref = self._ref("ORD")
        wire = "ecom.sale" if kind == "sale" else "ecom.preAuthorization"
        resp = self.client.post(CHECKOUT, json=make_checkout_body(ref, str(amount), wire))
        assert resp.status_code == 200, resp.text
        self.model[ref] = Original(ref, kind, amount)
        return ref

    @rule(ref=originals, action=st.sampled_from(["approve", "approve", "decline", "cancel"]))
    def decide(self, ref: str, action: str) -> None:
        orig = self.model[ref]
        resp = self.client.post(f"/_sandbox/checkouts/{ref}/{action}")
        if orig.state != "Pending":
            assert resp.status_code == 409, resp.text
            return
        assert resp.status_code == 200, resp.text
        expected = {"decline": "Declined", "cancel": "Cancelled"}.get(action)
        if expected is None:
            expected = {1: "Declined", 3: "Pending", 4: "Errored"}.get(orig.magic, "Approved")
        assert resp.json()["state"] == expected
        orig.state = expected

    @rule(target=sent, ref=originals, op=st.sampled_from(["capture", "refund", "reverse"]),
          amount=st.integers(min_value=1, max_value=2600), full=st.booleans())
    def followup(self, ref: str, op: str, amount: int, full: bool) -> Any:
        orig = self.model[ref]
        if op == "reverse" and full:
            amount = orig.amount
        body = make_followup_body(self._ref(f"{ref}-{op[:3].upper()}"), ref, op, str(amount))
        resp = self.client.post(APM, json=body)
        allowed = self._allowed(orig, op, amount)
        refused_by_provider = allowed and (
            (op == "capture" and orig.magic == 2) or (op == "refund" and orig.magic == 5))
        if not allowed or refused_by_provider:
            assert resp.status_code == 422, (op, amount, orig, resp.text)
        else:
            assert resp.status_code == 200, (op, amount, orig, resp.text)
            if op == "capture":
                orig.captured += amount
            elif op == "refund":
                orig.refunded += amount
            else:
                orig.reversed = True
        stored = resp.status_code == 200 or refused_by_provider
        return multiple(Sent(body, resp.status_code, resp.json())) if stored else multiple()

    @rule(item=sent)
    def replay_identical(self, item: Sent) -> None:
        resp = self.client.post(APM, json=item.body)
        assert resp.status_code == item.status
        assert resp.json() == item.answer

    @rule(item=consumes(sent), delta=st.integers(min_value=1, max_value=50))
    def reuse_reference_with_another_body(self, item: Sent, delta: int) -> None:
        body = dict(item.body, amount=str(int(item.body["amount"]) + delta))
        resp = self.client.post(APM, json=body)
        assert resp.status_code == 409, resp.text

    @staticmethod
    def _allowed(orig: Original, op: str, amount: int) -> bool:
        if orig.state != "Approved" or orig.reversed:
            return False
        captured = orig.amount if orig.kind == "sale" else orig.captured
        if op == "capture":
            return orig.kind == "preauth" and amount <= orig.amount - orig.captured
        if op == "refund":
            return amount <= captured - orig.refunded
        return orig.kind == "preauth" and orig.captured == 0 and amount == orig.amount

    # -- invariants, read from the sandbox's own ledger ---------------------------------------

    @invariant()
    def ledger_holds(self) -> None:
        rows = self.client.get("/_sandbox/ledger").json()["transactions"]
        refs = Counter((r["merchantId"], r["storeId"], r["reference"]) for r in rows)
        assert all(n == 1 for n in refs.values()), refs
        originals = {r["reference"]: r for r in rows if r["kind"] in ("sale", "preauth")}
        sums: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
        for r in rows:
            if r["invoiceReference"] is not None and r["state"] == "Approved":
                sums[r["invoiceReference"]][r["kind"]] += Decimal(r["amount"])
        for ref, orig in originals.items():
            done = sums[ref]
            authorised = Decimal(orig["amount"]) if orig["state"] == "Approved" else Decimal(0)
            if orig["kind"] == "sale":
                assert done["capture"] == 0
                assert done["reversal"] == 0
                captured = authorised
            else:
                assert done["capture"] <= authorised, (ref, done)
                captured = done["capture"]
                if done["reversal"]:
                    assert captured == 0, (ref, done)
                    assert done["reversal"] == authorised
            assert done["refund"] <= captured, (ref, done)
            model = self.model[ref]
            assert orig["state"] == model.state
            assert done["capture"] == Decimal(model.captured) / 100
            assert done["refund"] == Decimal(model.refunded) / 100


LedgerMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.slow
class TestLedgerMachine(LedgerMachine.TestCase):  # type: ignore[misc,valid-type]
    """The machine's runs, as a unittest case pytest collects."""
