"""``POST /_sandbox/seed``: many approved sales or pre-authorisations in one request.

Test data for batch rehearsals: each transaction is stored directly as an approved checkout
(``CapturedByProvider`` for a sale, ``AuthorizedByProvider`` for a pre-authorisation, with
payer fields), exactly as if it had been created with ``POST /api/v5/checkout`` and approved
on the hosted page, so captures, refunds, reversals and lookups treat it like any other.

Body (JSON; amounts in major units as strings, whatever the wire amount format)::

    {"merchantId": "M-1", "storeId": "S-1", "currency": "EUR", "kind": "preauth",
     "transactions": [{"reference": "seed-0001", "amount": "12.50"}, ...]}

Keys are read like every JSON route's (any letter case, wire names only: ``merchant_id`` is
an unknown key). At most :data:`MAX_SEED` transactions per request. All or nothing: a
reference already used by the merchant and store is 409 and nothing is stored. Amounts
ending in a magic value that decides the *approval* (01 declined, 03 pending, 04 errored)
are refused, since these transactions are approved; 02 and 05 (follow-ups refused later)
are allowed on purpose. Answers ``{"created": N, "kind", "currency", "merchantId", "storeId"}``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from walletctl.errors import RequestValidationError
from walletctl.models.base import WireModel
from walletctl.models.fields import Currency, Reference, Text
from walletctl.sandbox.context import SandboxContext
from walletctl.sandbox.replies import SandboxError, invalid_body
from walletctl.sandbox.store import DuplicateReferenceError

MAX_SEED = 10_000
_APPROVAL_MAGIC = {1: "declined on approval", 3: "pending at the provider",
                   4: "errored on approval"}


class SeedItem(WireModel):
    model_config = ConfigDict(frozen=True)

    reference: Reference
    amount: str = Field(min_length=1, max_length=24)


class SeedRequest(WireModel):
    model_config = ConfigDict(frozen=True)

    merchant_id: Text
    store_id: Text
    currency: Currency
    kind: Literal["sale", "preauth"]
    transactions: list[SeedItem] = Field(min_length=1, max_length=MAX_SEED)

    @field_validator("currency", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


def parse(data: dict[str, Any]) -> tuple[SeedRequest, list[Decimal]]:
    """The request and its amounts (Decimal, in major units); 400 naming the field.

    Read like every JSON route's body (:mod:`walletctl.sandbox.requests`): the wire names in
    any letter case, never the Python field names, unknown keys refused. The amounts are
    major units whatever the sandbox's amount format, so the wire's amount rules do not apply.
    """
    from walletctl.models.money import parse_major
    from walletctl.sandbox.magic import minor_units

    try:
        req = SeedRequest.from_wire(data)
    except RequestValidationError as exc:
        raise invalid_body(exc) from None
    amounts: list[Decimal] = []
    for i, item in enumerate(req.transactions):
        where = f"transactions[{i}].amount"
        try:
            amount = parse_major(item.amount, req.currency)
        except (ValueError, ArithmeticError) as exc:
            raise SandboxError(400, f"{where}: {exc}") from None
        if not amount.is_finite() or amount <= 0:
            raise SandboxError(400, f"{where}: must be greater than 0")
        magic = _APPROVAL_MAGIC.get(minor_units(amount, req.currency) % 100)
        if magic:
            raise SandboxError(400, f"{where}: ends in a magic value ({magic}); seeded "
                               "transactions are approved, use another amount")
        amounts.append(amount)
    return req, amounts


def seed(ctx: SandboxContext, req: SeedRequest, amounts: list[Decimal]) -> dict[str, Any]:
    """Store every transaction approved, in one database transaction."""
    from walletctl.models.checkout import CHECKOUT_TYPES
    from walletctl.sandbox.engine import payer_fields

    store = ctx.store
    now = ctx.now()
    code = "AuthorizedByProvider" if req.kind == "preauth" else "CapturedByProvider"
    type_str = CHECKOUT_TYPES[req.kind]
    with store.atomic():
        for item, amount in zip(req.transactions, amounts, strict=True):
            checkout = {"merchantId": req.merchant_id, "storeId": req.store_id,
                        "type": type_str, "amount": f"{amount:f}",
                        "currencyCode": req.currency,
                        "clientSystemTransactionId": item.reference,
                        "checkoutDetails": {"paymentMethod": "WalletV2"}}
            try:
                row = store.create_transaction(
                    merchant_id=req.merchant_id, store_id=req.store_id,
                    reference=item.reference, kind=req.kind, type_str=type_str,
                    amount=amount, currency=req.currency, state="Approved",
                    provider_state_code=code, method="WalletV2", now=now, checkout=checkout)
            except DuplicateReferenceError:
                raise SandboxError(
                    409, f"transactions: reference {item.reference} is already used by this "
                    "merchant and store; nothing was stored") from None
            payer = payer_fields(row)
            store.update(row.id, now=now, payer=payer, token_used=True,
                         provider_transaction_id=payer["apmProviderTransactionId"])
    return {"created": len(amounts), "kind": req.kind, "currency": req.currency,
            "merchantId": req.merchant_id, "storeId": req.store_id}
