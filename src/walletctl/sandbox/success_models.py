"""The 200 answer of every JSON route the sandbox serves, as closed pydantic models: what
``/openapi.json`` declares (walletctl.sandbox.openapi), so a generated client has a class, not
a free dictionary, for each. The routes build their answers as dictionaries; the contract
tests hold them to these schemas (no key left out, none more)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

_COMPONENT = "#/components/schemas/{}"
_ELSEWHERE = "x-component"  # a field typed by components the document declares elsewhere


def _ref(*names: str) -> Any:
    """A field typed by the document's components ``names`` (one, or any of them)."""
    return WithJsonSchema({_ELSEWHERE: list(names)})


_MONEY = "money in the sandbox's amount format (minor units or decimal, as served), a string"


class _Answer(BaseModel):
    """An answer object: its keys spelled as on the wire, none other."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel,
                              populate_by_name=True)


# -- /_sandbox/* ------------------------------------------------------------------------------

class SandboxHealth(_Answer):
    status: Literal["ok"]
    amount_format: Literal["minor", "decimal"]
    version: str
    started_at: str = Field(description="when this sandbox started (ISO 8601)")
    persistent: bool = Field(description="true: the ledger is kept in a file (--db)")


class SandboxValues(_Answer):
    magic_amounts: dict[str, str] = Field(
        description="the last two minor-unit digits of an amount -> the outcome they choose")
    api_key: str


class ResetResult(_Answer):
    reset: Literal[True]


class DecideCheckoutResult(_Answer):
    reference: str
    state: str
    provider_state_code: str | None
    redirect_url: str = Field(description="where the hosted page would have sent the customer")
    record: Annotated[dict[str, Any], _ref("TransactionRecord")] = Field(
        description="the checkout's record (spec 2.5), as a lookup answers it")


class FaultSettings(BaseModel):
    """The fault settings in force (their snake_case names)."""

    model_config = ConfigDict(extra="forbid")

    latency_ms: int
    jitter_ms: int
    error_rate: float
    error_status: int
    throttle_rate: float
    retry_after: int
    drop_rate: float
    error_after_rate: float
    seed: int | None


class SeedResult(_Answer):
    created: int
    kind: str
    currency: str
    merchant_id: str
    store_id: str


class ClockResult(_Answer):
    now: str = Field(description="the sandbox's time now (ISO 8601)")


class LedgerEntry(_Answer):
    id: str
    merchant_id: str
    store_id: str
    reference: str
    invoice_reference: str | None
    kind: str
    type: str | None
    amount: str = Field(description="major units, as stored")
    currency: str
    state: str
    provider_state_code: str | None
    method: str | None
    created_at: str
    updated_at: str


class Ledger(_Answer):
    transactions: list[LedgerEntry] = Field(description="oldest first")
    count: int


# -- the browser wallet's gateway routes ------------------------------------------------------

class PublicKeysResponse(_Answer):
    api_key: str = Field(description="a per-transaction PublicApiKey (browser calls)")
    encryption_key: str = Field(description="base64 DER SubjectPublicKeyInfo, EC P-256")
    encryption_key_id: str
    expires_at: str = Field(json_schema_extra={"format": "date-time"})


class PublicKeyStatus(_Answer):
    merchant_id: str
    store_id: str
    status: str


class PaymentAccount(_Answer):
    """A payment account: created (with a Token's cryptogram) or read back (masked)."""

    transaction_account_id: str
    card_type: str
    card_network: str
    masked_card_number: str
    expiry_month: int
    expiry_year: int
    auth_method: str | None = None
    merchant_id: str | None = None
    store_id: str | None = None
    encryption_key_id: str | None = None
    client_system_transaction_id: str | None = None
    cryptogram: str | None = None
    eci_indicator: str | None = None


class AuthorizationResponse(_Answer):
    id: str
    state: str
    provider_state_code: str | None
    currency_code: str
    client_system_transaction_id: str
    transaction_account_id: str
    type: str
    amount: str = Field(description=_MONEY)
    transaction_method: str


class ThreeDSecureChallenge(_Answer):
    challenge_id: str
    challenge_url: str = Field(description="the shopper's page (GET /pay/3ds/{challengeId})")
    expires_at: str


class ThreeDSecureValues(_Answer):
    three_ds_server_trans_id: str = Field(alias="threeDSServerTransId")
    authentication_value: str
    eci: str


class ThreeDSecureStatus(_Answer):
    challenge_id: str
    transaction_account_id: str
    amount: str = Field(description=_MONEY)
    currency_code: str
    client_system_transaction_id: str
    status: Literal["pending", "completed", "expired"]
    trans_status: str | None = None
    three_d_secure: ThreeDSecureValues | None = Field(default=None, alias="threeDSecure")


class ThreeDSecureResult(_Answer):
    """A 3-D Secure result without a shopper (POST /_sandbox/3ds/challenge)."""

    three_ds_server_trans_id: str = Field(alias="threeDSServerTransId")
    authentication_value: str
    eci: str
    trans_status: str


# -- the wallet emulator and the browser-test driver ------------------------------------------

class WalletCard(_Answer):
    id: str
    label: str
    card_network: str
    auth_method: str
    funding: str
    last4: str
    expiry_month: int
    expiry_year: int


class WalletCards(_Answer):
    cards: list[WalletCard]


class AssuranceDetails(_Answer):
    account_verified: bool
    card_holder_authenticated: bool


class CardInfo(_Answer):
    card_network: str
    card_details: str = Field(description="the card's last four digits")
    assurance_details: AssuranceDetails


class TokenizationData(_Answer):
    type: str
    token: str = Field(description="the sealed token (JSON text): paymentData of "
                                   "createPaymentAccount")


class PaymentMethodData(_Answer):
    type: str
    description: str
    info: CardInfo
    tokenization_data: TokenizationData


class WalletPaymentData(_Answer):
    payment_method_data: PaymentMethodData


class WalletRootKey(_Answer):
    root_key: str
    protocol_version: str


class DriverToken(_Answer):
    token: str
    expires_in_seconds: int


class DriverTokenRedeemed(_Answer):
    redeemed: Literal[True]


# -- the demo merchant ------------------------------------------------------------------------

class DemoDisplayItem(_Answer):
    label: str
    type: str
    price: str


class DemoOffer(_Answer):
    redemption_code: str
    description: str


class DemoQuoteError(_Answer):
    reason: str
    intent: str
    message: str


class DemoQuote(_Answer):
    total_price: str
    currency_code: str
    display_items: list[DemoDisplayItem]
    shipping_option_id: str | None
    offers: list[DemoOffer]
    error: DemoQuoteError | None = None


class DemoSession(_Answer):
    merchant_id: str
    store_id: str
    client_system_transaction_id: str
    public_key_api: str
    amount: str = Field(description="major units")
    currency_code: str
    type: str
    authorize: bool
    quote: DemoQuote


class DemoStored(_Answer):
    cryptogram: bool = Field(description="whether one was given (never the value)")
    eci_indicator: str | None


class DemoResult(_Answer):
    outcome: str
    detail: Annotated[dict[str, Any], _ref("EventDetail")] = Field(
        description="the page's event.detail, without its cryptogram")
    encryption_key_id: str | None = None
    merchant_id: str | None = None
    store_id: str | None = None
    stored: DemoStored | None = None
    account: Annotated[dict[str, Any], _ref("PaymentAccount", "Error")] | None = None
    amount: str | None = Field(default=None, description="major units")
    transaction: Annotated[dict[str, Any], _ref("AuthorizationResponse", "Error")] | None = None


class DemoResults(_Answer):
    results: list[DemoResult]


def success_schemas() -> dict[str, dict[str, Any]]:
    """The components of :data:`SUCCESS_MODELS` and the models they hold, by name."""
    out: dict[str, dict[str, Any]] = {}
    for name, model in SUCCESS_MODELS.items():
        schema = model.model_json_schema(by_alias=True, ref_template=_COMPONENT.format("{model}"))
        out.update(schema.pop("$defs", {}))
        out[name] = {**schema, "title": name}  # a generated client's class name
    return {name: _resolve(schema) for name, schema in out.items()}


def _resolve(schema: Any) -> Any:
    """``schema`` with each field typed elsewhere made a ``$ref`` (or an ``anyOf`` of them)."""
    if isinstance(schema, list):
        return [_resolve(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if _ELSEWHERE in schema:
        refs = [{"$ref": _COMPONENT.format(name)} for name in schema[_ELSEWHERE]]
        extra = {k: v for k, v in schema.items() if k in ("description", "title")}
        return {**(refs[0] if len(refs) == 1 else {"anyOf": refs}), **extra}
    out = {key: _resolve(value) for key, value in schema.items()}
    if "anyOf" in out:  # one level of choices: (A or B) or null is A, B or null
        out["anyOf"] = [choice for sub in out["anyOf"] for choice in (
            sub["anyOf"] if set(sub) == {"anyOf"} else [sub])]
    return out


# component name -> model, for the document
SUCCESS_MODELS: dict[str, type[BaseModel]] = {
    model.__name__: model for model in (
        SandboxHealth, SandboxValues, ResetResult, DecideCheckoutResult, FaultSettings,
        SeedResult, ClockResult, Ledger, PublicKeysResponse, PublicKeyStatus, PaymentAccount,
        AuthorizationResponse, ThreeDSecureChallenge, ThreeDSecureStatus, ThreeDSecureResult,
        WalletCards, WalletPaymentData, WalletRootKey, DriverToken, DriverTokenRedeemed,
        DemoSession, DemoQuote, DemoResult, DemoResults)}
