"""Browser wallet gateway route bodies: public keys, payment accounts, authorizations,
the emulated wallet's token and the simulated 3DS step (routes: :mod:`walletctl.sandbox.walletpay`).
"""

from __future__ import annotations

import base64
import os
import secrets
from datetime import timedelta
from decimal import Decimal
from typing import Any, TypeVar

from fastapi import Request

from walletctl.constants import WALLETPAY_METHOD
from walletctl.models.base import WireModel, dumps
from walletctl.models.money import to_wire
from walletctl.models.walletpay import AuthorizationRequest
from walletctl.sandbox import auth, crypto, wire
from walletctl.sandbox.context import SandboxContext
from walletctl.sandbox.crypto import TokenError
from walletctl.sandbox.query import read_query
from walletctl.sandbox.requests import (
    ChallengeBody,
    ChallengeRequestBody,
    PaymentAccountBody,
    WalletTokenBody,
)
from walletctl.sandbox.store import DuplicateReferenceError, TxRow, WalletPayRow
from walletctl.sandbox.walletpay_state import (
    API_KEY_TTL,
    CARDS_BY_ID,
    TEST_CARDS,
    TOKEN_TTL_SECONDS,
    Account,
    ApiError,
    KeyPair,
    WalletPayState,
    card_network,
    mask,
)

M = TypeVar("M", bound=WireModel)
CHALLENGE_TTL = timedelta(minutes=15)
CHALLENGE_PREFIX = "ch_"

# -- helpers ---------------------------------------------------------------------------------


async def read_body(request: Request, model: type[M]) -> M:
    """A browser-wallet route's one reading of its body (errors say ``request body``)."""
    return await wire.read_model(request, model, where="request body")


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison of any text (``secrets.compare_digest`` refuses non-ASCII)."""
    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"),
                                  expected.encode("utf-8", "surrogatepass"))


def check_basic(request: Request, ctx: SandboxContext) -> None:
    header = request.headers.get("authorization") or ""
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic" or not value:
        raise ApiError(401, "Unauthorized",
                       "the public key service needs Authorization: Basic userId:secret")
    try:
        user, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(401, "Unauthorized", "malformed Basic credentials") from None
    if not sep or not user or not _same(secret, ctx.config.service_secret):
        raise ApiError(401, "Unauthorized", "service user or secret is not valid")


def _get(data: dict[str, Any], name: str) -> Any:
    for key, value in data.items():
        if key.lower() == name.lower():
            return value
    return None


def _extract_token(payment_data: dict[str, Any] | str) -> Any:
    """The wallet's token inside ``paymentData`` (the wallet's own document, read as given)."""
    if isinstance(payment_data, str):
        return payment_data
    if _get(payment_data, "protocolVersion") is not None:
        return payment_data
    pmd = _get(payment_data, "paymentMethodData")
    tok = _get(pmd, "tokenizationData") if isinstance(pmd, dict) else None
    token = _get(tok, "token") if isinstance(tok, dict) else None
    if token is None:
        raise ApiError(400, "MissingField",
                       "paymentData.paymentMethodData.tokenizationData.token: is required")
    return token


# -- route bodies ----------------------------------------------------------------------------


def issue_keys(st: WalletPayState, merchant_id: str, store_id: str) -> dict[str, Any]:
    ctx = st.ctx
    now = ctx.now()
    expires = now + API_KEY_TTL
    api_key = "pk_" + secrets.token_urlsafe(24)
    key_id = "ek_" + secrets.token_hex(8)
    pair = KeyPair(key_id, crypto.new_private_key(), merchant_id, store_id)
    with ctx.store.atomic():  # the API key and its encryption key are stored together
        st.add_key(pair)
        ctx.store.issue_api_key(key=api_key, merchant_id=merchant_id, store_id=store_id,
                                expires_at=expires, now=now, encryptionKeyId=key_id)
    return {"apiKey": api_key, "encryptionKey": crypto.public_key_b64(pair.private),
            "encryptionKeyId": key_id, "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}


def create_account(st: WalletPayState, key: str, body: PaymentAccountBody) -> dict[str, Any]:
    merchant_id, store_id = body.merchant_id, body.store_id
    reference = body.client_system_transaction_id
    token = _extract_token(body.payment_data)
    pair = st.key_for_api_key(key)
    try:
        payload = crypto.open_token(token, pair.private, st.signer.root.public_key(), st.replay,
                                    now=st.now_ms())
    except TokenError as exc:
        status = 400 if exc.reason == "malformed" else 422
        raise ApiError(status, f"PaymentData{exc.reason.title().replace('_', '')}",
                       f"paymentData: {exc.message}") from None
    if payload.get("gatewayMerchantId") != merchant_id:
        raise ApiError(422, "PaymentDataMerchantMismatch",
                       "paymentData: gatewayMerchantId does not match merchantId")
    details = payload["paymentMethodDetails"]
    pan = details.get("pan")
    try:
        month = int(details.get("expirationMonth"))
        year = int(details.get("expirationYear"))
    except (TypeError, ValueError):
        raise ApiError(400, "PaymentDataMalformed",
                       "paymentData: expirationMonth/expirationYear are required") from None
    if not isinstance(pan, str) or not pan.isdigit() or not 12 <= len(pan) <= 19:
        raise ApiError(400, "PaymentDataMalformed", "paymentData: pan must be 12-19 digits")
    now = st.ctx.now()
    if not 1 <= month <= 12 or (year, month) < (now.year, now.month):
        raise ApiError(422, "CardExpired", "paymentData: the card has expired")
    is_token = details["authMethod"] == "CRYPTOGRAM_3DS"
    cryptogram = details.get("cryptogram") if is_token else None
    eci = details.get("eciIndicator") if is_token else None
    if is_token and (not isinstance(cryptogram, str) or not cryptogram):
        raise ApiError(400, "PaymentDataMalformed",
                       "paymentData: a CRYPTOGRAM_3DS credential needs a cryptogram")
    account = Account(
        id="ta_" + secrets.token_hex(10), merchant_id=merchant_id, store_id=store_id,
        key_id=pair.key_id, card_type="Token" if is_token else "Card", network=card_network(pan),
        pan=pan, expiry_month=month, expiry_year=year, reference=reference,
        cryptogram=cryptogram, eci=str(eci) if eci is not None else None,
        decline=pan in {c.pan for c in TEST_CARDS if c.decline},
    )
    st.ctx.store.add_walletpay_account(
        account_id=account.id, merchant_id=merchant_id, store_id=store_id, key_id=pair.key_id,
        data=account.data(), now=now)
    out = {k: v for k, v in account.public().items()
           if k in ("transactionAccountId", "cardType", "cardNetwork", "maskedCardNumber",
                    "expiryMonth", "expiryYear")}
    if is_token:
        out["cryptogram"] = account.cryptogram
        out["eciIndicator"] = account.eci
    return out


def get_account(st: WalletPayState, account_id: str, merchant_id: str, store_id: str,
                key_id: str | None) -> Account:
    row = st.ctx.store.walletpay_account(account_id)
    account = Account.from_row(row) if row is not None else None
    if account is None or account.merchant_id != merchant_id or account.store_id != store_id:
        raise ApiError(404, "PaymentAccountNotFound",
                       f"transactionAccountId: {account_id} is not known for this merchant/store")
    if key_id is not None and key_id != account.key_id:
        raise ApiError(403, "EncryptionKeyMismatch",
                       "encryptionKeyId: does not match the key the payment account was made with")
    return account


def _authorize_account(st: WalletPayState, req: AuthorizationRequest,
                       account: Account) -> TxRow:
    """The checks and the ledger record of :func:`authorize` (inside its store transaction)."""
    ctx = st.ctx
    state, provider_code = "Approved", None
    three_ds: WalletPayRow | None = None  # data: authenticationValue, eci, transStatus
    if account.card_type == "Token":
        if not req.cryptogram or not req.eci_indicator:
            raise ApiError(400, "MissingField", "cryptogram: and eciIndicator are required for a "
                                                "Token (CRYPTOGRAM_3DS) payment account")
        if not _same(req.cryptogram, account.cryptogram or "") or \
                req.eci_indicator != account.eci:
            raise ApiError(422, "CryptogramMismatch",
                           "cryptogram: does not match the payment account (or wrong ECI)")
        if account.cryptogram_used:
            raise ApiError(422, "CryptogramUsed", "cryptogram: was already used by an "
                                                  "authorization (get a new wallet token)")
    else:
        if req.three_d_secure is None:
            raise ApiError(400, "ThreeDSecureRequired", "threeDSecure: is required for a Card "
                                                        "(PAN_ONLY) payment account")
        three_ds = ctx.store.three_ds(req.three_d_secure.three_ds_server_trans_id)
        if three_ds is None or three_ds.parent_id != account.id or \
                "authenticationValue" not in three_ds.data or not _same(
                three_ds.data["authenticationValue"],
                req.three_d_secure.authentication_value) or \
                three_ds.data["eci"] != req.three_d_secure.eci:
            raise ApiError(422, "ThreeDSecureInvalid",
                           "threeDSecure: does not match a 3DS result for this payment account")
        if three_ds.used:
            raise ApiError(422, "ThreeDSecureUsed", "threeDSecure: was already used")
        if account.cryptogram_used:  # the used flag of a Card account: authorized once
            raise ApiError(422, "PaymentAccountUsed", "transactionAccountId: a Card (PAN_ONLY) "
                           "payment account is authorized once, for the amount the payer "
                           "approved")
        _check_binding(three_ds.data, req)
        if three_ds.data["transStatus"] != "Y":
            state, provider_code = "Declined", "AuthenticationFailed"
    if account.decline and state == "Approved":
        state, provider_code = "Declined", "DeclinedByIssuer"
    kind = "sale" if req.type == "ecom.sale" else "preauth"
    if state == "Approved":
        provider_code = "CapturedByProvider" if kind == "sale" else "AuthorizedByProvider"
    try:
        row = ctx.store.create_transaction(
            merchant_id=req.merchant_id, store_id=req.store_id,
            reference=req.client_system_transaction_id, kind=kind, type_str=req.type,
            amount=req.amount, currency=req.currency_code, state=state, method=WALLETPAY_METHOD,
            now=ctx.now(), provider_state_code=provider_code,
            payer={"apmPayerAccountNumber": mask(account.pan),
                   "apmProviderTransactionId": account.id},
        )
    except DuplicateReferenceError:
        raise ApiError(409, "DuplicateReference", f"clientSystemTransactionId: "
                       f"{req.client_system_transaction_id} is already used") from None
    if state == "Approved":  # a Token's cryptogram, or a Card's one approved amount
        ctx.store.mark_walletpay_used("account", account.id)
    if three_ds is not None:
        ctx.store.mark_walletpay_used("three_ds", three_ds.id)
    return row


def authorize(st: WalletPayState, req: AuthorizationRequest) -> dict[str, Any]:
    ctx = st.ctx
    fmt = ctx.config.amount_format
    # One store transaction: the single-use checks and the used flags cannot race.
    with ctx.store.atomic():
        account = get_account(st, req.transaction_account_id, req.merchant_id, req.store_id,
                              req.encryption_key_id)
        row = _authorize_account(st, req, account)
    return {
        "id": row.id, "state": row.state, "providerStateCode": row.provider_state_code,
        "currencyCode": row.currency, "clientSystemTransactionId": row.reference,
        "transactionAccountId": account.id, "type": req.type,
        "amount": to_wire(Decimal(row.amount), row.currency, fmt),
        "transactionMethod": WALLETPAY_METHOD,
    }


def mint_token(st: WalletPayState, body: WalletTokenBody) -> dict[str, Any]:
    card = CARDS_BY_ID.get(body.card_id)
    if card is None:
        raise ApiError(400, "InvalidField", f"cardId: must be one of {', '.join(CARDS_BY_ID)}")
    merchant_id = body.gateway_merchant_id
    enc = body.encryption_key
    if enc:
        try:
            recipient = crypto.load_public_key(enc, "encryptionKey")
        except TokenError as exc:
            raise ApiError(400, "InvalidField", exc.message) from None
    else:
        key = body.public_key_api
        if not key or not key.strip():
            raise ApiError(400, "MissingField", "publicKeyApi: is required (non-empty string) "
                                                "unless encryptionKey is given")
        if key != st.ctx.config.api_key and st.ctx.store.api_key_info(key) is None:
            raise ApiError(401, "Unauthorized", "publicKeyApi: is not a key issued by the gateway")
        recipient = st.key_for_api_key(key).private.public_key()
    seconds = TOKEN_TTL_SECONDS if body.message_expiry_seconds is None \
        else body.message_expiry_seconds
    details: dict[str, Any] = {"authMethod": card.auth_method, "pan": card.pan,
                               "expirationMonth": card.expiry_month,
                               "expirationYear": card.expiry_year}
    if card.auth_method == "CRYPTOGRAM_3DS":
        details["cryptogram"] = base64.b64encode(os.urandom(20)).decode()
        details["eciIndicator"] = card.eci
    payload = {"gatewayMerchantId": merchant_id, "messageId": crypto.new_message_id(),
               "messageExpiration": str(st.now_ms() + seconds * 1000), "paymentMethod": "CARD",
               "paymentMethodDetails": details}
    # the intermediate key's validity follows the sandbox clock (which tests may move)
    token = st.signer.seal(payload, recipient,
                           intermediate_expiration_ms=st.now_ms() + 7 * 86400_000)
    return {"paymentMethodData": {
        "type": "CARD",
        "description": f"{card.network.title()} •••• {card.pan[-4:]}",
        "info": {"cardNetwork": card.network, "cardDetails": card.pan[-4:],
                 "assuranceDetails": {"accountVerified": True,
                                      "cardHolderAuthenticated": card.auth_method != "PAN_ONLY"}},
        "tokenizationData": {"type": "PAYMENT_GATEWAY", "token": dumps(token)},
    }}


def _check_binding(data: dict[str, Any], req: AuthorizationRequest) -> None:
    """A 3DS result made for an amount / currency / reference authorizes only that one."""
    amount, currency = data.get("amount"), data.get("currencyCode")
    if amount is not None and (Decimal(amount) != req.amount or currency != req.currency_code):
        raise ApiError(422, "ThreeDSecureInvalid", f"threeDSecure: the payer approved {amount} "
                       f"{currency}, not {req.amount} {req.currency_code}")
    reference = data.get("reference")
    if reference is not None and reference != req.client_system_transaction_id:
        raise ApiError(422, "ThreeDSecureInvalid", "threeDSecure: was made for another "
                       "clientSystemTransactionId")


def _card_account(st: WalletPayState, account_id: str, merchant_id: str,
                  store_id: str) -> Account:
    account = get_account(st, account_id, merchant_id, store_id, None)
    if account.card_type != "Card":
        raise ApiError(422, "ThreeDSecureNotNeeded",
                       "transactionAccountId: a Token account carries a cryptogram, not 3DS")
    return account


def _three_ds_result(st: WalletPayState, account: Account, ok: bool, trans_id: str,
                     binding: dict[str, Any]) -> dict[str, Any]:
    """Store a 3DS result (bound to what ``binding`` names) and return its wire form."""
    data = {"authenticationValue": base64.b64encode(os.urandom(20)).decode(),
            "eci": ("05" if account.network != "MASTERCARD" else "02") if ok else "07",
            "transStatus": "Y" if ok else "N"}
    st.ctx.store.add_three_ds(trans_id=trans_id, account_id=account.id,
                              data={**data, **binding}, now=st.ctx.now())
    return {"threeDSServerTransId": trans_id, **data}


def challenge(st: WalletPayState, body: ChallengeBody) -> dict[str, Any]:
    """``POST /_sandbox/3ds/challenge`` (admin): a 3DS result without a shopper."""
    account = _card_account(st, body.transaction_account_id, body.merchant_id, body.store_id)
    binding: dict[str, Any] = {}
    if body.amount is not None or body.currency_code is not None:
        if body.amount is None or body.currency_code is None:
            raise ApiError(400, "InvalidField", "amount: and currencyCode are given together")
        binding.update(amount=str(body.amount), currencyCode=body.currency_code)
    if body.client_system_transaction_id is not None:
        binding["reference"] = body.client_system_transaction_id
    return _three_ds_result(st, account, body.outcome == "success", secrets.token_hex(16),
                            binding)


# -- the hosted 3DS challenge (the shopper's page: walletctl.sandbox.pages.challenge_page) ----


def create_challenge(st: WalletPayState, body: ChallengeRequestBody,
                     base_url: str) -> dict[str, Any]:
    """``POST /api/v5/threeDSecure`` (server key): a single-use challenge page for one Card
    account, amount and reference."""
    account = _card_account(st, body.transaction_account_id, body.merchant_id, body.store_id)
    if account.cryptogram_used:
        raise ApiError(422, "PaymentAccountUsed",
                       "transactionAccountId: this Card payment account was already authorized")
    now = st.ctx.now()
    challenge_id = CHALLENGE_PREFIX + secrets.token_hex(16)
    expires = now + CHALLENGE_TTL
    st.ctx.store.add_three_ds(trans_id=challenge_id, account_id=account.id, data={
        "challenge": True, "amount": str(body.amount), "currencyCode": body.currency_code,
        "reference": body.client_system_transaction_id, "returnUrl": body.return_url,
        "expiresAt": expires.timestamp()}, now=now)
    return {"challengeId": challenge_id, "challengeUrl": f"{base_url}/pay/3ds/{challenge_id}",
            "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}


def find_challenge(st: WalletPayState, challenge_id: str) -> tuple[WalletPayRow, Account]:
    """The challenge and its account; 404 when unknown."""
    row = st.ctx.store.three_ds(challenge_id) if challenge_id.startswith(
        CHALLENGE_PREFIX) else None
    account_row = st.ctx.store.walletpay_account(row.parent_id) if row is not None else None
    if row is None or account_row is None or not row.data.get("challenge"):
        raise ApiError(404, "ThreeDSecureChallengeNotFound",
                       "challengeId: no such 3DS challenge")
    return row, Account.from_row(account_row)


def challenge_expired(st: WalletPayState, row: WalletPayRow) -> bool:
    return st.ctx.now().timestamp() >= float(row.data["expiresAt"])


def complete_challenge(st: WalletPayState, challenge_id: str, ok: bool) -> str | None:
    """The shopper's answer on the challenge page (once); returns the challenge's returnUrl.

    Raises 404 (unknown), 410 (expired) or 409 (already answered) :class:`ApiError`.
    """
    with st.ctx.store.atomic():
        row, account = find_challenge(st, challenge_id)
        if challenge_expired(st, row):
            raise ApiError(410, "ThreeDSecureChallengeExpired",
                           "challengeId: the challenge has expired")
        if not st.ctx.store.mark_walletpay_used("three_ds", challenge_id):
            raise ApiError(409, "ThreeDSecureChallengeUsed",
                           "challengeId: the challenge was already answered")
        binding = {k: row.data[k] for k in ("amount", "currencyCode", "reference")}
        _three_ds_result(st, account, ok, challenge_id.removeprefix(CHALLENGE_PREFIX), binding)
    url = row.data.get("returnUrl")
    return str(url) if url else None


def challenge_status(st: WalletPayState, challenge_id: str, merchant_id: str,
                     store_id: str) -> dict[str, Any]:
    """``GET /api/v5/threeDSecure/{challengeId}`` (server key): pending, or the result."""
    row, account = find_challenge(st, challenge_id)
    if account.merchant_id != merchant_id or account.store_id != store_id:
        raise ApiError(404, "ThreeDSecureChallengeNotFound",
                       "challengeId: no such 3DS challenge for this merchant/store")
    currency = str(row.data["currencyCode"])
    out: dict[str, Any] = {
        "challengeId": challenge_id, "transactionAccountId": account.id,
        "amount": to_wire(Decimal(row.data["amount"]), currency, st.ctx.config.amount_format),
        "currencyCode": currency, "clientSystemTransactionId": row.data["reference"],
        "status": "pending"}
    result = st.ctx.store.three_ds(challenge_id.removeprefix(CHALLENGE_PREFIX))
    if result is not None:
        out["status"] = "completed"
        out["transStatus"] = result.data["transStatus"]
        out["threeDSecure"] = {"threeDSServerTransId": result.id,
                               "authenticationValue": result.data["authenticationValue"],
                               "eci": result.data["eci"]}
    elif challenge_expired(st, row):
        out["status"] = "expired"
    return out




def check_key(request: Request, st: WalletPayState) -> dict[str, Any]:
    """The client script's key pre-check: is this PublicApiKey usable for merchant/store?

    Answers what the payment would: 401 for an unknown or expired key, 403 for a key of
    another merchant or store, 401 when no encryption key is bound to it.
    """
    cred = auth.authenticate(st.ctx, request)  # 401 first, before the query is read
    names = ("merchantId", "storeId")
    q = read_query(request.scope["query_string"], names, names)
    merchant_id, store_id = q["merchantId"], q["storeId"]
    auth.require_scope(cred, merchant_id, store_id)
    st.key_for_api_key(cred.key)
    return {"merchantId": merchant_id, "storeId": store_id, "status": "valid"}
