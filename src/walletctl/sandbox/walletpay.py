"""Browser wallet (WalletPay) routes of the sandbox: gateway side, emulated wallet, demo merchant.

Gateway API (``Authorization: PublicApiKey <key>`` unless stated):

* ``POST /api/v5/publicKeys`` (Basic ``userId:<service secret>``) ``{merchantId, storeId}`` ->
  ``{apiKey, encryptionKey, encryptionKeyId, expiresAt}``. Every call makes a fresh API key and
  a fresh EC P-256 key pair; ``encryptionKey`` is the base64 SubjectPublicKeyInfo (DER) of its
  public half, the key wallet tokens for this API key are encrypted to. The private half never
  leaves the sandbox (it is kept in the sandbox's store, see "State" below).
* ``POST /api/v5/paymentAccounts`` ``{merchantId, storeId, clientSystemTransactionId,
  paymentData}`` -> ``{transactionAccountId, cardType, cardNetwork, maskedCardNumber,
  expiryMonth, expiryYear[, cryptogram, eciIndicator]}`` (the last two for a device token).
  ``paymentData`` is the wallet's PaymentData (the token is
  ``paymentMethodData.tokenizationData.token``, a JSON string) or the token object itself.
* ``GET /api/v5/paymentAccounts/{id}?merchantId&storeId&encryptionKeyId`` -> the account
  (masked: first 6 / last 4). Unknown id or other merchant/store: 404; other key id: 403.
* ``POST /api/v5/transactions`` ``ecom.sale`` / ``ecom.preauthorization`` on a payment
  account. ``Token`` accounts need the account's ``cryptogram`` + ``eciIndicator`` (single
  use); ``Card`` accounts need ``threeDSecure`` from the simulated 3DS step. Stored in the
  shared ledger (method ``WalletPay``) so lookup / capture / refund / reversal work on it.

Sandbox-only helpers (no auth; loopback tool):

* ``GET /_sandbox/wallet/cards``: the emulated wallet's test cards.
* ``POST /_sandbox/wallet/token`` ``{cardId, gatewayMerchantId, publicKeyApi | encryptionKey,
  messageExpirySeconds?}`` -> ``{paymentMethodData}``: the emulated wallet provider mints a
  signed, encrypted ECv2-shaped token (see :mod:`walletctl.sandbox.crypto`).
* ``GET /_sandbox/wallet/rootKey``: the wallet root public key the gateway trusts.
* ``POST /_sandbox/3ds/challenge`` ``{transactionAccountId, merchantId, storeId,
  outcome?: "success" | "failure"}`` -> ``{threeDSServerTransId, authenticationValue, eci,
  transStatus}``; pass the first three as ``threeDSecure`` on the authorization.

Browser side: ``GET /walletpay.js`` (the client script), ``GET /demo/merchant`` (demo
merchant page) and its merchant server under ``/demo/merchant/api/``.

State: issued encryption key pairs (PEM), the static key's encryption key, the wallet's
signing keys, payment accounts (with their single-use cryptogram flag), 3DS results and the
seen token ``messageId`` values live in the sandbox store (``walletpay_*`` tables of
:mod:`walletctl.sandbox.store`), so ``serve --db PATH`` keeps them across restarts;
``/_sandbox/reset`` clears all but the sandbox-level keys. Only the demo merchant's sessions
and results are in memory.
"""

from __future__ import annotations

import base64
import os
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from walletctl.constants import WALLETPAY_METHOD
from walletctl.errors import RequestValidationError
from walletctl.models.base import loads
from walletctl.models.money import AmountFormat, check_currency, parse_major, to_wire
from walletctl.models.walletpay import AuthorizationRequest
from walletctl.sandbox import crypto, wire
from walletctl.sandbox.context import SandboxContext
from walletctl.sandbox.crypto import TokenError, WalletSigner
from walletctl.sandbox.engine import SandboxError
from walletctl.sandbox.engine import error_body as engine_error_body
from walletctl.sandbox.store import DuplicateReferenceError, TxRow, WalletPayRow

STATIC = Path(__file__).parent / "static"
API_KEY_TTL = timedelta(minutes=30)
TOKEN_TTL_SECONDS = 300
DEFAULT_KEY_ID = "ek_sandbox_default"
# ids of the wallet provider's signing keys in the store's walletpay_keys table
ROOT_KEY_ID = "wallet_root"
INTERMEDIATE_KEY_ID = "wallet_intermediate"
DEMO_USER = "demo-merchant"


@dataclass(frozen=True)
class TestCard:
    """A card of the emulated wallet. ``pan`` is the FPAN (PAN_ONLY) or the device token."""

    id: str
    label: str
    network: str
    auth_method: str
    pan: str
    expiry_month: int
    expiry_year: int
    eci: str | None = None
    decline: bool = False

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "cardNetwork": self.network,
                "authMethod": self.auth_method, "last4": self.pan[-4:],
                "expiryMonth": self.expiry_month, "expiryYear": self.expiry_year}


TEST_CARDS: tuple[TestCard, ...] = (
    TestCard("visa-pan", "Visa PAN_ONLY (needs 3DS)", "VISA", "PAN_ONLY",
             "4111111111111111", 12, 2030),
    TestCard("mc-token", "Mastercard device token (CRYPTOGRAM_3DS)", "MASTERCARD",
             "CRYPTOGRAM_3DS", "5204740000001002", 11, 2031, eci="02"),
    TestCard("visa-token", "Visa device token (CRYPTOGRAM_3DS)", "VISA", "CRYPTOGRAM_3DS",
             "4895370000000013", 10, 2031, eci="05"),
    TestCard("amex-pan", "Amex PAN_ONLY (needs 3DS)", "AMEX", "PAN_ONLY",
             "378282246310005", 9, 2029),
    TestCard("jcb-pan", "JCB PAN_ONLY (needs 3DS)", "JCB", "PAN_ONLY",
             "3530111333300000", 8, 2030),
    TestCard("discover-token", "Discover device token (CRYPTOGRAM_3DS)", "DISCOVER",
             "CRYPTOGRAM_3DS", "6011000990139424", 7, 2031, eci="05"),
    TestCard("visa-decline", "Visa PAN_ONLY, always declined", "VISA", "PAN_ONLY",
             "4000000000000002", 12, 2030, decline=True),
)
CARDS_BY_ID = {c.id: c for c in TEST_CARDS}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


# Reasons that are plain validation / authentication failures: they take the gateway's
# generic description; any other reason (CryptogramUsed, ...) is the error's description.
_GENERIC = frozenset({"InvalidJson", "MissingField", "InvalidField", "ValidationError",
                      "Unauthorized"})


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    """The gateway error object, in the same vocabulary as endpoints 1-3 (code by status,
    e.g. ``TRX-422``; description names the reason, e.g. ``CryptogramUsed``)."""
    return engine_error_body(status, message,
                             description=None if code in _GENERIC else code)


def error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse(error_body(exc.status, exc.code, exc.message), status_code=exc.status)


def card_network(pan: str) -> str:
    if pan.startswith("4"):
        return "VISA"
    if pan[:2] in ("34", "37"):
        return "AMEX"
    if pan[:2] in {"51", "52", "53", "54", "55"} or 2221 <= int(pan[:4] or 0) <= 2720:
        return "MASTERCARD"
    if pan.startswith(("6011", "65")) or 644 <= int(pan[:3] or 0) <= 649:
        return "DISCOVER"
    if 3528 <= int(pan[:4] or 0) <= 3589:
        return "JCB"
    return "UNKNOWN"


def mask(pan: str) -> str:
    """First 6 / last 4 at most; shorter numbers show only the last 4."""
    if len(pan) >= 13:
        return pan[:6] + "*" * (len(pan) - 10) + pan[-4:]
    return "*" * max(len(pan) - 4, 0) + pan[-4:]


@dataclass
class KeyPair:
    key_id: str
    private: ec.EllipticCurvePrivateKey
    merchant_id: str | None
    store_id: str | None


@dataclass
class Account:
    id: str
    merchant_id: str
    store_id: str
    key_id: str
    card_type: str  # Card | Token
    network: str
    pan: str = field(repr=False)
    expiry_month: int
    expiry_year: int
    reference: str
    cryptogram: str | None = field(default=None, repr=False)
    eci: str | None = None
    cryptogram_used: bool = False
    decline: bool = False

    def data(self) -> dict[str, Any]:
        """The stored form (store ``walletpay_accounts.data``; ids and used flag are columns)."""
        return {"cardType": self.card_type, "cardNetwork": self.network, "pan": self.pan,
                "expiryMonth": self.expiry_month, "expiryYear": self.expiry_year,
                "reference": self.reference, "cryptogram": self.cryptogram, "eci": self.eci,
                "decline": self.decline}

    @classmethod
    def from_row(cls, row: WalletPayRow) -> Account:
        d = row.data
        return cls(id=row.id, merchant_id=str(row.merchant_id), store_id=str(row.store_id),
                   key_id=row.parent_id, card_type=d["cardType"], network=d["cardNetwork"],
                   pan=d["pan"], expiry_month=int(d["expiryMonth"]),
                   expiry_year=int(d["expiryYear"]), reference=d["reference"],
                   cryptogram=d.get("cryptogram"), eci=d.get("eci"),
                   cryptogram_used=row.used, decline=bool(d.get("decline")))

    def public(self) -> dict[str, Any]:
        return {
            "transactionAccountId": self.id,
            "cardType": self.card_type,
            "authMethod": "PAN_ONLY" if self.card_type == "Card" else "CRYPTOGRAM_3DS",
            "cardNetwork": self.network,
            "maskedCardNumber": mask(self.pan),
            "expiryMonth": self.expiry_month,
            "expiryYear": self.expiry_year,
            "merchantId": self.merchant_id,
            "storeId": self.store_id,
            "encryptionKeyId": self.key_id,
            "clientSystemTransactionId": self.reference,
        }


@dataclass
class ThreeDS:
    trans_id: str
    account_id: str
    authentication_value: str = field(repr=False)
    eci: str
    status: str  # Y | N
    used: bool = False

    def data(self) -> dict[str, Any]:
        return {"authenticationValue": self.authentication_value, "eci": self.eci,
                "transStatus": self.status}

    @classmethod
    def from_row(cls, row: WalletPayRow) -> ThreeDS:
        d = row.data
        return cls(trans_id=row.id, account_id=row.parent_id,
                   authentication_value=d["authenticationValue"], eci=d["eci"],
                   status=d["transStatus"], used=row.used)


@dataclass
class DemoSession:
    reference: str
    merchant_id: str
    store_id: str
    api_key: str = field(repr=False)
    key_id: str
    kind: str = "sale"
    amount: str = "12.34"
    currency: str = "EUR"
    authorize: bool = True


class _StoredReplayGuard(crypto.ReplayGuard):
    """:class:`crypto.ReplayGuard` semantics, with the seen messageIds in the store."""

    def __init__(self, state: WalletPayState) -> None:
        super().__init__()
        self._state = state

    def claim(self, message_id: str, expires_ms: int) -> bool:
        # forget only what expired by both clocks (the sandbox clock may be moved)
        now = min(self._state.now_ms(), crypto.now_ms())
        return self._state.ctx.store.claim_message_id(message_id, expires_ms, now)


class WalletPayState:
    """State of the browser wallet (keys, accounts, 3DS, demo merchant).

    Everything but the demo merchant lives in the sandbox store (see the module docstring):
    a restarted ``serve --db PATH`` keeps issued keys, payment accounts and 3DS results.
    Parsed private keys are cached here (they never change once stored).
    """

    def __init__(self, ctx: SandboxContext) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self._keys: dict[str, KeyPair] = {}
        self.signer = WalletSigner(root=self._sandbox_key(ROOT_KEY_ID),
                                   intermediate=self._sandbox_key(INTERMEDIATE_KEY_ID))
        self.default_key = KeyPair(DEFAULT_KEY_ID, self._sandbox_key(DEFAULT_KEY_ID), None, None)
        self.replay: crypto.ReplayGuard = _StoredReplayGuard(self)
        self.demo_sessions: dict[str, DemoSession] = {}
        self.demo_results: list[dict[str, Any]] = []

    def _sandbox_key(self, key_id: str) -> ec.EllipticCurvePrivateKey:
        """A sandbox-level key: the stored one, else a new one (stored, kept by reset)."""
        pem = self.ctx.store.add_walletpay_key(
            key_id=key_id, private_pem=crypto.private_key_pem(crypto.new_private_key()),
            merchant_id=None, store_id=None, now=self.ctx.now(), keep=True)
        return crypto.load_private_key_pem(pem)

    def reset(self) -> None:
        """Forget issued keys, accounts, 3DS results and demo results (for ``/_sandbox/reset``).

        The wallet's signing keys and the static key's encryption key are kept.
        """
        with self.lock:
            self._keys.clear()
            self.demo_sessions.clear()
            self.demo_results.clear()
        self.ctx.store.reset_walletpay()

    def now_ms(self) -> int:
        return int(self.ctx.now().timestamp() * 1000)

    def add_key(self, pair: KeyPair) -> None:
        self.ctx.store.add_walletpay_key(
            key_id=pair.key_id, private_pem=crypto.private_key_pem(pair.private),
            merchant_id=pair.merchant_id, store_id=pair.store_id, now=self.ctx.now())
        with self.lock:
            self._keys[pair.key_id] = pair

    def key(self, key_id: str) -> KeyPair | None:
        with self.lock:
            pair = self._keys.get(key_id)
        if pair is not None:
            return pair
        row = self.ctx.store.walletpay_key(key_id)
        if row is None:
            return None
        pair = KeyPair(row.key_id, crypto.load_private_key_pem(row.private_pem),
                       row.merchant_id, row.store_id)
        with self.lock:
            self._keys[key_id] = pair
        return pair

    def key_for_api_key(self, api_key: str) -> KeyPair:
        if api_key == self.ctx.config.api_key:
            return self.default_key
        info = self.ctx.store.api_key_info(api_key)
        key_id = (info.extra or {}).get("encryptionKeyId") if info else None
        pair = self.key(key_id) if isinstance(key_id, str) and key_id else None
        if pair is None:
            raise ApiError(401, "Unauthorized",
                           "no encryption key is bound to this API key (sandbox restarted?)")
        return pair


# -- helpers ---------------------------------------------------------------------------------


def _fmt(ctx: SandboxContext) -> AmountFormat:
    return "minor" if ctx.amount_format == "minor" else "decimal"


def _state(request: Request) -> WalletPayState:
    state: WalletPayState = request.app.state.walletpay
    return state


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = wire.parse_object(raw, where="request body")
        wire.check_numbers(body, _fmt(request.app.state.ctx))
    except SandboxError as exc:
        raise ApiError(exc.status, "InvalidJson", exc.message) from None
    return body


def _get(body: dict[str, Any], name: str) -> Any:
    for key, value in body.items():
        if isinstance(key, str) and key.lower() == name.lower():
            return value
    return None


def _require_str(body: dict[str, Any], name: str, max_len: int = 128) -> str:
    value = _get(body, name)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "MissingField", f"{name}: is required (non-empty string)")
    if len(value) > max_len:
        raise ApiError(400, "InvalidField", f"{name}: at most {max_len} characters")
    return value


def _api_key(request: Request, ctx: SandboxContext, merchant_id: str | None,
             store_id: str | None) -> str:
    header = request.headers.get("authorization")
    problem = ctx.check_api_key(header, merchant_id, store_id)
    if problem is not None:
        raise ApiError(*problem)
    return (header or "").strip().partition(" ")[2].strip()


def _check_basic(request: Request, ctx: SandboxContext) -> None:
    header = request.headers.get("authorization") or ""
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic" or not value:
        raise ApiError(401, "Unauthorized",
                       "the public key service needs Authorization: Basic userId:secret")
    try:
        user, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(401, "Unauthorized", "malformed Basic credentials") from None
    if not sep or not user or not secrets.compare_digest(secret, ctx.config.service_secret):
        raise ApiError(401, "Unauthorized", "service user or secret is not valid")


def _extract_token(payment_data: Any) -> Any:
    if isinstance(payment_data, str):
        return payment_data
    if not isinstance(payment_data, dict):
        raise ApiError(400, "MissingField", "paymentData: is required (object)")
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
            "encryptionKeyId": key_id, "expiresAt": _iso_z(expires)}


def _iso_z(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def create_account(st: WalletPayState, api_key: str, body: dict[str, Any]) -> dict[str, Any]:
    merchant_id = _require_str(body, "merchantId")
    store_id = _require_str(body, "storeId")
    reference = _require_str(body, "clientSystemTransactionId", 64)
    token = _extract_token(_get(body, "paymentData"))
    pair = st.key_for_api_key(api_key)
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
    three_ds: ThreeDS | None = None
    if account.card_type == "Token":
        if not req.cryptogram or not req.eci_indicator:
            raise ApiError(400, "MissingField", "cryptogram: and eciIndicator are required for a "
                                                "Token (CRYPTOGRAM_3DS) payment account")
        if not secrets.compare_digest(req.cryptogram, account.cryptogram or "") or \
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
        found = ctx.store.three_ds(req.three_d_secure.three_ds_server_trans_id)
        three_ds = ThreeDS.from_row(found) if found is not None else None
        if three_ds is None or three_ds.account_id != account.id or not secrets.compare_digest(
                three_ds.authentication_value, req.three_d_secure.authentication_value) or \
                three_ds.eci != req.three_d_secure.eci:
            raise ApiError(422, "ThreeDSecureInvalid",
                           "threeDSecure: does not match a 3DS result for this payment account")
        if three_ds.used:
            raise ApiError(422, "ThreeDSecureUsed", "threeDSecure: was already used")
        if three_ds.status != "Y":
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
    if account.card_type == "Token" and state == "Approved":
        ctx.store.mark_walletpay_used("account", account.id)
    if three_ds is not None:
        ctx.store.mark_walletpay_used("three_ds", three_ds.trans_id)
    return row


def authorize(st: WalletPayState, body: dict[str, Any]) -> dict[str, Any]:
    ctx = st.ctx
    fmt = _fmt(ctx)
    try:
        req = AuthorizationRequest.from_wire(body, fmt)
    except RequestValidationError as exc:
        field_name, rule = exc.problems[0]
        raise ApiError(400, "ValidationError", f"{field_name}: {rule}") from None
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


def mint_token(st: WalletPayState, body: dict[str, Any]) -> dict[str, Any]:
    card_id = _require_str(body, "cardId")
    card = CARDS_BY_ID.get(card_id)
    if card is None:
        raise ApiError(400, "InvalidField", f"cardId: must be one of {', '.join(CARDS_BY_ID)}")
    merchant_id = _require_str(body, "gatewayMerchantId")
    enc = _get(body, "encryptionKey")
    if enc:
        try:
            recipient = crypto.load_public_key(enc, "encryptionKey")
        except TokenError as exc:
            raise ApiError(400, "InvalidField", exc.message) from None
    else:
        api_key = _require_str(body, "publicKeyApi", 256)
        if api_key != st.ctx.config.api_key and st.ctx.store.api_key_info(api_key) is None:
            raise ApiError(401, "Unauthorized", "publicKeyApi: is not a key issued by the gateway")
        recipient = st.key_for_api_key(api_key).private.public_key()
    ttl = _get(body, "messageExpirySeconds")
    seconds = int(ttl) if isinstance(ttl, int | Decimal) and not isinstance(ttl, bool) \
        else TOKEN_TTL_SECONDS
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
    from walletctl.models.base import dumps

    return {"paymentMethodData": {
        "type": "CARD",
        "description": f"{card.network.title()} •••• {card.pan[-4:]}",
        "info": {"cardNetwork": card.network, "cardDetails": card.pan[-4:],
                 "assuranceDetails": {"accountVerified": True,
                                      "cardHolderAuthenticated": card.auth_method != "PAN_ONLY"}},
        "tokenizationData": {"type": "PAYMENT_GATEWAY", "token": dumps(token)},
    }}


def challenge(st: WalletPayState, body: dict[str, Any]) -> dict[str, Any]:
    account_id = _require_str(body, "transactionAccountId")
    account = get_account(st, account_id, _require_str(body, "merchantId"),
                          _require_str(body, "storeId"), None)
    if account.card_type != "Card":
        raise ApiError(422, "ThreeDSecureNotNeeded",
                       "transactionAccountId: a Token account carries a cryptogram, not 3DS")
    outcome = _get(body, "outcome") or "success"
    if outcome not in ("success", "failure"):
        raise ApiError(400, "InvalidField", "outcome: must be success or failure")
    ok = outcome == "success"
    result = ThreeDS(trans_id=secrets.token_hex(16), account_id=account.id,
                     authentication_value=base64.b64encode(os.urandom(20)).decode(),
                     eci=("05" if account.network != "MASTERCARD" else "02") if ok else "07",
                     status="Y" if ok else "N")
    st.ctx.store.add_three_ds(trans_id=result.trans_id, account_id=account.id,
                              data=result.data(), now=st.ctx.now())
    return {"threeDSServerTransId": result.trans_id,
            "authenticationValue": result.authentication_value, "eci": result.eci,
            "transStatus": result.status}


# -- demo merchant server --------------------------------------------------------------------


async def _self_call(request: Request, method: str, path: str, *, json: Any = None,
                     params: dict[str, str] | None = None,
                     headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """The merchant server calls the gateway over HTTP semantics, in process (ASGI)."""
    import httpx

    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        resp = await client.request(method, path, json=json, params=params, headers=headers)
    return resp.status_code, loads(resp.content or b"null")


async def demo_session(request: Request, st: WalletPayState) -> dict[str, Any]:
    q = request.query_params
    merchant_id = q.get("merchantId") or "M-1001"
    store_id = q.get("storeId") or "S-01"
    basic = base64.b64encode(f"{DEMO_USER}:{st.ctx.config.service_secret}".encode()).decode()
    status, keys = await _self_call(request, "POST", "/api/v5/publicKeys",
                                    json={"merchantId": merchant_id, "storeId": store_id},
                                    headers={"Authorization": f"Basic {basic}"})
    if status != 200:
        raise ApiError(502, "DemoKeys", "the demo merchant could not get its keys")
    reference = q.get("ref") or "demo-" + secrets.token_hex(6)
    currency = (q.get("currency") or "EUR").upper()
    amount = q.get("amount") or "12.34"
    try:
        check_currency(currency)
        if parse_major(amount, currency) <= 0:
            raise ValueError("must be greater than zero")
    except ValueError as exc:
        raise ApiError(400, "InvalidField", f"amount/currency: {exc}") from None
    session = DemoSession(
        reference=reference, merchant_id=merchant_id, store_id=store_id,
        api_key=keys["apiKey"], key_id=keys["encryptionKeyId"],
        kind="preauth" if q.get("type") == "preauth" else "sale",
        amount=amount, currency=currency,
        authorize=q.get("authorize", "1") not in ("0", "false", "no"),
    )
    with st.lock:
        st.demo_sessions[reference] = session
    return {"merchantId": merchant_id, "storeId": store_id, "clientSystemTransactionId": reference,
            "publicKeyApi": session.api_key, "amount": session.amount,
            "currencyCode": session.currency, "type": session.kind,
            "authorize": session.authorize}


async def demo_result(request: Request, st: WalletPayState) -> dict[str, Any]:
    body = await _json_body(request)
    detail = _get(body, "detail")
    if not isinstance(detail, dict):
        raise ApiError(400, "MissingField", "detail: is required (the event.detail object)")
    record: dict[str, Any] = {"detail": detail}
    reference = _get(detail, "clientSystemTransactionId") or _get(body, "reference")
    session = st.demo_sessions.get(str(reference))
    if session is not None:
        record["encryptionKeyId"] = session.key_id
        record["merchantId"] = session.merchant_id
        record["storeId"] = session.store_id
    account_id = _get(detail, "transactionAccountId")
    if session is None or not account_id:
        record["outcome"] = "error" if _get(detail, "code") else "unknown-session"
        st.demo_results.append(record)
        return record
    # Stored for the later transaction request (spec section 6).
    record["stored"] = {"cryptogram": _get(detail, "cryptogram") is not None,
                        "eciIndicator": _get(detail, "eciIndicator")}
    auth = {"Authorization": f"PublicApiKey {session.api_key}"}
    status, account = await _self_call(
        request, "GET", f"/api/v5/paymentAccounts/{account_id}",
        params={"merchantId": session.merchant_id, "storeId": session.store_id,
                "encryptionKeyId": session.key_id}, headers=auth)
    record["account"] = account
    if status != 200 or not session.authorize:
        record["outcome"] = "account" if status == 200 else "account-error"
        st.demo_results.append(record)
        return record
    amount = Decimal(session.amount)
    fmt = _fmt(st.ctx)
    tx: dict[str, Any] = {
        "merchantId": session.merchant_id, "storeId": session.store_id, "userId": DEMO_USER,
        "type": "ecom.sale" if session.kind == "sale" else "ecom.preauthorization",
        "amount": to_wire(amount, session.currency, fmt), "currencyCode": session.currency,
        "clientSystemTransactionId": session.reference, "transactionAccountId": account_id,
        "encryptionKeyId": session.key_id,
    }
    if account.get("cardType") == "Token":
        tx["cryptogram"] = _get(detail, "cryptogram")
        tx["eciIndicator"] = _get(detail, "eciIndicator")
    else:
        status, three = await _self_call(
            request, "POST", "/_sandbox/3ds/challenge",
            json={"transactionAccountId": account_id, "merchantId": session.merchant_id,
                  "storeId": session.store_id})
        tx["threeDSecure"] = {k: three.get(k) for k in
                              ("threeDSServerTransId", "authenticationValue", "eci")}
    status, result = await _self_call(request, "POST", "/api/v5/transactions", json=tx,
                                      headers=auth)
    record["transaction"] = result
    record["outcome"] = result.get("state") if status == 200 else "authorization-error"
    st.demo_results.append(record)
    return record


# -- installation ----------------------------------------------------------------------------


def install(app: FastAPI, ctx: SandboxContext) -> None:
    """Add the browser-wallet routes, the client script and the demo merchant to ``app``."""
    st = WalletPayState(ctx)
    app.state.walletpay = st

    def guarded(handler: Any) -> Any:
        async def wrapper(request: Request) -> Response:
            try:
                result = await handler(request)
            except ApiError as exc:
                return error_response(exc)
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        wrapper.__name__ = handler.__name__
        wrapper.__doc__ = handler.__doc__
        return wrapper

    async def public_keys(request: Request) -> Any:
        """Public key service: a fresh API key and encryption key (Basic userId:secret)."""
        _check_basic(request, ctx)
        body = await _json_body(request)
        return issue_keys(st, _require_str(body, "merchantId"), _require_str(body, "storeId"))

    async def payment_accounts(request: Request) -> Any:
        """Create Payment Account: verify + decrypt the wallet token, return the account id."""
        body = await _json_body(request)
        api_key = _api_key(request, ctx, _get(body, "merchantId"), _get(body, "storeId"))
        return create_account(st, api_key, body)

    async def payment_account(request: Request) -> Any:
        """Get Payment Account (masked)."""
        q = request.query_params
        merchant_id, store_id = q.get("merchantId"), q.get("storeId")
        for name, value in (("merchantId", merchant_id), ("storeId", store_id),
                            ("encryptionKeyId", q.get("encryptionKeyId"))):
            if not value:
                raise ApiError(400, "MissingField", f"{name}: query parameter is required")
        _api_key(request, ctx, merchant_id, store_id)
        account = get_account(st, request.path_params["account_id"], str(merchant_id),
                              str(store_id), q.get("encryptionKeyId"))
        return account.public()

    async def transactions(request: Request) -> Any:
        """Authorization (ecom.sale / ecom.preauthorization) on a payment account."""
        body = await _json_body(request)
        _api_key(request, ctx, _get(body, "merchantId"), _get(body, "storeId"))
        return authorize(st, body)

    async def wallet_cards(request: Request) -> Any:
        """The emulated wallet's test cards (sandbox only)."""
        return {"cards": [c.public() for c in TEST_CARDS]}

    async def wallet_token(request: Request) -> Any:
        """Emulated wallet provider: mint a signed, encrypted ECv2-shaped token."""
        return mint_token(st, await _json_body(request))

    async def wallet_root_key(request: Request) -> Any:
        """The wallet root public key the gateway trusts (base64 SPKI)."""
        return {"rootKey": st.signer.root_public_b64(), "protocolVersion": "ECv2"}

    async def three_ds_challenge(request: Request) -> Any:
        """Simulated 3DS challenge for a Card (PAN_ONLY) payment account."""
        return challenge(st, await _json_body(request))

    async def client_script(request: Request) -> Any:
        return FileResponse(STATIC / "walletpay.js", media_type="application/javascript",
                            headers={"Cache-Control": "no-cache"})

    async def demo_page(request: Request) -> Any:
        return HTMLResponse((STATIC / "demo_merchant.html").read_text(encoding="utf-8"))

    async def demo_script(request: Request) -> Any:
        return FileResponse(STATIC / "demo_merchant.js", media_type="application/javascript",
                            headers={"Cache-Control": "no-cache"})

    async def demo_session_route(request: Request) -> Any:
        return await demo_session(request, st)

    async def demo_result_route(request: Request) -> Any:
        return await demo_result(request, st)

    async def demo_results(request: Request) -> Any:
        return {"results": list(st.demo_results)}

    routes: list[tuple[str, str, Any, bool]] = [
        ("/api/v5/publicKeys", "POST", public_keys, True),
        ("/api/v5/paymentAccounts", "POST", payment_accounts, True),
        ("/api/v5/paymentAccounts/{account_id}", "GET", payment_account, True),
        ("/api/v5/transactions", "POST", transactions, True),
        ("/_sandbox/wallet/cards", "GET", wallet_cards, False),
        ("/_sandbox/wallet/token", "POST", wallet_token, False),
        ("/_sandbox/wallet/rootKey", "GET", wallet_root_key, False),
        ("/_sandbox/3ds/challenge", "POST", three_ds_challenge, False),
        ("/walletpay.js", "GET", client_script, False),
        ("/demo/merchant", "GET", demo_page, False),
        ("/demo/merchant.js", "GET", demo_script, False),
        ("/demo/merchant/api/session", "GET", demo_session_route, False),
        ("/demo/merchant/api/result", "POST", demo_result_route, False),
        ("/demo/merchant/api/results", "GET", demo_results, False),
    ]
    for path, method, handler, in_schema in routes:
        app.add_api_route(path, guarded(handler), methods=[method], include_in_schema=in_schema,
                          summary=(handler.__doc__ or "").strip().split("\n")[0] or None)
