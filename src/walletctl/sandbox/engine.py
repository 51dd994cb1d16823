"""The sandbox's behaviour: checkouts, the customer's decision, follow-ups, seeded
checkouts and the 2.5 records. Business rules are :mod:`walletctl.models.ledger`'s (the CLI's
own); the provider's outcome is chosen by the checkout amount
(:data:`walletctl.models.sandbox_values.MAGIC`).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from walletctl.errors import RefusedError, RequestValidationError
from walletctl.models.checkout import CHECKOUT_TYPES
from walletctl.models.followup import ApmResponseDetails, FollowUpResponse
from walletctl.models.ledger import Balance, Entry, check_followup
from walletctl.models.money import AmountFormat, parse_major
from walletctl.models.operations import FOLLOW_UPS
from walletctl.models.records import (
    ApmRecordDetails,
    RecordAddress,
    TransactionRecord,
    format_timestamp,
)
from walletctl.sandbox.config import SandboxContext, magic_of, minor_units
from walletctl.sandbox.replies import SandboxError, error_body, invalid_body
from walletctl.sandbox.requests import AMOUNT_TEXT, SeedRequest
from walletctl.sandbox.store import DuplicateReferenceError, Store, TxRow, dump_json

if TYPE_CHECKING:
    from walletctl.models.checkout import CheckoutRequest
    from walletctl.models.followup import FollowUpRequest

ACTIONS: Final = ("approve", "decline", "cancel", "pending")

# what a decision other than an approval the provider accepts changes, and where it redirects
_DECISIONS: Final[dict[str, tuple[dict[str, Any], str]]] = {
    "pending": ({}, "pendingUrl"),
    "cancel": ({"state": "Cancelled", "provider_state_code": "CancelledByCustomer"},
               "cancelUrl"),
    "decline": ({"state": "Declined", "provider_state_code": "RefusedByCustomer"},
                "refusedUrl"),
}
_MAGIC_DECISIONS: Final[dict[str, tuple[dict[str, Any], str]]] = {  # approvals, by magic
    "decline": ({"state": "Declined", "provider_state_code": "DeclinedByProvider"},
                "refusedUrl"),
    "pending": ({"provider_state_code": "PendingAtProvider"}, "pendingUrl"),
    "errored": ({"state": "Errored", "provider_state_code": "ErrorAtProvider", "payer": None},
                "errorUrl"),
}
# a follow-up operation: the kind of its record, and its provider code when approved
_FOLLOWUPS: Final = {op.name: (op.kind, op.approved_code) for op in FOLLOW_UPS}


def approved_code(kind: str) -> str:
    return "AuthorizedByProvider" if kind == "preauth" else "CapturedByProvider"


def request_hash(dumped: dict[str, Any]) -> str:
    """The digest of a request dumped to its wire names: same body (any key case), same hash."""
    return hashlib.sha256(str(dump_json(dumped)).encode()).hexdigest()


def _entry(row: TxRow) -> Entry:
    return Entry(row.kind, row.state, row.amount, row.currency, row.reference)  # type: ignore[arg-type]


# -- checkout ------------------------------------------------------------------------------


def create_checkout(store: Store, req: CheckoutRequest, now: datetime) -> tuple[TxRow, bool]:
    """Store a ``Pending`` checkout with a fresh single-use page token -> ``(row, replayed)``:
    the identical checkout again gets the stored one back; 409 when the reference is used by
    anything else."""
    stored = req.model_dump(mode="json", by_alias=True, exclude_none=True)
    digest = request_hash(stored)  # an explicit null and an absent field are the same request
    timeout = req.checkout_details.redirect_url_timeout or 0
    addresses = stored.get("addressDetails") or {}
    billing = addresses.get("billingAddress")
    shipping = addresses.get("shippingAddress")
    if shipping is not None:
        shipping = {k: v for k, v in shipping.items() if k != "deliveryMethod"}
    try:
        return store.create_transaction(
            merchant_id=req.merchant_id,
            store_id=req.store_id,
            reference=req.client_system_transaction_id,
            kind="preauth" if req.is_preauth else "sale",
            type_str=req.type,
            amount=req.amount,
            currency=req.currency_code,
            state="Pending",
            method="WalletV2",
            now=now,
            billing=billing,
            shipping=shipping,
            checkout=stored,
            token=secrets.token_urlsafe(24),
            expires_at=now + timedelta(seconds=timeout) if timeout else None,
            request_hash=digest,
        ), False
    except DuplicateReferenceError:
        found = store.get(req.merchant_id, req.store_id, req.client_system_transaction_id)
        if found is not None and found.token and found.request_hash == digest:
            return found, True
        raise SandboxError(
            409,
            f"clientSystemTransactionId {req.client_system_transaction_id} is already used "
            "by a transaction of this merchant and store (a checkout reference is used once)",
        ) from None


def expire_if_due(store: Store, row: TxRow, now: datetime) -> TxRow:
    if row.state == "Pending" and row.expires_at is not None and now >= row.expires_at:
        return store.update(row.id, now=now, state="Expired",
                            provider_state_code="ExpiredAtProvider", token_used=True)
    return row


def payer_fields(row: TxRow) -> dict[str, Any]:
    """The provider-side payer fields of an approved checkout (from its own data)."""
    return payer_of(row.id, row.checkout, row.billing, row.shipping)


def payer_of(tx_id: str, checkout: dict[str, Any] | None, billing: dict[str, Any] | None,
             shipping: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`payer_fields` of a transaction not stored yet."""
    details = (checkout or {}).get("checkoutDetails") or {}
    first = details.get("cardholderFirstName") or "Test"
    last = details.get("cardholderLastName") or "Payer"
    bill, ship = billing or {}, shipping or {}
    digest = hashlib.sha256(tx_id.encode()).hexdigest()
    return {
        "apmPayerAccountNumber": f"WV2-{digest[:10].upper()}",
        "apmPayerEmailAddress": details.get("cardholderEmail") or "payer@sandbox.invalid",
        "apmProviderTransactionId": f"PRV-{digest[10:26].upper()}",
        "apmPayerShippingName": f"{ship.get('firstName') or first} {ship.get('lastName') or last}",
        "apmPayerShippingStreet1": _street(ship) or _street(bill),
        "apmPayerShippingCityName": _either(ship, bill, "city"),
        "apmPayerShippingPostalCode": _either(ship, bill, "zipPostalCode"),
        "apmPayerShippingCountry": _either(ship, bill, "countryCode"),
        "apmPayerShippingPhone": ship.get("telephoneNumber")
        or details.get("cardholderMobilePhone"),
        "apmPayerID": f"PAYER-{digest[26:38].upper()}",
        "apmPayerFirstname": first,
        "apmPayerLastname": last,
        "apmPayerBillingName": f"{first} {last}",
        "apmPayerBillingStreet1": _street(bill),
        "apmPayerBillingCityName": bill.get("city"),
        "apmPayerBillingCountry": bill.get("countryCode"),
        "apmPayerBillingPhone": details.get("cardholderMobilePhone")
        or details.get("cardholderHomePhone"),
        "apmPayerBillingPostalCode": bill.get("zipPostalCode"),
        "apmPayerCountryCode": _either(bill, ship, "countryCode"),
        "apmPayerStateOrProvince": _either(bill, ship, "state"),
    }


def _either(first: dict[str, Any], second: dict[str, Any], key: str) -> Any:
    return first.get(key) or second.get(key)


def _street(addr: dict[str, Any]) -> str | None:
    parts = [addr.get("houseNumber"), addr.get("street")]
    text = " ".join(str(p) for p in parts if p)
    return text or None


def redirect_url(row: TxRow, which: str) -> str:
    urls = (row.checkout or {}).get("redirectDetails") or {}
    found = urls.get(which) or urls.get("errorUrl")
    return str(found) if found else "about:blank"


def decide(store: Store, row: TxRow, action: str, now: datetime) -> tuple[TxRow, str]:
    """Apply the customer's decision (one of :data:`ACTIONS`) to a checkout; return it and
    the redirect key. 409 when the checkout is no longer ``Pending``."""
    with store.atomic():
        row = expire_if_due(store, row, now)
        if row.state == "Expired":
            return row, "errorUrl"
        if row.state != "Pending":
            raise SandboxError(409, f"checkout {row.reference} is {row.state}: it was already "
                               "decided", description="InvalidState")
        outcome = _DECISIONS.get(action) if action != "approve" else _MAGIC_DECISIONS.get(
            magic_of(row.amount, row.currency) or "")
        if outcome is not None:
            columns, which = outcome
            return store.update(row.id, now=now, token_used=True, **columns), which
        return _approve(store, row, now), "successUrl"


def _approve(store: Store, row: TxRow, now: datetime) -> TxRow:
    payer = payer_fields(row)
    return store.update(row.id, now=now, state="Approved",
                        provider_state_code=approved_code(row.kind), payer=payer,
                        provider_transaction_id=payer["apmProviderTransactionId"],
                        token_used=True)


def not_found(field: str, merchant_id: str, store_id: str, reference: str) -> SandboxError:
    return SandboxError(404, f"{field} {reference}: no transaction with this reference for "
                        f"merchant {merchant_id}, store {store_id}")


# -- follow-ups ----------------------------------------------------------------------------


def apply_followup(
    store: Store,
    req: FollowUpRequest,
    now: datetime,
    fmt: AmountFormat,
) -> tuple[int, dict[str, Any], bool]:
    """Capture / refund / reversal in one store transaction -> ``(status, body, replayed)``:
    the identical request again is replayed, another with its reference 409; unknown invoice
    404; a rule broken 422; magic amounts 02/05 store an ``Errored`` record and answer 422."""
    digest = request_hash(req.model_dump(mode="json", by_alias=True))
    op = req.operation
    with store.atomic():
        existing = store.get(req.merchant_id, req.store_id, req.client_system_transaction_id)
        if existing is not None:
            if existing.request_hash == digest and existing.response is not None:
                return existing.response_status or 200, existing.response, True
            raise SandboxError(
                409,
                f"clientSystemTransactionId {req.client_system_transaction_id} is already used "
                "by a different transaction (a replay must repeat the identical request)",
            )
        original = store.get(req.merchant_id, req.store_id, req.client_system_invoice_id)
        if original is None:
            raise not_found("clientSystemInvoiceId", req.merchant_id, req.store_id,
                            req.client_system_invoice_id)
        original = expire_if_due(store, original, now)
        follow = store.followups(original.merchant_id, original.store_id, original.reference)
        try:
            balance = Balance.of(_entry(original), [_entry(f) for f in follow])
            amount = check_followup(balance, op, req.amount, req.currency_code)
        except RefusedError as exc:
            raise SandboxError(422, exc.message) from None
        tx_id = str(uuid.uuid4())
        if magic_of(original.amount, original.currency) == f"{op}-refused":
            status, state, code, payer = 422, "Errored", "RefusedByProvider", None
            body: dict[str, Any] = error_body(
                422,
                f"the provider refused the {op} of {amount} {original.currency} "
                f"(test amount ending {minor_units(original.amount, original.currency) % 100:02d})",
                code="PRV-422",
                description="RefusedByProvider",
            )
        else:
            status, state, code, payer = 200, "Approved", _FOLLOWUPS[op][1], original.payer
            body = FollowUpResponse(  # the 2.4 response, serialised by the shared model
                id=tx_id, state=state, provider_state_code=code, currency_code=original.currency,
                client_system_transaction_id=req.client_system_transaction_id,
                apm_details=ApmResponseDetails(apm_provider_name=original.method,
                                               apm_payment_method="ecom"),
            ).to_wire(fmt)
        store.create_transaction(
            merchant_id=req.merchant_id,
            store_id=req.store_id,
            reference=req.client_system_transaction_id,
            invoice_reference=original.reference,
            kind=_FOLLOWUPS[op][0],
            type_str=req.type,
            amount=amount,
            currency=original.currency,
            state=state,
            provider_state_code=code,
            method=original.method,
            now=now,
            billing=original.billing,
            payer=payer,
            request_hash=digest,
            response=body,
            response_status=status,
            tx_id=tx_id,
        )
    return status, body, False


# -- records (spec 2.5) -------------------------------------------------------------------

# How records spell their type (the spec's sample shows ``ecom.preAuthorisation``).
RECORD_TYPES: Final[dict[str, str]] = {
    "sale": "ecom.sale",
    "preauth": "ecom.preAuthorisation",
    **{op.kind: op.wire_type for op in FOLLOW_UPS},
}


def record_body(row: TxRow, fmt: AmountFormat) -> dict[str, Any]:
    """One 2.5 transaction details record (every payer field, null when there is none)."""
    payer = _strings(row.payer)
    rec = TransactionRecord(
        id=row.id,
        state=row.state,
        currency_code=row.currency,
        transaction_amount=row.amount,
        client_system_transaction_id=row.reference,
        client_system_invoice_id=row.invoice_reference,
        type=RECORD_TYPES.get(row.kind, row.type_str),
        transaction_date_time=format_timestamp(row.created_at),
        provider_state_code=row.provider_state_code,
        apm_details=ApmRecordDetails.model_validate({"apmName": row.method, **payer}),
        billing_address=RecordAddress.model_validate(_strings(row.billing))
        if row.billing
        else None,
        shipping_address=(
            RecordAddress.model_validate(_strings(row.shipping))
            if row.shipping and row.kind == "preauth"
            else None
        ),
    )
    body = rec.to_wire(fmt)
    apm = body.setdefault("apmDetails", {})
    for field in ApmRecordDetails.model_fields.values():  # every payer field, null or not
        apm.setdefault(str(field.alias), None)
    return body


def _strings(data: dict[str, Any] | None) -> dict[str, Any]:
    """Stored free-form values (e.g. from the browser-wallet module) as strings or null."""
    return {str(k): (None if v is None else str(v)) for k, v in (data or {}).items()
            if not isinstance(v, dict | list)}


_MARK = f"\u0001amount{secrets.token_hex(8)}:"
_MARKED = re.compile('"' + re.escape(json.dumps(_MARK)[1:-1]) + r'([0-9.+-]+)\\u0001"')


def _marked(record: Any) -> Any:
    value = record.get("transactionAmount") if isinstance(record, dict) else None
    if isinstance(value, str) and AMOUNT_TEXT.fullmatch(value):
        return {**record, "transactionAmount": f"{_MARK}{value}\u0001"}
    return record


def amounts_as_numbers(data: list[dict[str, Any]] | dict[str, Any]) -> bytes:
    """JSON of records (a list, or an answer holding one as a value) with each
    ``transactionAmount`` a JSON number written from its exact decimal text, never a float."""
    out = ([_marked(rec) for rec in data] if isinstance(data, list)
           else {key: _marked(value) for key, value in data.items()})
    text = json.dumps(out, separators=(",", ":"))
    return _MARKED.sub(lambda m: m.group(1), text).encode()


# -- POST /_sandbox/seed: approved checkouts at once, all or nothing; amounts in major units,
# never ending in a magic value that decides the approval (02 and 05 are allowed) ------------

_APPROVAL_MAGIC = {1: "declined on approval", 3: "pending at the provider",
                   4: "errored on approval"}


def parse_seed(data: dict[str, Any]) -> tuple[SeedRequest, list[Decimal]]:
    """The request and its amounts (major units); 400 naming the field."""
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


def seed_checkouts(ctx: SandboxContext, req: SeedRequest, amounts: list[Decimal]) -> dict[str, Any]:
    """Store every transaction approved (with payer fields), in one database transaction.
    Blocking (run it off the event loop): the rows are built first, then written in one
    ``executemany`` under the store's lock."""
    now = ctx.now()
    type_str = CHECKOUT_TYPES[req.kind]
    code = approved_code(req.kind)
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for i, (item, amount) in enumerate(zip(req.transactions, amounts, strict=True)):
        if not i % 500 and ctx.stopping:
            raise SandboxError(503, "(request): the sandbox is stopping; nothing was stored")
        if item.reference in seen:
            raise _seed_duplicate(item.reference)
        seen.add(item.reference)
        checkout = {"merchantId": req.merchant_id, "storeId": req.store_id,
                    "type": type_str, "amount": f"{amount:f}",
                    "currencyCode": req.currency,
                    "clientSystemTransactionId": item.reference,
                    "checkoutDetails": {"paymentMethod": "WalletV2"}}
        tx_id = str(uuid.uuid4())
        payer = payer_of(tx_id, checkout, None, None)
        rows.append({"id": tx_id, "merchant_id": req.merchant_id, "store_id": req.store_id,
                     "reference": item.reference, "kind": req.kind, "type_str": type_str,
                     "amount": amount, "currency": req.currency, "state": "Approved",
                     "provider_state_code": code, "method": "WalletV2", "created_at": now,
                     "updated_at": now, "payer": payer, "checkout": checkout,
                     "token_used": True,
                     "provider_transaction_id": payer["apmProviderTransactionId"]})
    try:
        ctx.store.insert_many(rows)
    except DuplicateReferenceError as exc:
        raise _seed_duplicate(str(exc.args[0])) from None
    return {"created": len(amounts), "kind": req.kind, "currency": req.currency,
            "merchantId": req.merchant_id, "storeId": req.store_id}


def _seed_duplicate(reference: str) -> SandboxError:
    return SandboxError(409, f"transactions: reference {reference} is already used by this "
                        "merchant and store; nothing was stored")
