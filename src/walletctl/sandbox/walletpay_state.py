"""Browser wallet state of the sandbox: test cards, keys, payment accounts, 3DS results, and
the demo merchant's orders.

See :mod:`walletctl.sandbox.walletpay` for the routes; everything here but the demo merchant
lives in the sandbox store (``walletpay_*`` tables: :mod:`walletctl.sandbox.store`).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from walletctl.sandbox import crypto
from walletctl.sandbox.context import SandboxContext
from walletctl.sandbox.crypto import WalletSigner
from walletctl.sandbox.replies import SandboxError
from walletctl.sandbox.store import WalletPayRow

API_KEY_TTL = timedelta(minutes=30)
TOKEN_TTL_SECONDS = 300
DEFAULT_KEY_ID = "ek_sandbox_default"
# ids of the wallet provider's signing keys in the store's walletpay_keys table
ROOT_KEY_ID = "wallet_root"
INTERMEDIATE_KEY_ID = "wallet_intermediate"
DEMO_USER = "demo-merchant"
DEMO_RESULTS_MAX = 100
# the demo shop's prices (its orders are :class:`DemoSession`)
SHIPPING = {"standard": Decimal("0.00"), "express": Decimal("5.00"),
            "overnight": Decimal("12.50")}
OFFERS = {"SAVE2": Decimal("2.00")}

# Reasons that are plain validation / authentication failures: they take the gateway's
# generic description; any other reason (CryptogramUsed, ...) is the error's description.
_GENERIC = frozenset({"InvalidJson", "MissingField", "InvalidField", "ValidationError",
                      "Unauthorized"})
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
    """A card of the emulated wallet. ``pan`` is the FPAN (PAN_ONLY) or the device token;
    ``funding`` CREDIT, DEBIT or PREPAID (what ``allowCreditCards`` / ``allowPrepaidCards``
    filter in the sheet)."""

    id: str
    label: str
    network: str
    auth_method: str
    pan: str
    expiry_month: int
    expiry_year: int
    eci: str | None = None
    decline: bool = False
    funding: str = "CREDIT"

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
    """A browser-wallet route's error, in the same vocabulary as endpoints 1-3 (code by
    status, e.g. ``TRX-422``; description names the reason, e.g. ``CryptogramUsed``)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(status, message, description=None if reason in _GENERIC else reason)


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
    funding: str = "CREDIT"

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
class DemoSession:
    reference: str
    merchant_id: str
    store_id: str
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
        # the demo merchant's (in memory, bounded; never a cryptogram or a PAN)
        self.demo_results: deque[dict[str, Any]] = deque(maxlen=DEMO_RESULTS_MAX)

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

