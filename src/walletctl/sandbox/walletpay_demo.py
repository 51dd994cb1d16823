"""The demo merchant's server (``/demo/merchant/api/*``): what a merchant server does.

* ``GET session``: gets an API key + encryption key from the public key service (for the demo's
  own merchant ``M-1001`` / ``S-01`` only: the route is not a way to mint keys for any
  merchant), opens an order and gives the page the public API key only.
* ``POST quote``: the shop's prices. The page's ``onPaymentDataChanged`` asks here for the
  total of a shipping option / offer code / address; the answer becomes the sheet's
  ``newTransactionInfo`` and the order remembers it, so the server later authorizes exactly the
  total the payer saw and approved.
* ``POST result``: the page posts ``event.detail``; the server keeps the cryptogram/ECI (never
  echoed back nor listed), calls Get Payment Account and authorizes the order's total. An
  order is paid at most once (a second result: 409).
* ``GET results``: the last :data:`DEMO_RESULTS_MAX` records, redacted (no cryptogram, no PAN).

The gateway is called in process (the route bodies of :mod:`walletctl.sandbox.walletpay_api`).
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

from fastapi import Request
from pydantic import ValidationError

from walletctl.models.fields import check_reference
from walletctl.models.money import check_currency, parse_major
from walletctl.sandbox.query import read_query
from walletctl.sandbox.replies import error_body
from walletctl.sandbox.requests import (
    AuthorizationBody,
    ChallengeBody,
    DemoQuoteBody,
    DemoResultBody,
    EventDetail,
    ThreeDSecureBody,
)
from walletctl.sandbox.walletpay_api import (
    authorize,
    challenge,
    get_account,
    issue_keys,
    read_body,
)
from walletctl.sandbox.walletpay_state import (
    DEMO_USER,
    OFFERS,
    SHIPPING,
    ApiError,
    DemoSession,
    WalletPayState,
)

DEMO_MERCHANT = "M-1001"
DEMO_STORE = "S-01"
MAX_SESSIONS = 500
__all__ = ["demo_quote", "demo_result", "demo_session"]


_SESSION_PARAMS = ("merchantId", "storeId", "ref", "currency", "amount", "type", "authorize",
                   "scenario")


async def demo_session(request: Request, st: WalletPayState) -> dict[str, Any]:
    q = read_query(request.scope["query_string"], _SESSION_PARAMS)
    for name, fixed in (("merchantId", DEMO_MERCHANT), ("storeId", DEMO_STORE)):
        if q.get(name) not in (None, "", fixed):
            raise ApiError(400, "InvalidField", f"{name}: the demo merchant is {fixed} only "
                                                "(use the public key service for others)")
    reference = q.get("ref") or "demo-" + secrets.token_hex(6)
    try:
        check_reference(reference)
    except ValueError as exc:
        raise ApiError(400, "InvalidField", f"ref: {exc}") from None
    currency = (q.get("currency") or "EUR").upper()
    try:
        check_currency(currency)
        amount = parse_major(q.get("amount") or "12.34", currency)
        if amount <= 0:
            raise ValueError("must be greater than zero")
    except ValueError as exc:
        raise ApiError(400, "InvalidField", f"amount/currency: {exc}") from None
    with st.lock:
        if reference in st.demo_sessions:
            raise ApiError(409, "DemoOrderExists", f"ref: order {reference} already exists")
    keys = issue_keys(st, DEMO_MERCHANT, DEMO_STORE)
    session = DemoSession(
        reference=reference, merchant_id=DEMO_MERCHANT, store_id=DEMO_STORE,
        api_key=keys["apiKey"], key_id=keys["encryptionKeyId"],
        kind="preauth" if q.get("type") == "preauth" else "sale",
        amount=amount, currency=currency,
        authorize=q.get("authorize", "1") not in ("0", "false", "no"),
        shipping="standard" if q.get("scenario") == "full" else None,
    )
    with st.lock:
        st.demo_sessions[reference] = session
        while len(st.demo_sessions) > MAX_SESSIONS:
            st.demo_sessions.pop(next(iter(st.demo_sessions)))
    return {"merchantId": session.merchant_id, "storeId": session.store_id,
            "clientSystemTransactionId": reference, "publicKeyApi": session.api_key,
            "amount": f"{session.amount:.2f}", "currencyCode": session.currency,
            "type": session.kind, "authorize": session.authorize, "quote": session.quote()}


async def demo_quote(request: Request, st: WalletPayState) -> dict[str, Any]:
    """The shop's price for the payer's current choices; remembered on the order."""
    body = await read_body(request, DemoQuoteBody)
    session = st.demo_sessions.get(body.reference)
    if session is None:
        raise ApiError(404, "DemoOrderNotFound", "reference: no such demo order (reload the page)")
    error: dict[str, str] | None = None
    option, address, code = body.shipping_option_id, body.shipping_address, body.offer_code
    with st.lock:
        if session.paid:
            raise ApiError(409, "DemoOrderPaid", "reference: this order is already paid")
        if session.shipping is not None and option is not None:
            if option not in SHIPPING:
                error = {"reason": "SHIPPING_OPTION_INVALID", "intent": "SHIPPING_OPTION",
                         "message": "This shipping option is not available."}
            else:
                session.shipping = option
        if code is not None and code.strip():
            if code.strip().upper() in OFFERS:
                session.offer = code.strip().upper()
            else:
                error = {"reason": "OFFER_INVALID", "intent": "OFFER",
                         "message": f"Unknown offer code {code.strip()[:32]}."}
        if address is not None and address.country_code == "NL" and \
                (address.postal_code or "").startswith("9"):
            error = {"reason": "SHIPPING_ADDRESS_UNSERVICEABLE", "intent": "SHIPPING_ADDRESS",
                     "message": "We do not ship to the Frisian islands."}
        quote = session.quote()
    if error is not None:
        quote["error"] = error
    return quote


def _record(st: WalletPayState, record: dict[str, Any]) -> dict[str, Any]:
    with st.lock:
        st.demo_results.append(record)
    return record


async def demo_result(request: Request, st: WalletPayState) -> dict[str, Any]:
    body = await read_body(request, DemoResultBody)
    detail = body.detail
    record: dict[str, Any] = {"detail": detail.redacted()}
    reference = detail.client_system_transaction_id or body.reference
    session = st.demo_sessions.get(reference) if reference else None
    account_id = detail.transaction_account_id
    if session is None or not account_id:
        record["outcome"] = "error" if detail.code else "unknown-session"
        return _record(st, record)
    record.update(encryptionKeyId=session.key_id, merchantId=session.merchant_id,
                  storeId=session.store_id)
    cryptogram = detail.cryptogram  # kept here, for the transaction request only
    record["stored"] = {"cryptogram": cryptogram is not None,
                        "eciIndicator": detail.eci_indicator}
    with st.lock:
        if session.paid:
            raise ApiError(409, "DemoOrderPaid", f"reference: order {session.reference} "
                                                 "is already paid")
        total = session.total()
        approved = body.approved_total
        if session.authorize:
            session.paid = True
    try:
        account = get_account(st, account_id, session.merchant_id, session.store_id,
                              session.key_id).public()
    except ApiError as exc:
        record.update(outcome="account-error", account=exc.outcome().body)
        return _record(st, record)
    record["account"] = account
    if not session.authorize:
        record["outcome"] = "account"
        return _record(st, record)
    record["amount"] = f"{total:.2f}"
    if approved is not None and str(approved) != f"{total:.2f}":
        record["outcome"] = "amount-mismatch"  # the page showed another total: do not charge
        with st.lock:
            session.paid = False
        return _record(st, record)
    record["transaction"], record["outcome"] = _charge(st, session, account, detail, cryptogram,
                                                       total)
    if record["outcome"] == "authorization-error":
        with st.lock:
            session.paid = False  # nothing was charged: the payer may try again
    return _record(st, record)


def _charge(st: WalletPayState, session: DemoSession, account: dict[str, Any],
            detail: EventDetail, cryptogram: str | None, total: Decimal) -> tuple[Any, str]:
    account_id = str(account["transactionAccountId"])
    try:
        three_ds = None
        if account.get("cardType") != "Token":
            # the demo's shopper always passes 3DS, for exactly the order's total
            three = challenge(st, ChallengeBody(
                transaction_account_id=account_id, merchant_id=session.merchant_id,
                store_id=session.store_id, amount=total, currency_code=session.currency,
                client_system_transaction_id=session.reference))
            three_ds = ThreeDSecureBody(three_ds_server_trans_id=three["threeDSServerTransId"],
                                        authentication_value=three["authenticationValue"],
                                        eci=three["eci"])
        req = AuthorizationBody(
            merchant_id=session.merchant_id, store_id=session.store_id, user_id=DEMO_USER,
            type="ecom.sale" if session.kind == "sale" else "ecom.preauthorization",
            amount=total, currency_code=session.currency,
            client_system_transaction_id=session.reference, transaction_account_id=account_id,
            encryption_key_id=session.key_id,
            cryptogram=cryptogram if three_ds is None else None,
            eci_indicator=detail.eci_indicator if three_ds is None else None,
            three_d_secure=three_ds)
        result = authorize(st, req)
    except ValidationError:  # a demo order the gateway's rules refuse: nothing charged
        return error_body(400, "the demo order is not a valid authorization"), \
            "authorization-error"
    except ApiError as exc:
        return exc.outcome().body, "authorization-error"
    return result, str(result.get("state"))
