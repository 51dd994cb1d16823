"""Checkout (spec 2.1 request, 2.2 response) for the redirect wallet (provider WalletV2).

Every M/O/C rule of the parameter tables is enforced here, with the field named in the error.
Amounts are ``Decimal`` major units; ``to_wire``/``from_wire`` apply the profile's format.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, ClassVar, Final, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, model_validator

from walletctl.constants import APM_PROVIDER
from walletctl.models.base import ResponseModel, WireModel, spelled_as, walk_money
from walletctl.models.fields import (
    CountryAlpha3,
    Currency,
    MobilePhone,
    Money,
    PositiveMoney,
    Rate,
    Reference,
    Subdivision,
    Text,
    Url,
)
from walletctl.models.money import quantize

SALE: Final = "ecom.sale"
PREAUTH: Final = "ecom.preAuthorization"
CHECKOUT_TYPES: Final = {"sale": SALE, "preauth": PREAUTH}
_checkout_type = spelled_as(SALE, PREAUTH)
CheckoutType = Annotated[
    Literal["ecom.sale", "ecom.preAuthorization"], BeforeValidator(_checkout_type)
]
Language = Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")]
Email = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=254)]
Phone = Annotated[str, Field(pattern=r"^\+?[0-9][0-9 ()-]{2,24}$")]
Provider = Annotated[Literal["WalletV2"], BeforeValidator(spelled_as(APM_PROVIDER))]


class Details(WireModel):
    provider_merchant_id: Text | None = None


class CheckoutDetails(WireModel):
    skin_id: Text | None = None
    language: Language | None = None
    payment_method: Provider = "WalletV2"
    cardholder_id: Text | None = None
    cardholder_first_name: Text | None = None
    cardholder_last_name: Text | None = None
    cardholder_email: Email | None = None
    cardholder_mobile_phone: MobilePhone | None = None
    cardholder_home_phone: Phone | None = None
    cardholder_work_phone: Phone | None = None
    redirect_url_timeout: Annotated[int, Field(ge=0, le=900, strict=False)] | None = None
    # In the spec's sample payload, not in its parameter table.
    cardholder_national_identification_number: Text | None = None


class BillingAddress(WireModel):
    house_number: Text
    street: Text
    city: Text
    zip_postal_code: Text
    state: Subdivision | None = None
    country_code: CountryAlpha3


class ShippingAddress(WireModel):
    first_name: Text | None = None
    last_name: Text | None = None
    telephone_number: Text | None = None
    email: Text | None = None
    house_number: Text | None = None
    street: Text | None = None
    city: Text | None = None
    zip_postal_code: Text | None = None
    state: Subdivision | None = None
    country_code: CountryAlpha3 | None = None
    delivery_method: Text | None = None  # sample-only field


class AddressDetails(WireModel):
    billing_address: BillingAddress | None = None
    shipping_address: ShippingAddress | None = None


class RedirectDetails(WireModel):
    """``cancelUrl`` and ``refusedUrl`` default to ``errorUrl`` (spec 2.1)."""

    return_url: Url
    success_url: Url
    pending_url: Url
    error_url: Url
    cancel_url: Url | None = None
    refused_url: Url | None = None

    @model_validator(mode="after")
    def _default_to_error_url(self) -> RedirectDetails:
        if self.cancel_url is None:
            self.cancel_url = self.error_url
        if self.refused_url is None:
            self.refused_url = self.error_url
        return self


class ItemDetail(WireModel):
    product_id: Text
    product_name: Text
    product_description: Annotated[str, Field(max_length=2000)] | None = None
    product_type: Literal["physical", "digital", "giftcard", "surcharge"] | None = None
    product_quantity: Annotated[int, Field(ge=1, le=9999)]
    unit_amount: Money
    unit_tax_amount: Money | None = None
    tax_rate: Rate | None = None
    total_amount: Money
    total_tax_amount: Money | None = None
    discount_amount: Money | None = None
    discount_name: Text | None = None
    discount_tax_amount: Money | None = None

    @model_validator(mode="after")
    def _conditionals(self) -> ItemDetail:
        rate = self.tax_rate or Decimal(0)
        discount = self.discount_amount or Decimal(0)
        if self.unit_tax_amount is not None and self.tax_rate is None:
            raise ValueError("taxRate: is required when unitTaxAmount is supplied")
        if rate > 0 and self.total_tax_amount is None:
            raise ValueError("totalTaxAmount: is required when taxRate > 0")
        if discount > 0 and not self.discount_name:
            raise ValueError("discountName: is required when discountAmount > 0")
        if rate > 0 and discount > 0 and self.discount_tax_amount is None:
            raise ValueError(
                "discountTaxAmount: is required when taxRate > 0 and discountAmount > 0"
            )
        expected = self.unit_amount * self.product_quantity - discount
        if self.total_amount != expected:
            raise ValueError(
                f"totalAmount: must equal unitAmount × productQuantity − discountAmount "
                f"= {self.unit_amount} × {self.product_quantity} − {discount} = {expected}, "
                f"got {self.total_amount}"
            )
        return self


class ShippingDetails(WireModel):
    shipping_name: Text | None = None
    shipping_amount: Money | None = None
    shipping_tax_amount: Money | None = None
    shipping_tax_rate: Rate | None = None

    @model_validator(mode="after")
    def _conditionals(self) -> ShippingDetails:
        if (self.shipping_amount or 0) > 0 and not self.shipping_name:
            raise ValueError("shippingName: is required when shippingAmount > 0")
        return self


class DiscountDetail(WireModel):
    discount_amount: Money | None = None
    discount_type: Literal["discount", "storecredit", "giftcard"] | None = None
    discount_name: Text | None = None

    @model_validator(mode="after")
    def _conditionals(self) -> DiscountDetail:
        if self.discount_amount is not None:
            if self.discount_type is None:
                raise ValueError("discountType: is required when discountAmount is supplied")
            if not self.discount_name:
                raise ValueError("discountName: is required when discountAmount is supplied")
        return self


class ShoppingCartDetails(WireModel):
    """Spelled ``shoppingCardDetails`` in the spec's table heading; both spellings are read."""

    _variants: ClassVar[dict[str, str]] = {}

    total_tax_amount: Money | None = None
    item_details: list[ItemDetail] | None = None
    shipping_details: ShippingDetails | None = None
    discount_details: list[DiscountDetail] | None = None

    @model_validator(mode="after")
    def _order_tax(self) -> ShoppingCartDetails:
        items = self.item_details or []
        shipping = self.shipping_details
        taxed = any((i.tax_rate or 0) > 0 for i in items) or (
            shipping is not None and (shipping.shipping_tax_rate or 0) > 0
        )
        if taxed and self.total_tax_amount is None:
            raise ValueError("totalTaxAmount: is required when any taxRate or shippingTaxRate > 0")
        if self.total_tax_amount is not None:
            expected = sum((i.total_tax_amount or Decimal(0) for i in items), Decimal(0))
            if shipping is not None and shipping.shipping_tax_amount is not None:
                expected += shipping.shipping_tax_amount
            if self.total_tax_amount != expected:
                raise ValueError(
                    f"totalTaxAmount: must equal Σ item totalTaxAmount + shippingTaxAmount "
                    f"= {expected}, got {self.total_tax_amount}"
                )
        return self


class CheckoutRequest(WireModel):
    merchant_id: Text
    store_id: Text
    user_id: Text
    type: CheckoutType
    amount: PositiveMoney
    currency_code: Currency
    client_system_transaction_id: Reference
    provider_discretionary_data: Annotated[str, Field(max_length=255)] | None = None
    details: Details | None = None
    checkout_details: CheckoutDetails
    address_details: AddressDetails | None = None
    redirect_details: RedirectDetails
    shopping_cart_details: ShoppingCartDetails | None = None

    _variants: ClassVar[dict[str, str]] = {"shoppingcarddetails": "shoppingCartDetails"}

    @model_validator(mode="after")
    def _currency_exponent(self) -> CheckoutRequest:
        """Every amount, the cart's too, has at most the currency's decimals."""
        problems: list[tuple[str, str]] = []
        walk_money(self.model_dump(by_alias=True, exclude_none=True),
                   lambda value: quantize(value, self.currency_code), "", problems)
        if problems:
            path, rule = problems[0]
            raise ValueError(f"{path}: {rule}")
        return self

    @property
    def is_preauth(self) -> bool:
        return self.type == PREAUTH


class CheckoutResponse(ResponseModel):
    redirect_url: str
    # not on the wire's body: set from the answer's X-Sandbox-Replayed header
    _replayed: bool = PrivateAttr(default=False)

    @property
    def replayed(self) -> bool:
        """The gateway replayed an identical earlier checkout's answer: nothing was created."""
        return self._replayed

    def mark_replayed(self) -> None:
        self._replayed = True


def parse_checkout_type(value: str) -> str:
    """``sale``/``preauth`` (CLI words) or a wire value -> the wire value."""
    if value.lower() in CHECKOUT_TYPES:
        return CHECKOUT_TYPES[value.lower()]
    canon = _checkout_type(value)
    if canon in (SALE, PREAUTH):
        return str(canon)
    raise ValueError(f"{value!r} must be sale or preauth")
