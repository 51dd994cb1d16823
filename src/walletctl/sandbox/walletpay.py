"""The browser wallet (WalletPay) in the sandbox: its gateway routes, the emulated wallet, the
client script's files and the demo merchant (docs/walletpay.md)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import secrets
import threading
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import ValidationError

from walletctl.constants import WALLETPAY_METHOD
from walletctl.masking import mask_pan
from walletctl.models.base import dumps
from walletctl.models.fields import check_reference
from walletctl.models.money import check_currency, parse_major, to_wire
from walletctl.models.walletpay import AuthorizationRequest
from walletctl.sandbox import auth, crypto, pages
from walletctl.sandbox.config import SandboxContext
from walletctl.sandbox.crypto import TokenError, WalletSigner
from walletctl.sandbox.driver_tokens import TOKEN_TTL_SECONDS as DRIVER_TOKEN_TTL
from walletctl.sandbox.driver_tokens import DriverTokens
from walletctl.sandbox.engine import approved_code
from walletctl.sandbox.replies import SandboxError, error_body
from walletctl.sandbox.requests import (
    AuthorizationBody,
    ChallengeBody,
    ChallengeRequestBody,
    DemoQuoteBody,
    DemoResultBody,
    DriverTokenBody,
    EventDetail,
    PaymentAccountBody,
    PublicKeysBody,
    ThreeDSecureBody,
    WalletTokenBody,
    form_values,
    get_folded,
    read_model,
    read_query,
)
from walletctl.sandbox.store import DuplicateReferenceError, TxRow, WalletPayRow

API_KEY_TTL = timedelta(minutes=30)
TOKEN_TTL_SECONDS = 300
DEFAULT_KEY_ID = "ek_sandbox_default"
ROOT_KEY_ID = "wallet_root"
INTERMEDIATE_KEY_ID = "wallet_intermediate"
CHALLENGE_TTL = timedelta(minutes=15)
CHALLENGE_PREFIX = "ch_"
DEMO_MERCHANT, DEMO_STORE, DEMO_USER = "M-1001", "S-01", "demo-merchant"
DEMO_RESULTS_MAX = 100
DEMO_SESSIONS_MAX = 500
# the demo shop's prices (its orders are :class:`DemoSession`)
SHIPPING = {"standard": Decimal("0.00"), "express": Decimal("5.00"),
            "overnight": Decimal("12.50")}
OFFERS = {"SAVE2": Decimal("2.00")}

# The browser-wallet routes' own error descriptions and their status (docs/sandbox.md,
# "Browser-wallet reasons", lists the same; tests/sandbox/test_docs_agree.py compares them).
WALLET_REASONS: dict[str, int] = {
    "PaymentDataMalformed": 400, "ThreeDSecureRequired": 400,
    "EncryptionKeyMismatch": 403,
    "PaymentAccountNotFound": 404, "DemoOrderNotFound": 404,
    "ThreeDSecureChallengeNotFound": 404,
    "DuplicateReference": 409, "DemoOrderExists": 409, "DemoOrderPaid": 409,
    "ThreeDSecureChallengeUsed": 409, "ThreeDSecureChallengeExpired": 410,
    "PaymentDataTampered": 422, "PaymentDataExpired": 422, "PaymentDataReplayed": 422,
    "PaymentDataWrongKey": 422, "PaymentDataMerchantMismatch": 422, "CardExpired": 422,
    "CryptogramMismatch": 422, "CryptogramUsed": 422, "ThreeDSecureInvalid": 422,
    "ThreeDSecureUsed": 422, "ThreeDSecureNotNeeded": 422, "PaymentAccountUsed": 422,
}


@dataclass(frozen=True)
class TestCard:
    """A card of the emulated wallet: ``pan`` is the FPAN (PAN_ONLY) or the device token."""

    id: str
    label: str
    network: str
    auth_method: str
    pan: str
    expiry_month: int
    expiry_year: int
    eci: str | None = None
    decline: bool = False
    funding: str = "CREDIT"  # or DEBIT, PREPAID: what the sheet's allow*Cards options filter

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "cardNetwork": self.network,
                "authMethod": self.auth_method, "funding": self.funding,
                "last4": self.pan[-4:],
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
    TestCard("visa-debit", "Visa debit device token (CRYPTOGRAM_3DS)", "VISA",
             "CRYPTOGRAM_3DS", "4000056655665556", 6, 2031, eci="05", funding="DEBIT"),
    TestCard("mc-prepaid", "Mastercard prepaid PAN_ONLY (needs 3DS)", "MASTERCARD",
             "PAN_ONLY", "5105105105105100", 5, 2030, funding="PREPAID"),
)
CARDS_BY_ID = {c.id: c for c in TEST_CARDS}


class ApiError(SandboxError):
    """A browser-wallet route's own error: the status its ``reason`` has, the code by status
    (``TRX-422``) and the reason as description (``CryptogramUsed``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(WALLET_REASONS[reason], message, description=reason)


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


@dataclass
class KeyPair:
    key_id: str
    private: ec.EllipticCurvePrivateKey


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

    def data(self) -> dict[str, Any]:  # the store's walletpay_accounts.data
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
            "maskedCardNumber": mask_pan(self.pan),
            "expiryMonth": self.expiry_month,
            "expiryYear": self.expiry_year,
            "merchantId": self.merchant_id,
            "storeId": self.store_id,
            "encryptionKeyId": self.key_id,
            "clientSystemTransactionId": self.reference,
        }


@dataclass
class DemoSession:  # an order of the demo merchant (DEMO_MERCHANT, DEMO_STORE)
    reference: str
    api_key: str = field(repr=False)
    key_id: str
    kind: str = "sale"
    amount: Decimal = Decimal("12.34")  # the order's subtotal
    currency: str = "EUR"
    authorize: bool = True
    shipping: str | None = None  # the shipping option of the last quote (None: no shipping)
    offer: str | None = None
    paid: bool = False

    def total(self) -> Decimal:
        value = self.amount + SHIPPING.get(self.shipping or "", Decimal(0))
        return value - OFFERS.get(self.offer or "", Decimal(0))

    def quote(self) -> dict[str, Any]:
        items = [{"label": "Subtotal", "type": "SUBTOTAL", "price": f"{self.amount:.2f}"}]
        if self.shipping is not None:
            items.append({"label": "Shipping", "type": "LINE_ITEM",
                          "price": f"{SHIPPING[self.shipping]:.2f}"})
        if self.offer is not None:
            items.append({"label": "Offer " + self.offer, "type": "LINE_ITEM",
                          "price": f"{-OFFERS[self.offer]:.2f}"})
        return {"totalPrice": f"{self.total():.2f}", "currencyCode": self.currency,
                "displayItems": items, "shippingOptionId": self.shipping,
                "offers": [{"redemptionCode": self.offer,
                            "description": f"{OFFERS[self.offer]:.2f} off"}] if self.offer
                else []}


class WalletPayState:
    """The browser wallet's signing keys and the demo merchant's orders and results."""

    def __init__(self, ctx: SandboxContext) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self.signer = WalletSigner(root=self._sandbox_key(ROOT_KEY_ID),
                                   intermediate=self._sandbox_key(INTERMEDIATE_KEY_ID))
        self.default_key = KeyPair(DEFAULT_KEY_ID, self._sandbox_key(DEFAULT_KEY_ID))
        self.demo_sessions: dict[str, DemoSession] = {}
        # bounded; never a cryptogram or a PAN
        self.demo_results: deque[dict[str, Any]] = deque(maxlen=DEMO_RESULTS_MAX)
        self.driver_tokens = DriverTokens()

    def _sandbox_key(self, key_id: str) -> ec.EllipticCurvePrivateKey:
        """A sandbox-level key: the stored one, else a new one (stored, kept by reset)."""
        pem = self.ctx.store.add_walletpay_key(
            key_id=key_id, private_pem=crypto.private_key_pem(crypto.new_private_key()),
            merchant_id=None, store_id=None, now=self.ctx.now(), keep=True)
        return crypto.load_private_key_pem(pem)

    def reset(self) -> None:
        """``/_sandbox/reset``: forget all but the sandbox-level keys."""
        with self.lock:
            self.demo_sessions.clear()
            self.demo_results.clear()
        self.driver_tokens.clear()
        self.ctx.store.reset_walletpay()

    def now_ms(self) -> int:
        return int(self.ctx.now().timestamp() * 1000)

    def claim_message_id(self, message_id: str, expires_ms: int) -> bool:
        """True the first time a token's messageId is seen (kept in the store), else False."""
        # forget only what expired by both clocks (the sandbox clock may be moved)
        now = min(self.now_ms(), crypto.now_ms())
        return self.ctx.store.claim_message_id(message_id, expires_ms, now)

    def key_for_api_key(self, api_key: str) -> KeyPair:
        if api_key == self.ctx.config.api_key:
            return self.default_key
        info = self.ctx.store.api_key_info(api_key)
        key_id = info.extra.get("encryptionKeyId") if info else None
        row = self.ctx.store.walletpay_key(key_id) if isinstance(key_id, str) and key_id else None
        if row is None:
            raise SandboxError(401, "no encryption key is bound to this API key (sandbox "
                               "restarted?)")
        return KeyPair(row.key_id, crypto.load_private_key_pem(row.private_pem))


# -- files: the client script, its declaration, the test driver, the demo page -----------

STATIC = Path(__file__).parent / "static"
SCRIPT_DIR = "walletpay"
SHORT_CACHE = "public, max-age=300"
LONG_CACHE = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    media_type: str
    version: str  # first 16 hex digits of the SHA-256 of the body

    @property
    def etag(self) -> str:
        return f'"{self.version}"'

    @classmethod
    def load(cls, name: str, media_type: str) -> Asset:
        """``static/<name>``; a directory is served as its ``*.js`` files joined in name order."""
        body = client_script_source() if name == SCRIPT_DIR else (STATIC / name).read_bytes()
        return cls(body=body, gzipped=gzip.compress(body, compresslevel=9, mtime=0),
                   media_type=media_type, version=hashlib.sha256(body).hexdigest()[:16])


def client_script_source() -> bytes:
    """The bytes of ``/walletpay.js``: ``static/walletpay/*.js`` concatenated in name order."""
    parts = sorted((STATIC / SCRIPT_DIR).glob("*.js"))
    return b"".join(part.read_bytes() for part in parts)


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().lower()
            return not (q.startswith("q=") and q[2:].strip() in ("0", "0.0", "0.00", "0.000"))
    return False


def serve_asset(asset: Asset, request: Request, *, cors: bool = False) -> Response:
    """``asset`` for this GET/HEAD ``request`` (304 when the client's copy is current)."""
    versioned = request.query_params.get("v") == asset.version
    headers = {"ETag": asset.etag, "Vary": "Accept-Encoding",
               "Cache-Control": LONG_CACHE if versioned else SHORT_CACHE,
               "X-Content-Type-Options": "nosniff"}
    if cors:  # a script tag on any merchant origin may load it
        headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    tags = [t.strip() for t in request.headers.get("if-none-match", "").split(",")]
    if asset.etag in tags or f"W/{asset.etag}" in tags or "*" in tags:
        return Response(status_code=304, headers=headers)
    body = asset.body
    if _accepts_gzip(request.headers.get("accept-encoding", "")):
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    headers["Content-Length"] = str(len(body))
    if request.method == "HEAD":
        return Response(status_code=200, headers=headers, media_type=asset.media_type)
    return Response(body, headers=headers, media_type=asset.media_type)


# -- the gateway's side ------------------------------------------------------------------


_read = partial(read_model, where="request body")  # a route's one reading of its body


def _scope(request: Request, *names: str) -> dict[str, str]:
    """The route's required query parameters."""
    return read_query(request.scope["query_string"], names, names)


def _extract_token(payment_data: dict[str, Any] | str) -> Any:
    """The wallet's token inside ``paymentData`` (the wallet's own document, read as given)."""
    if isinstance(payment_data, str) or get_folded(payment_data, "protocolVersion") is not None:
        return payment_data
    pmd = get_folded(payment_data, "paymentMethodData")
    token = get_folded(get_folded(pmd, "tokenizationData"), "token")
    if token is None:
        raise SandboxError(400, "paymentData.paymentMethodData.tokenizationData.token: is "
                           "required")
    return token


def issue_keys(st: WalletPayState, merchant_id: str, store_id: str) -> dict[str, Any]:
    ctx = st.ctx
    now = ctx.now()
    expires = now + API_KEY_TTL
    api_key = "pk_" + secrets.token_urlsafe(24)
    key_id = "ek_" + secrets.token_hex(8)
    private = crypto.new_private_key()
    with ctx.store.atomic():  # the API key and its encryption key are stored together
        ctx.store.add_walletpay_key(key_id=key_id, private_pem=crypto.private_key_pem(private),
                                    merchant_id=merchant_id, store_id=store_id, now=now)
        ctx.store.issue_api_key(key=api_key, merchant_id=merchant_id, store_id=store_id,
                                expires_at=expires, now=now, encryptionKeyId=key_id)
    return {"apiKey": api_key, "encryptionKey": crypto.public_key_b64(private),
            "encryptionKeyId": key_id, "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}


async def public_keys(st: WalletPayState, request: Request) -> Any:
    """Public key service: a fresh API key and encryption key (Basic userId:secret)."""
    auth.require_service_secret(st.ctx, request)
    body = await _read(request, PublicKeysBody)
    return issue_keys(st, body.merchant_id, body.store_id)


async def key_check(st: WalletPayState, request: Request) -> Any:
    """Key pre-check of the client script: is the PublicApiKey usable for merchant/store?"""
    # answers what the payment would: 401 for an unknown or expired key or one without an
    # encryption key, 403 for a key of another merchant or store
    cred = auth.authenticate(st.ctx, request)  # 401 first, before the query is read
    q = _scope(request, "merchantId", "storeId")
    auth.require_scope(cred, q["merchantId"], q["storeId"])
    st.key_for_api_key(cred.key)
    return {"merchantId": q["merchantId"], "storeId": q["storeId"], "status": "valid"}


def _open_payment_data(st: WalletPayState, token: Any, pair: KeyPair,
                       merchant_id: str) -> Any:
    """The verified, decrypted token's ``paymentMethodDetails``, made for ``merchant_id``."""
    try:
        payload = crypto.open_token(token, pair.private, st.signer.root.public_key(),
                                    st.claim_message_id, now=st.now_ms())
    except TokenError as exc:
        raise ApiError(f"PaymentData{exc.reason.title().replace('_', '')}",
                       f"paymentData: {exc.message}") from None
    if payload.get("gatewayMerchantId") != merchant_id:
        raise ApiError("PaymentDataMerchantMismatch",
                       "paymentData: gatewayMerchantId does not match merchantId")
    return payload["paymentMethodDetails"]


async def payment_accounts(st: WalletPayState, request: Request) -> Any:
    """Create Payment Account: verify + decrypt the wallet token, return the account id."""
    cred = auth.authenticate(st.ctx, request)  # 401 first, before the body is read
    body = await _read(request, PaymentAccountBody)
    auth.require_scope(cred, body.merchant_id, body.store_id)
    token = _extract_token(body.payment_data)
    pair = st.key_for_api_key(cred.key)
    details = _open_payment_data(st, token, pair, body.merchant_id)
    now = st.ctx.now()
    account = _new_account(details, body, pair.key_id, now)
    st.ctx.store.add_walletpay_account(
        account_id=account.id, merchant_id=account.merchant_id, store_id=account.store_id,
        key_id=pair.key_id, data=account.data(), now=now)
    out = {k: v for k, v in account.public().items()
           if k in ("transactionAccountId", "cardType", "cardNetwork", "maskedCardNumber",
                    "expiryMonth", "expiryYear")}
    if account.card_type == "Token":
        out.update(cryptogram=account.cryptogram, eciIndicator=account.eci)
    return out


def _new_account(details: Any, body: PaymentAccountBody, key_id: str,
                 now: datetime) -> Account:
    """The payment account a decrypted credential describes (400 / 422 when it cannot be)."""
    pan = details.get("pan")
    try:
        month = int(details.get("expirationMonth"))
        year = int(details.get("expirationYear"))
    except (TypeError, ValueError):
        raise ApiError("PaymentDataMalformed",
                       "paymentData: expirationMonth/expirationYear are required") from None
    if not isinstance(pan, str) or not pan.isdigit() or not 12 <= len(pan) <= 19:
        raise ApiError("PaymentDataMalformed", "paymentData: pan must be 12-19 digits")
    if not 1 <= month <= 12 or (year, month) < (now.year, now.month):
        raise ApiError("CardExpired", "paymentData: the card has expired")
    cryptogram, eci = None, None
    if details["authMethod"] == "CRYPTOGRAM_3DS":
        cryptogram, eci = details.get("cryptogram"), details.get("eciIndicator")
        if not isinstance(cryptogram, str) or not cryptogram:
            raise ApiError("PaymentDataMalformed",
                           "paymentData: a CRYPTOGRAM_3DS credential needs a cryptogram")
    return Account(
        id=_account_id(), merchant_id=body.merchant_id, store_id=body.store_id,
        key_id=key_id, card_type="Card" if cryptogram is None else "Token",
        network=card_network(pan), pan=pan, expiry_month=month, expiry_year=year,
        reference=body.client_system_transaction_id, cryptogram=cryptogram,
        eci=str(eci) if eci is not None else None,
        decline=pan in {c.pan for c in TEST_CARDS if c.decline},
    )


def get_account(st: WalletPayState, account_id: str, merchant_id: str, store_id: str,
                key_id: str | None) -> Account:
    row = st.ctx.store.walletpay_account(account_id)
    account = Account.from_row(row) if row is not None else None
    if account is None or account.merchant_id != merchant_id or account.store_id != store_id:
        raise ApiError("PaymentAccountNotFound",
                       f"transactionAccountId: {account_id} is not known for this merchant/store")
    if key_id is not None and key_id != account.key_id:
        raise ApiError("EncryptionKeyMismatch",
                       "encryptionKeyId: does not match the key the payment account was made with")
    return account


async def payment_account(st: WalletPayState, request: Request) -> Any:
    """Get Payment Account (masked)."""
    cred = auth.authenticate(st.ctx, request)  # 401 first, before the query is read
    q = _scope(request, "merchantId", "storeId", "encryptionKeyId")
    auth.require_scope(cred, q["merchantId"], q["storeId"])
    return get_account(st, request.path_params["account_id"], q["merchantId"], q["storeId"],
                       q["encryptionKeyId"]).public()


def _check_cryptogram(req: AuthorizationRequest, account: Account) -> None:
    """A Token account pays with its own cryptogram and ECI, once."""
    if not req.cryptogram or not req.eci_indicator:
        raise SandboxError(400, "cryptogram: and eciIndicator are required for a Token "
                           "(CRYPTOGRAM_3DS) payment account")
    if not auth.same_text(req.cryptogram, account.cryptogram or "") or \
            req.eci_indicator != account.eci:
        raise ApiError("CryptogramMismatch",
                       "cryptogram: does not match the payment account (or wrong ECI)")
    if account.cryptogram_used:
        raise ApiError("CryptogramUsed", "cryptogram: was already used by an "
                                         "authorization (get a new wallet token)")


def _three_ds_result_for(st: WalletPayState, req: AuthorizationRequest,
                         account: Account) -> WalletPayRow:
    """A Card account pays once, with an unused 3DS result made for it (and, when the result
    is bound, for this amount, currency and reference)."""
    given = req.three_d_secure
    if given is None:
        raise ApiError("ThreeDSecureRequired", "threeDSecure: is required for a Card "
                                               "(PAN_ONLY) payment account")
    found = st.ctx.store.three_ds(given.three_ds_server_trans_id)
    # a hosted challenge's own row has no authenticationValue: it never matches
    if found is None or found.parent_id != account.id or not auth.same_text(
            found.data.get("authenticationValue", ""), given.authentication_value) or \
            found.data.get("eci") != given.eci:
        raise ApiError("ThreeDSecureInvalid",
                       "threeDSecure: does not match a 3DS result for this payment account")
    if found.used:
        raise ApiError("ThreeDSecureUsed", "threeDSecure: was already used")
    if account.cryptogram_used:  # the used flag of a Card account: authorized once
        raise ApiError("PaymentAccountUsed", "transactionAccountId: a Card (PAN_ONLY) "
                       "payment account is authorized once, for the amount the payer "
                       "approved")
    amount, currency = found.data.get("amount"), found.data.get("currencyCode")
    if amount is not None and (Decimal(amount) != req.amount or currency != req.currency_code):
        raise ApiError("ThreeDSecureInvalid", f"threeDSecure: the payer approved {amount} "
                       f"{currency}, not {req.amount} {req.currency_code}")
    reference = found.data.get("reference")
    if reference is not None and reference != req.client_system_transaction_id:
        raise ApiError("ThreeDSecureInvalid", "threeDSecure: was made for another "
                       "clientSystemTransactionId")
    return found


def _authorize_account(st: WalletPayState, req: AuthorizationRequest,
                       account: Account) -> TxRow:
    """The checks and the ledger record of :func:`authorize` (inside its store transaction)."""
    ctx = st.ctx
    three_ds: WalletPayRow | None = None
    if account.card_type == "Token":
        _check_cryptogram(req, account)
    else:
        three_ds = _three_ds_result_for(st, req, account)
    kind = "sale" if req.type == "ecom.sale" else "preauth"
    if three_ds is not None and three_ds.data["transStatus"] != "Y":
        state, provider_code = "Declined", "AuthenticationFailed"
    elif account.decline:
        state, provider_code = "Declined", "DeclinedByIssuer"
    else:
        state, provider_code = "Approved", approved_code(kind)
    try:
        row = ctx.store.create_transaction(
            merchant_id=req.merchant_id, store_id=req.store_id,
            reference=req.client_system_transaction_id, kind=kind, type_str=req.type,
            amount=req.amount, currency=req.currency_code, state=state, method=WALLETPAY_METHOD,
            now=ctx.now(), provider_state_code=provider_code,
            payer={"apmPayerAccountNumber": mask_pan(account.pan),
                   "apmProviderTransactionId": account.id},
        )
    except DuplicateReferenceError:
        raise ApiError("DuplicateReference", f"clientSystemTransactionId: "
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


async def transactions(st: WalletPayState, request: Request) -> Any:
    """Authorization (ecom.sale / ecom.preauthorization) on a payment account."""
    # the merchant server's step: the page's transaction key moves no money
    auth.require_server(st.ctx, request, "POST /api/v5/transactions")
    return authorize(st, await _read(request, AuthorizationBody))


# -- the emulated wallet provider ------------------------------------------------------------


async def wallet_cards(st: WalletPayState, request: Request) -> Any:
    """The emulated wallet's test cards (sandbox only)."""
    return {"cards": [c.public() for c in TEST_CARDS]}


async def driver_token(st: WalletPayState, request: Request) -> Any:
    """A one-time token for the browser-test driver (admin; a test process asks, no page can)."""
    return {"token": st.driver_tokens.issue(), "expiresInSeconds": DRIVER_TOKEN_TTL}


async def redeem_driver_token(st: WalletPayState, request: Request) -> Any:
    """The payment sheet redeems the driver's one-time token before it obeys a command."""
    body = await _read(request, DriverTokenBody)
    if not st.driver_tokens.redeem(body.token):
        raise SandboxError(403, "token: is not a live one-time test token (each token from "
                           "POST /_sandbox/testing/token drives one page once, for "
                           f"{DRIVER_TOKEN_TTL} s)")
    return {"redeemed": True}


async def wallet_token(st: WalletPayState, request: Request) -> Any:
    """Emulated wallet provider: mint a signed, encrypted ECv2-shaped token."""
    body = await _read(request, WalletTokenBody)
    card = CARDS_BY_ID.get(body.card_id)
    if card is None:
        raise SandboxError(400, f"cardId: must be one of {', '.join(CARDS_BY_ID)}")
    enc = body.encryption_key
    if enc:
        try:
            recipient = crypto.load_public_key(enc, "encryptionKey")
        except TokenError as exc:
            raise SandboxError(400, exc.message) from None
    else:
        key = body.public_key_api
        if not key or not key.strip():
            raise SandboxError(400, "publicKeyApi: is required (non-empty string) unless "
                               "encryptionKey is given")
        if key != st.ctx.config.api_key and st.ctx.store.api_key_info(key) is None:
            raise SandboxError(401, "publicKeyApi: is not a key issued by the gateway")
        recipient = st.key_for_api_key(key).private.public_key()
    seconds = TOKEN_TTL_SECONDS if body.message_expiry_seconds is None \
        else body.message_expiry_seconds
    details: dict[str, Any] = {"authMethod": card.auth_method, "pan": card.pan,
                               "expirationMonth": card.expiry_month,
                               "expirationYear": card.expiry_year}
    if card.auth_method == "CRYPTOGRAM_3DS":
        details["cryptogram"] = base64.b64encode(os.urandom(20)).decode()
        details["eciIndicator"] = card.eci
    payload = {"gatewayMerchantId": body.gateway_merchant_id,
               "messageId": crypto.new_message_id(),
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


async def wallet_root_key(st: WalletPayState, request: Request) -> Any:
    """The wallet root public key the gateway trusts (base64 SPKI)."""
    return {"rootKey": crypto.public_key_b64(st.signer.root), "protocolVersion": "ECv2"}


# -- 3-D Secure: the simulated step and the hosted challenge (pages.challenge_page) ---------


def _card_account(st: WalletPayState, account_id: str, merchant_id: str,
                  store_id: str) -> Account:
    account = get_account(st, account_id, merchant_id, store_id, None)
    if account.card_type != "Card":
        raise ApiError("ThreeDSecureNotNeeded",
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


async def three_ds_challenge(st: WalletPayState, request: Request) -> Any:
    """Simulated 3DS challenge for a Card (PAN_ONLY) payment account."""
    # admin: a 3DS result without a shopper
    body = await _read(request, ChallengeBody)
    account = _card_account(st, body.transaction_account_id, body.merchant_id, body.store_id)
    binding: dict[str, Any] = {}
    if body.amount is not None or body.currency_code is not None:
        if body.amount is None or body.currency_code is None:
            raise SandboxError(400, "amount: and currencyCode are given together")
        binding.update(amount=str(body.amount), currencyCode=body.currency_code)
    if body.client_system_transaction_id is not None:
        binding["reference"] = body.client_system_transaction_id
    return _three_ds_result(st, account, body.outcome == "success", secrets.token_hex(16),
                            binding)


async def three_ds_create(st: WalletPayState, request: Request) -> Any:
    """A hosted 3DS challenge for one Card account, amount and reference (server key)."""
    auth.require_server(st.ctx, request, "POST /api/v5/threeDSecure")
    body = await _read(request, ChallengeRequestBody)
    account = _card_account(st, body.transaction_account_id, body.merchant_id, body.store_id)
    if account.cryptogram_used:
        raise ApiError("PaymentAccountUsed",
                       "transactionAccountId: this Card payment account was already authorized")
    now = st.ctx.now()
    challenge_id = CHALLENGE_PREFIX + secrets.token_hex(16)
    expires = now + CHALLENGE_TTL
    st.ctx.store.add_three_ds(trans_id=challenge_id, account_id=account.id, data={
        "challenge": True, "amount": str(body.amount), "currencyCode": body.currency_code,
        "reference": body.client_system_transaction_id, "returnUrl": body.return_url,
        "merchantName": body.merchant_name, "expiresAt": expires.timestamp()}, now=now)
    return {"challengeId": challenge_id,
            "challengeUrl": f"{st.ctx.base_url(request)}/pay/3ds/{challenge_id}",
            "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}


def _find_challenge(st: WalletPayState, challenge_id: str) -> tuple[WalletPayRow, Account]:
    """The challenge and its account; 404 when unknown."""
    row = st.ctx.store.three_ds(challenge_id)
    account_row = st.ctx.store.walletpay_account(row.parent_id) if row is not None else None
    if row is None or account_row is None or not row.data.get("challenge"):
        raise ApiError("ThreeDSecureChallengeNotFound", "challengeId: no such 3DS challenge")
    return row, Account.from_row(account_row)


def _expired(st: WalletPayState, row: WalletPayRow) -> bool:
    return st.ctx.now().timestamp() >= float(row.data["expiresAt"])


async def three_ds_status(st: WalletPayState, request: Request) -> Any:
    """A hosted 3DS challenge: pending, expired, or its result (server key)."""
    auth.require_server(st.ctx, request, "GET /api/v5/threeDSecure/{id}")
    q = _scope(request, "merchantId", "storeId")
    challenge_id = request.path_params["challenge_id"]
    row, account = _find_challenge(st, challenge_id)
    if account.merchant_id != q["merchantId"] or account.store_id != q["storeId"]:
        raise ApiError("ThreeDSecureChallengeNotFound",
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
    elif _expired(st, row):
        out["status"] = "expired"
    return out


async def three_ds_page(st: WalletPayState, request: Request) -> Any:
    """The shopper's 3DS challenge (HTML)."""
    challenge_id = request.path_params["challenge_id"]
    try:
        row, account = _find_challenge(st, challenge_id)
    except ApiError:
        return pages.message_page("Not found", "There is no such 3-D Secure check.", 404)
    if row.used:
        return pages.message_page("Already answered", "This 3-D Secure check was already "
                                  "answered.", 409)
    if _expired(st, row):
        return pages.message_page("Expired", "This 3-D Secure check has expired: return to "
                                  "the shop.", 410)
    return HTMLResponse(pages.challenge_page(challenge_id, account.public(), row.data))


async def three_ds_answer(st: WalletPayState, request: Request) -> Any:
    """The shopper's answer (form field answer = pass | fail) -> 303 to the shop."""
    answers = await form_values(request, "answer")
    if len(answers) != 1 or answers[0] not in ("pass", "fail"):
        return pages.message_page("Bad request", "answer: must be pass or fail, once", 400)
    challenge_id = request.path_params["challenge_id"]
    try:  # once: 404 unknown, 410 expired, 409 already answered
        with st.ctx.store.atomic():
            row, account = _find_challenge(st, challenge_id)
            if _expired(st, row):
                raise ApiError("ThreeDSecureChallengeExpired",
                               "challengeId: the challenge has expired")
            if not st.ctx.store.mark_walletpay_used("three_ds", challenge_id):
                raise ApiError("ThreeDSecureChallengeUsed",
                               "challengeId: the challenge was already answered")
            binding = {k: row.data[k] for k in ("amount", "currencyCode", "reference")}
            _three_ds_result(st, account, answers[0] == "pass",
                             challenge_id.removeprefix(CHALLENGE_PREFIX), binding)
    except ApiError as exc:
        return pages.message_page("Not possible", exc.message, exc.status)
    back = row.data.get("returnUrl")
    if not back:
        return pages.message_page("Done", "The 3-D Secure check is answered: return to the "
                                  "shop.")
    sep = "&" if urllib.parse.urlsplit(str(back)).query else "?"
    return RedirectResponse(f"{back}{sep}challengeId={challenge_id}", status_code=303)


# -- the demo merchant's server: an order with its keys; the price of the payer's choices,
# remembered, so exactly the approved total is authorized; the result (account, then the
# authorization, once per order); the last results, never a cryptogram ---------------------

_SESSION_PARAMS = ("merchantId", "storeId", "ref", "currency", "amount", "type", "authorize",
                   "scenario")


async def demo_session_route(st: WalletPayState, request: Request) -> Any:
    q = read_query(request.scope["query_string"], _SESSION_PARAMS)
    for name, fixed in (("merchantId", DEMO_MERCHANT), ("storeId", DEMO_STORE)):
        if q.get(name) not in (None, "", fixed):
            raise SandboxError(400, f"{name}: the demo merchant is {fixed} only (use the "
                               "public key service for others)")
    reference = q.get("ref") or "demo-" + secrets.token_hex(6)
    try:
        check_reference(reference)
    except ValueError as exc:
        raise SandboxError(400, f"ref: {exc}") from None
    currency = (q.get("currency") or "EUR").upper()
    try:
        check_currency(currency)
        amount = parse_major(q.get("amount") or "12.34", currency)
        if amount <= 0:
            raise ValueError("must be greater than zero")
    except ValueError as exc:
        raise SandboxError(400, f"amount/currency: {exc}") from None
    with st.lock:
        if reference in st.demo_sessions:
            raise ApiError("DemoOrderExists", f"ref: order {reference} already exists")
    keys = issue_keys(st, DEMO_MERCHANT, DEMO_STORE)
    session = DemoSession(
        reference=reference, api_key=keys["apiKey"], key_id=keys["encryptionKeyId"],
        kind="preauth" if q.get("type") == "preauth" else "sale",
        amount=amount, currency=currency,
        authorize=q.get("authorize", "1") not in ("0", "false", "no"),
        shipping="standard" if q.get("scenario") == "full" else None,
    )
    with st.lock:
        st.demo_sessions[reference] = session
        while len(st.demo_sessions) > DEMO_SESSIONS_MAX:
            st.demo_sessions.pop(next(iter(st.demo_sessions)))
    return {"merchantId": DEMO_MERCHANT, "storeId": DEMO_STORE,
            "clientSystemTransactionId": reference, "publicKeyApi": session.api_key,
            "amount": f"{session.amount:.2f}", "currencyCode": session.currency,
            "type": session.kind, "authorize": session.authorize, "quote": session.quote()}


async def demo_quote_route(st: WalletPayState, request: Request) -> Any:
    # the shop's price for the payer's current choices; remembered on the order
    body = await _read(request, DemoQuoteBody)
    session = st.demo_sessions.get(body.reference)
    if session is None:
        raise ApiError("DemoOrderNotFound", "reference: no such demo order (reload the page)")
    error: dict[str, str] | None = None
    option, address, code = body.shipping_option_id, body.shipping_address, body.offer_code
    with st.lock:
        if session.paid:
            raise ApiError("DemoOrderPaid", "reference: this order is already paid")
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


async def demo_result_route(st: WalletPayState, request: Request) -> Any:
    body = await _read(request, DemoResultBody)
    detail = body.detail
    record: dict[str, Any] = {"detail": detail.redacted()}
    reference = detail.client_system_transaction_id or body.reference
    session = st.demo_sessions.get(reference) if reference else None
    account_id = detail.transaction_account_id
    if session is None or not account_id:
        record["outcome"] = "error" if detail.code else "unknown-session"
        return _record(st, record)
    record.update(encryptionKeyId=session.key_id, merchantId=DEMO_MERCHANT, storeId=DEMO_STORE)
    # the cryptogram is kept for the authorization only, never listed
    record["stored"] = {"cryptogram": detail.cryptogram is not None,
                        "eciIndicator": detail.eci_indicator}
    with st.lock:
        if session.paid:
            raise ApiError("DemoOrderPaid", f"reference: order {session.reference} "
                                            "is already paid")
        total = session.total()
        approved = body.approved_total
        if session.authorize:
            session.paid = True
    try:
        account = get_account(st, account_id, DEMO_MERCHANT, DEMO_STORE, session.key_id)
    except ApiError as exc:
        record.update(outcome="account-error", account=exc.body)
        return _record(st, record)
    record["account"] = account.public()
    if not session.authorize:
        record["outcome"] = "account"
        return _record(st, record)
    record["amount"] = f"{total:.2f}"
    if approved is not None and str(approved) != f"{total:.2f}":
        record["outcome"] = "amount-mismatch"  # the page showed another total: do not charge
        with st.lock:
            session.paid = False
        return _record(st, record)
    record["transaction"], record["outcome"] = _charge(st, session, account, detail, total)
    if record["outcome"] == "authorization-error":
        with st.lock:
            session.paid = False  # nothing was charged: the payer may try again
    return _record(st, record)


def _charge(st: WalletPayState, session: DemoSession, account: Account, detail: EventDetail,
            total: Decimal) -> tuple[Any, str]:
    try:
        three_ds = None
        if account.card_type == "Card":
            # the demo's shopper always passes 3DS, for exactly the order's total
            three = _three_ds_result(st, account, True, secrets.token_hex(16), {
                "amount": str(total), "currencyCode": session.currency,
                "reference": session.reference})
            three_ds = ThreeDSecureBody(three_ds_server_trans_id=three["threeDSServerTransId"],
                                        authentication_value=three["authenticationValue"],
                                        eci=three["eci"])
        req = AuthorizationBody(
            merchant_id=DEMO_MERCHANT, store_id=DEMO_STORE, user_id=DEMO_USER,
            type="ecom.sale" if session.kind == "sale" else "ecom.preauthorization",
            amount=total, currency_code=session.currency,
            client_system_transaction_id=session.reference, transaction_account_id=account.id,
            encryption_key_id=session.key_id,
            cryptogram=detail.cryptogram if three_ds is None else None,
            eci_indicator=detail.eci_indicator if three_ds is None else None,
            three_d_secure=three_ds)
        result = authorize(st, req)
    except ValidationError:  # a demo order the gateway's rules refuse: nothing charged
        return error_body(400, "the demo order is not a valid authorization"), \
            "authorization-error"
    except SandboxError as exc:
        return exc.body, "authorization-error"
    return result, str(result.get("state"))


async def demo_results(st: WalletPayState, request: Request) -> Any:
    with st.lock:
        return {"results": list(st.demo_results)}


# -- the routes ----------------------------------------------------------------------------------

Route = Any  # async (WalletPayState, Request) -> a dict answered as JSON, or a Response


def _file(route_name: str, name: str, media_type: str, doc: str | None = None, *,
          cors: bool = False) -> Route:
    """A route serving ``static/<name>`` (GET/HEAD); ``cors``: any origin may load it."""
    asset = Asset.load(name, media_type)

    async def route(st: WalletPayState, request: Request) -> Response:
        return serve_asset(asset, request, cors=cors)

    route.__name__, route.__doc__ = route_name, doc
    return route


def _endpoint(st: WalletPayState, handler: Route) -> Route:
    """``handler`` as a FastAPI endpoint: a dict it returns is answered as JSON."""
    async def endpoint(request: Request) -> Response:
        result = await handler(st, request)
        return result if isinstance(result, Response) else JSONResponse(result)

    endpoint.__name__, endpoint.__doc__ = handler.__name__, handler.__doc__
    return endpoint


def install(app: FastAPI, ctx: SandboxContext) -> None:
    """Add the browser-wallet routes, the client script and the demo merchant to ``app``."""
    st = WalletPayState(ctx)
    app.state.walletpay = st
    js = "application/javascript; charset=utf-8"
    # every route is in /openapi.json (walletctl.sandbox.openapi adds the bodies, queries and
    # non-JSON answers FastAPI cannot see)
    routes: list[tuple[str, str | tuple[str, ...], Route]] = [
        ("/api/v5/publicKeys", "POST", public_keys),
        ("/api/v5/publicKeys/current", "GET", key_check),
        ("/api/v5/paymentAccounts", "POST", payment_accounts),
        ("/api/v5/paymentAccounts/{account_id}", "GET", payment_account),
        ("/api/v5/transactions", "POST", transactions),
        ("/api/v5/threeDSecure", "POST", three_ds_create),
        ("/api/v5/threeDSecure/{challenge_id}", "GET", three_ds_status),
        ("/pay/3ds/{challenge_id}", ("GET", "HEAD"), three_ds_page),
        ("/pay/3ds/{challenge_id}", "POST", three_ds_answer),
        ("/wallet/cards", "GET", wallet_cards),
        ("/wallet/token", "POST", wallet_token),
        ("/wallet/testing/redeem", "POST", redeem_driver_token),
        ("/_sandbox/testing/token", "POST", driver_token),
        ("/_sandbox/wallet/cards", "GET", wallet_cards),
        ("/_sandbox/wallet/token", "POST", wallet_token),
        ("/_sandbox/wallet/rootKey", "GET", wallet_root_key),
        ("/_sandbox/3ds/challenge", "POST", three_ds_challenge),
        ("/walletpay.js", ("GET", "HEAD"), _file(
            "client_script", SCRIPT_DIR, js,
            "The client script (GET/HEAD; ETag, gzip; any origin may load it).", cors=True)),
        ("/walletpay.d.ts", ("GET", "HEAD"), _file(
            "client_types", "walletpay.d.ts", "application/typescript; charset=utf-8",
            "TypeScript declaration of the client script (GET/HEAD; ETag, gzip).", cors=True)),
        ("/walletpay-testing.js", ("GET", "HEAD"), _file(
            "test_driver", "walletpay-testing.js", js, "The browser-test driver "
            "(WalletPayTesting; GET/HEAD; any origin may load it).", cors=True)),
        ("/demo/merchant", ("GET", "HEAD"), _file("demo_page", "demo_merchant.html",
                                                  "text/html; charset=utf-8")),
        ("/demo/merchant.js", ("GET", "HEAD"), _file("demo_script", "demo_merchant.js", js)),
        ("/demo/merchant/api/session", "GET", demo_session_route),
        ("/demo/merchant/api/quote", "POST", demo_quote_route),
        ("/demo/merchant/api/result", "POST", demo_result_route),
        ("/demo/merchant/api/results", "GET", demo_results),
    ]
    for path, method, handler in routes:
        for verb in [method] if isinstance(method, str) else method:
            # one operation per verb, each named by openapi.OPERATION_IDS
            app.add_api_route(path, _endpoint(st, handler), methods=[verb],
                              tags=["sandbox" if path.startswith("/_sandbox")
                                    else "browser wallet"],
                              summary=(handler.__doc__ or "").strip().split("\n")[0] or None)


def _account_id() -> str:
    """A transaction account's id: random hex that never holds 13 digits in a row, which every
    masking of walletctl's output would take for a card number (the id is shown in full)."""
    while True:
        tail = secrets.token_hex(10)
        if not any(tail[i:i + 13].isdigit() for i in range(len(tail) - 12)):
            return "ta_" + tail
