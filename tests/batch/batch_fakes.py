"""An in-memory gateway that does NOT deduplicate: a second POST of a committed reference is
recorded as a double application, so tests can prove the runner itself never re-sends."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from walletctl.client.gateway import FollowUpCall
from walletctl.config.profile import Profile
from walletctl.errors import AuthError, GatewayError, NotConnectedError, UnknownOutcomeError
from walletctl.models.base import loads
from walletctl.models.followup import FollowUpRequest, FollowUpResponse
from walletctl.models.records import TransactionRecord

PROFILE = Profile(name="fake", base_url="http://fake.invalid", merchant_id="M", store_id="S",
                  user_id="u", currency="EUR")


@dataclass
class Faults:
    """Probabilities per request (drawn from a seeded RNG)."""

    connect_error: float = 0.0  # NetworkError, nothing applied
    error_before: float = 0.0  # 503, nothing applied
    error_after: float = 0.0  # applied, then 503
    drop_after: float = 0.0  # applied, then UnknownOutcomeError
    throttle: float = 0.0  # 429 with retry_after
    retry_after: float | None = 0.01
    lookup_error: float = 0.0  # 503 on lookups
    auth_fail: bool = False
    always_fail: bool = False  # every request: 503 before commit
    enforce_rules: bool = True  # refuse (422) follow-ups that break the ledger rules


@dataclass
class FakeGateway:
    faults: Faults = field(default_factory=Faults)
    seed: int = 0
    profile: Profile = PROFILE
    originals: dict[str, tuple[str, Decimal, str]] = field(default_factory=dict)
    applied: list[TransactionRecord] = field(default_factory=list)
    posts: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)  # 422s answered, per reference
    lookups: int = 0
    in_flight: int = 0
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def add_preauth(self, ref: str, amount: str, currency: str = "EUR",
                    kind: str = "ecom.preauthorization", state: str = "Approved") -> None:
        self.originals[ref] = (kind, Decimal(amount), currency)
        self.applied.append(TransactionRecord(
            id=f"id-{ref}", state=state, currency_code=currency,
            transaction_amount=Decimal(amount), client_system_transaction_id=ref, type=kind))

    def applications(self) -> Counter[str]:
        return Counter(r.client_system_transaction_id for r in self.applied
                       if r.client_system_invoice_id is not None)

    async def _tick(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)
        finally:
            self.in_flight -= 1

    async def lookup(self, reference: str) -> list[TransactionRecord]:
        self.lookups += 1
        await self._tick()
        if self.faults.auth_fail:
            raise AuthError(401, description="Unauthorized")
        if self.faults.always_fail or self.rng.random() < self.faults.lookup_error:
            raise GatewayError(503, description="ServiceUnavailable")
        return [r for r in self.applied if reference in
                (r.client_system_transaction_id, r.client_system_invoice_id)]

    async def followup_call(self, call: FollowUpCall) -> FollowUpResponse:
        """What the runner sends: the encoded body, read back by the request model (so every
        fake run also proves the runner's template builds a valid request)."""
        req = FollowUpRequest.from_wire(loads(call.body), self.profile.amount_format)
        assert (req.client_system_transaction_id, req.client_system_invoice_id, req.amount,
                req.currency_code, req.type) == (call.reference, call.invoice, call.amount,
                                                 call.currency, call.type), call
        return await self.followup(req)

    async def followup(self, req: FollowUpRequest) -> FollowUpResponse:
        ref = req.client_system_transaction_id
        self.posts[ref] += 1
        await self._tick()
        f = self.faults
        if f.auth_fail:
            raise AuthError(401, description="Unauthorized")
        if f.always_fail:
            raise GatewayError(503, description="ServiceUnavailable")
        draw = self.rng.random
        if draw() < f.connect_error:
            raise NotConnectedError("could not connect")
        if draw() < f.throttle:
            raise GatewayError(429, description="TooManyRequests", retry_after=f.retry_after)
        if draw() < f.error_before:
            raise GatewayError(503, description="ServiceUnavailable")
        if f.enforce_rules:  # like the real gateway: a broken rule is a 422, nothing stored
            from walletctl.errors import RefusedError
            from walletctl.models.ledger import balance_from_records, check_followup

            original = req.client_system_invoice_id
            records = [r for r in self.applied if original in
                       (r.client_system_transaction_id, r.client_system_invoice_id)]
            try:
                check_followup(balance_from_records(original, records), req.operation,
                               req.amount, req.currency_code)
            except RefusedError as exc:
                self.refusals[ref] += 1
                raise GatewayError(422, description="Unprocessable",
                                   detail=exc.message) from None
        # Commit (without any deduplication: a second send is a second capture).
        record = TransactionRecord(
            id=f"id-{ref}-{self.posts[ref]}", state="Approved", currency_code=req.currency_code,
            transaction_amount=req.amount, client_system_transaction_id=ref,
            client_system_invoice_id=req.client_system_invoice_id, type=req.type)
        self.applied.append(record)
        if draw() < f.error_after:
            raise GatewayError(503, description="ServiceUnavailable")
        if draw() < f.drop_after:
            raise UnknownOutcomeError(ref, "connection dropped")
        return FollowUpResponse(id=record.id, state="Approved", client_system_transaction_id=ref,
                                currency_code=req.currency_code)
