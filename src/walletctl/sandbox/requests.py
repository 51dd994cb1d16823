"""One request model per JSON route of the sandbox: every body is read once, through these.

A route reads its bytes with :func:`walletctl.sandbox.wire.read_body` (strict JSON, strict
amounts, no lone surrogates) and validates the result with its model here; every later check
(credentials, merchant/store scope, expiry, amounts) uses the model, never the raw dict.

Keys: the wire names of the parameter tables in any letter case, plus the samples' documented
variants (``apmProviderName``, ``shoppingCardDetails``); never the Python field names
(``merchant_id`` is an unknown key), and one field under two spellings is refused naming it
(see :class:`walletctl.models.base.WireModel`). Unknown keys: refused on the gateway's
requests (usually typos); dropped on the emulated wallet and the demo merchant's bodies, whose
senders are browsers (``event.detail`` keeps only its documented fields).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from walletctl.models.base import WireModel
from walletctl.models.checkout import CheckoutDetails, CheckoutRequest, Provider, RedirectDetails
from walletctl.models.fields import NOT_BLANK_PATTERN, Reference, Url
from walletctl.models.followup import ApmRequestDetails, FollowUpRequest
from walletctl.models.walletpay import AuthorizationRequest
from walletctl.models.walletpay import ThreeDSecure as _ThreeDSecure

# merchantId / storeId of the browser-wallet routes and other short identifiers
# not blank: Python's whitespace spelt out (``\S`` means another set to each regex engine:
# ECMAScript's leaves U+0085 in), so the server and every reader of the document agree
Id = Annotated[str, Field(min_length=1, max_length=128, pattern=NOT_BLANK_PATTERN)]
Short = Annotated[str, Field(max_length=256)]


# -- gateway: redirect wallet ------------------------------------------------------------------


class CheckoutDetailsBody(CheckoutDetails):
    payment_method: Provider  # mandatory on the wire (spec 2.1); walletctl fills it in


class RedirectDetailsBody(RedirectDetails):
    cancel_url: Url  # mandatory on the wire (spec 2.1: "the same value as errorUrl")
    refused_url: Url


class CheckoutBody(CheckoutRequest):
    """``POST /api/v5/checkout`` (spec 2.1)."""

    checkout_details: CheckoutDetailsBody
    redirect_details: RedirectDetailsBody


class ApmDetailsBody(ApmRequestDetails):
    apm_provider: Provider  # mandatory on the wire (spec 2.3)


class FollowUpBody(FollowUpRequest):
    """``POST /api/v5/apmTransactions`` (spec 2.3)."""

    apm_details: ApmDetailsBody


# -- gateway: browser wallet -------------------------------------------------------------------


class PublicKeysBody(WireModel):
    """``POST /api/v5/publicKeys``."""

    merchant_id: Id
    store_id: Id


class PaymentAccountBody(WireModel):
    """``POST /api/v5/paymentAccounts`` (sent by walletpay.js). ``paymentData``: the wallet's
    PaymentData object, the token object itself, or the token as a JSON string."""

    merchant_id: Id
    store_id: Id
    client_system_transaction_id: Reference
    payment_data: dict[str, Any] | Annotated[str, Field(min_length=1, max_length=100_000)]


class ChallengeRequestBody(WireModel):
    """``POST /api/v5/threeDSecure`` (server key): a hosted 3DS challenge for one payment
    account, amount and reference; ``returnUrl`` is where the shopper's browser goes after it."""

    merchant_id: Id
    store_id: Id
    transaction_account_id: Id
    amount: Decimal
    currency_code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    client_system_transaction_id: Reference
    return_url: Url | None = None


class ThreeDSecureBody(_ThreeDSecure):
    three_ds_server_trans_id: Short = Field(min_length=1, alias="threeDSServerTransId")
    authentication_value: Short = Field(min_length=1)


class AuthorizationBody(AuthorizationRequest):
    """``POST /api/v5/transactions``."""

    merchant_id: Id
    store_id: Id
    user_id: Id
    client_system_transaction_id: Reference
    transaction_account_id: Id
    encryption_key_id: Id | None = None
    cryptogram: Short | None = None
    eci_indicator: Short | None = None
    three_d_secure: ThreeDSecureBody | None = Field(default=None, alias="threeDSecure")


# -- emulated wallet provider and 3DS step -----------------------------------------------------


class _Lenient(WireModel):
    """A body from a browser script: unknown keys are dropped, not refused."""

    model_config = ConfigDict(extra="ignore")


class WalletTokenBody(_Lenient):
    """``POST /wallet/token``: mint a token for ``publicKeyApi`` or ``encryptionKey``."""

    card_id: Id
    gateway: Short | None = None
    gateway_merchant_id: Id
    public_key_api: Short | None = None
    encryption_key: Annotated[str, Field(max_length=4096)] | None = None
    message_expiry_seconds: Annotated[int, Field(ge=-86_400, le=86_400)] | None = None


class ChallengeBody(_Lenient):
    """``POST /_sandbox/3ds/challenge``."""

    transaction_account_id: Id
    merchant_id: Id
    store_id: Id
    outcome: Literal["success", "failure"] = "success"
    # optional binding (the hosted challenge always binds all three)
    amount: Decimal | None = None
    currency_code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] | None = None
    client_system_transaction_id: Reference | None = None


# -- demo merchant -----------------------------------------------------------------------------


class DemoAddress(_Lenient):
    """A wallet address as the demo keeps it (strings only; anything else is dropped)."""

    name: Short | None = None
    postal_code: Short | None = None
    country_code: Short | None = None
    phone_number: Short | None = None
    address1: Short | None = None
    address2: Short | None = None
    address3: Short | None = None
    locality: Short | None = None
    administrative_area: Short | None = None
    sorting_code: Short | None = None


class DemoQuoteBody(_Lenient):
    """``POST /demo/merchant/api/quote``: the payer's current choices."""

    reference: Short
    shipping_option_id: Short | None = None
    offer_code: Short | None = None
    shipping_address: DemoAddress | None = None


class ErrorDetailsBody(_Lenient):
    message: Annotated[str, Field(max_length=2000)] | None = None


class EventDetail(_Lenient):
    """``event.detail`` (spec 2.8): the success object or the gateway error object."""

    client_system_transaction_id: Short | None = None
    transaction_account_id: Short | None = None
    transaction_method: Short | None = None
    cryptogram: Short | None = Field(default=None, repr=False)
    eci_indicator: Short | None = None
    email: Short | None = None
    billing_address: DemoAddress | None = None
    shipping_address: DemoAddress | None = None
    code: Short | None = None
    description: Short | None = None
    details: ErrorDetailsBody | None = None

    # what the demo lists (never the cryptogram)
    SHOWN: ClassVar[tuple[str, ...]] = (
        "clientSystemTransactionId", "transactionAccountId", "transactionMethod",
        "eciIndicator", "email", "billingAddress", "shippingAddress", "code", "description",
        "details")

    def redacted(self) -> dict[str, Any]:
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {k: body[k] for k in self.SHOWN if k in body}


class DemoResultBody(_Lenient):
    """``POST /demo/merchant/api/result``: ``{detail, approvedTotal?, reference?}``."""

    detail: EventDetail
    approved_total: Annotated[str, Field(max_length=64)] | Decimal | None = None
    reference: Short | None = None


CLOCK_MAX_SECONDS = 10 * 366 * 86_400  # ten years, either way, per call and in total


class ClockBody(WireModel):
    """``POST /_sandbox/clock``."""

    advance_seconds: Annotated[Decimal, Field(ge=-CLOCK_MAX_SECONDS, le=CLOCK_MAX_SECONDS,
                                              allow_inf_nan=False)] = Decimal(0)
