"""Browser wallet (WalletPay) resources: keys, payment account, authorization, event.detail.

Shapes follow spec 2.5 (payment account), 2.8 (event.detail) and the settled defaults
(docs/gateway-api.md) for the public key service, Get Payment Account and the authorization.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from walletctl.constants import WALLETPAY_METHOD
from walletctl.errors import RequestValidationError
from walletctl.models.base import ResponseModel, WireModel, fold_key
from walletctl.models.fields import Reference
from walletctl.models.money import check_currency

AuthorizationType = Literal["ecom.sale", "ecom.preauthorization"]
AUTH_TYPES: dict[str, AuthorizationType] = {
    "sale": "ecom.sale",
    "preauth": "ecom.preauthorization",
    "ecom.sale": "ecom.sale",
    "ecom.preauthorization": "ecom.preauthorization",
}
CardType = Literal["Card", "Token"]


class PublicKeys(ResponseModel):
    """The public key service's answer. Both keys are secrets: never printed unmasked."""

    api_key: SecretStr
    encryption_key: SecretStr
    encryption_key_id: str = Field(min_length=1)
    expires_at: str | None = None


class PaymentAccount(ResponseModel):
    """Get Payment Account record (spec 2.5: ``cardType`` Card = PAN_ONLY, Token = 3DS)."""

    transaction_account_id: str
    card_type: CardType
    card_network: str | None = None
    masked_card_number: str | None = None
    expiry_month: int | None = None
    expiry_year: int | None = None


class ThreeDSecure(WireModel):
    """Result of the (sandbox-simulated) 3DS step, required for a ``Card`` account."""

    three_ds_server_trans_id: str = Field(min_length=1, alias="threeDSServerTransId")
    authentication_value: str = Field(min_length=1)
    eci: str = Field(min_length=1, max_length=2)


class AuthorizationRequest(WireModel):
    """``POST /api/v5/transactions`` for a payment account (``ecom.sale`` / preauthorization)."""

    merchant_id: str = Field(min_length=1)
    store_id: str = Field(min_length=1)
    user_id: str = Field(min_length=1)
    type: AuthorizationType
    amount: Decimal
    currency_code: str
    client_system_transaction_id: Reference
    transaction_account_id: str = Field(min_length=1)
    encryption_key_id: str | None = None
    cryptogram: str | None = None
    eci_indicator: str | None = None
    three_d_secure: ThreeDSecure | None = Field(default=None, alias="threeDSecure")

    @field_validator("currency_code")
    @classmethod
    def _currency(cls, value: str) -> str:
        return check_currency(value)

    @field_validator("amount")
    @classmethod
    def _amount(cls, value: Decimal) -> Decimal:
        if not value.is_finite() or value <= 0:
            raise ValueError("must be greater than zero")
        return value


class AuthorizationResponse(ResponseModel):
    id: str
    state: str
    provider_state_code: str | None = None
    currency_code: str | None = None
    client_system_transaction_id: str | None = None
    transaction_account_id: str | None = None
    type: str | None = None
    amount: Decimal | None = None


class Address(ResponseModel):
    """Wallet address (MIN: name, postalCode, countryCode [+ phoneNumber]; FULL adds lines)."""

    name: str | None = None
    postal_code: str | None = None
    country_code: str | None = None
    phone_number: str | None = None
    address1: str | None = None
    address2: str | None = None
    address3: str | None = None
    locality: str | None = None
    administrative_area: str | None = None
    sorting_code: str | None = None


class PaymentResult(ResponseModel):
    """Success ``event.detail`` of ``handlePaymentResult`` (2.8); nulls omitted on the wire."""

    client_system_transaction_id: str
    transaction_account_id: str
    transaction_method: str = WALLETPAY_METHOD
    cryptogram: str | None = Field(default=None, repr=False)
    eci_indicator: str | None = None
    redirect_data: str | None = None
    email: str | None = None
    billing_address: Address | None = None
    shipping_address: Address | None = None


class ErrorDetails(ResponseModel):
    message: str | None = None


class GatewayErrorObject(ResponseModel):
    """Error ``event.detail`` / error response body: code, description, details.message."""

    code: str
    description: str | None = None
    details: ErrorDetails | None = None


def parse_event_detail(data: Any) -> PaymentResult | GatewayErrorObject:
    """Read a posted ``event.detail``: the success object, or the gateway error object."""
    if not isinstance(data, dict):
        raise RequestValidationError([("event.detail", "must be a JSON object")])
    keys = {fold_key(k) for k in data}
    if "transactionaccountid" in keys:
        return PaymentResult.from_wire(data)
    if "code" in keys:
        return GatewayErrorObject.from_wire(data)
    raise RequestValidationError(
        [("event.detail", "needs transactionAccountId (success) or code (gateway error)")]
    )
