"""Spec 2.1-2.4 request/response models: every rule names its field; money formats both ways."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from walletctl.errors import RequestValidationError
from walletctl.models import money
from walletctl.models.base import loads
from walletctl.models.checkout import CheckoutRequest, CheckoutResponse, parse_checkout_type
from walletctl.models.followup import FollowUpRequest, FollowUpResponse


def checkout_body(**top: Any) -> dict[str, Any]:
    """A valid checkout request in major units (the in-memory form ``from_wire(data)`` takes)."""
    body: dict[str, Any] = {
        "merchantId": "M-1001",
        "storeId": "S-01",
        "userId": "ops-bot",
        "type": "ecom.sale",
        "amount": "12.34",
        "currencyCode": "EUR",
        "clientSystemTransactionId": "ORDER-1",
        "checkoutDetails": {"paymentMethod": "WalletV2"},
        "redirectDetails": {
            "returnUrl": "https://shop.example/back",
            "successUrl": "https://shop.example/ok",
            "pendingUrl": "https://shop.example/pending",
            "errorUrl": "https://shop.example/err",
        },
    }
    body.update(top)
    return body


def item(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "productId": "SKU-1",
        "productName": "Widget",
        "productQuantity": 2,
        "unitAmount": "5.00",
        "totalAmount": "10.00",
    }
    base.update(fields)
    return base


def with_cart(**cart: Any) -> dict[str, Any]:
    return checkout_body(shoppingCartDetails=cart)


def problems_of(data: Any, fmt: Any = None, model: Any = CheckoutRequest) -> list[tuple[str, str]]:
    with pytest.raises(RequestValidationError) as info:
        model.from_wire(data, fmt)
    return info.value.problems


def assert_names(problems: list[tuple[str, str]], field: str, rule_word: str = "") -> None:
    fields = [p for p, _ in problems]
    assert field in fields, f"expected a problem naming {field!r}, got {problems}"
    if rule_word:
        rule = dict(problems)[field]
        assert rule_word.lower() in rule.lower(), f"{field}: rule {rule!r} lacks {rule_word!r}"


# ---------------------------------------------------------------------------- 2.1 top level


def test_valid_checkout_parses_and_fills_defaults() -> None:
    req = CheckoutRequest.from_wire(checkout_body())
    assert req.amount == Decimal("12.34"), req.amount
    rd = req.redirect_details
    assert (rd.cancel_url, rd.refused_url) == (rd.error_url, rd.error_url), (
        "cancelUrl/refusedUrl must default to errorUrl"
    )
    wire = req.to_wire("minor")
    assert wire["redirectDetails"]["cancelUrl"] == "https://shop.example/err", wire
    assert wire["redirectDetails"]["refusedUrl"] == "https://shop.example/err", wire


def test_explicit_cancel_and_refused_urls_are_kept() -> None:
    body = checkout_body()
    body["redirectDetails"]["cancelUrl"] = "https://shop.example/cancel"
    body["redirectDetails"]["refusedUrl"] = "https://shop.example/refused"
    rd = CheckoutRequest.from_wire(body).redirect_details
    assert rd.cancel_url == "https://shop.example/cancel", rd
    assert rd.refused_url == "https://shop.example/refused", rd


@pytest.mark.parametrize(
    "field", ["merchantId", "storeId", "userId", "type", "amount", "currencyCode",
              "clientSystemTransactionId", "checkoutDetails", "redirectDetails"]
)
def test_mandatory_top_level_fields(field: str) -> None:
    body = checkout_body()
    del body[field]
    assert_names(problems_of(body), field, "required")


@pytest.mark.parametrize("field", ["returnUrl", "successUrl", "pendingUrl", "errorUrl"])
def test_mandatory_redirect_urls(field: str) -> None:
    body = checkout_body()
    del body["redirectDetails"][field]
    assert_names(problems_of(body), f"redirectDetails.{field}", "required")


def test_redirect_url_must_be_http() -> None:
    body = checkout_body()
    body["redirectDetails"]["successUrl"] = "javascript:alert(1)"
    assert_names(problems_of(body), "redirectDetails.successUrl", "URL")


@pytest.mark.parametrize("code", ["EURO", "E1R", "XYZ", "XAU", "", "eu"])
def test_currency_must_be_iso_4217(code: str) -> None:
    assert_names(problems_of(checkout_body(currencyCode=code)), "currencyCode")


def test_currency_is_upper_cased() -> None:
    assert CheckoutRequest.from_wire(checkout_body(currencyCode="eur")).currency_code == "EUR"


@pytest.mark.parametrize(
    ("currency", "ok", "bad"),
    [("JPY", "1234", "12.3"), ("EUR", "12.34", "12.345"), ("BHD", "1.234", "1.2345")],
)
def test_amount_decimals_follow_the_currency_exponent(currency: str, ok: str, bad: str) -> None:
    CheckoutRequest.from_wire(checkout_body(currencyCode=currency, amount=ok))
    assert_names(problems_of(checkout_body(currencyCode=currency, amount=bad)), "amount",
                 "decimal place")


@pytest.mark.parametrize("amount", ["0", "-1.00", "abc", "1e3", "", " 12"])
def test_amount_must_be_a_positive_number(amount: str) -> None:
    assert_names(problems_of(checkout_body(amount=amount)), "amount")


def test_float_amount_is_refused() -> None:
    assert_names(problems_of(checkout_body(amount=12.34)), "amount", "float")


def test_float_amount_is_refused_in_wire_decoding() -> None:
    assert_names(problems_of(checkout_body(amount=12.5), "decimal"), "amount", "float")


def test_unknown_field_is_refused_by_name() -> None:
    assert_names(problems_of(checkout_body(amuont="1")), "amuont", "not a field")


@pytest.mark.parametrize(
    ("given", "wire"),
    [("sale", "ecom.sale"), ("preauth", "ecom.preAuthorization"),
     ("ecom.preauthorisation", "ecom.preAuthorization"), ("ECOM.SALE", "ecom.sale")],
)
def test_checkout_type_spellings(given: str, wire: str) -> None:
    assert parse_checkout_type(given) == wire
    if "." in given:
        assert CheckoutRequest.from_wire(checkout_body(type=given)).type == wire


def test_bad_checkout_type() -> None:
    assert_names(problems_of(checkout_body(type="ecom.capture")), "type")
    with pytest.raises(ValueError, match="sale or preauth"):
        parse_checkout_type("refund")


def test_reference_length_and_charset() -> None:
    assert_names(problems_of(checkout_body(clientSystemTransactionId="x" * 65)),
                 "clientSystemTransactionId")
    assert_names(problems_of(checkout_body(clientSystemTransactionId="has\ttab")),
                 "clientSystemTransactionId")
    assert_names(problems_of(checkout_body(clientSystemTransactionId="trailing space ")),
                 "clientSystemTransactionId")
    # issue 21: the one reference rule takes spaces inside, '#' and any script
    req = CheckoutRequest.from_wire(checkout_body(clientSystemTransactionId="pre order #ä 1"))
    assert req.client_system_transaction_id == "pre order #ä 1"


# ------------------------------------------------------------------------- checkoutDetails


@pytest.mark.parametrize(("value", "ok"), [(0, True), (900, True), (901, False), (-1, False)])
def test_redirect_url_timeout_range(value: int, ok: bool) -> None:
    body = checkout_body(checkoutDetails={"paymentMethod": "WalletV2", "redirectUrlTimeout": value})
    if ok:
        req = CheckoutRequest.from_wire(body)
        assert req.checkout_details.redirect_url_timeout == value
    else:
        assert_names(problems_of(body), "checkoutDetails.redirectUrlTimeout", str(900 if value >
                                                                                    0 else 0))


@pytest.mark.parametrize(
    ("phone", "ok"),
    [("49-1701234567", True), ("1-5551234", True), ("353-861234567", True),
     ("+49 170 1234567", False), ("4917-01234567", False), ("49-", False), ("-1701234567", False),
     ("49-170-1234567", False)],
)
def test_mobile_phone_format(phone: str, ok: bool) -> None:
    body = checkout_body(
        checkoutDetails={"paymentMethod": "WalletV2", "cardholderMobilePhone": phone}
    )
    if ok:
        CheckoutRequest.from_wire(body)
    else:
        assert_names(problems_of(body), "checkoutDetails.cardholderMobilePhone", "{number}")


def test_payment_method_must_be_walletv2() -> None:
    body = checkout_body(checkoutDetails={"paymentMethod": "PayPal"})
    assert_names(problems_of(body), "checkoutDetails.paymentMethod")
    body = checkout_body(checkoutDetails={"PaymentMethod": "walletv2"})  # sample key case
    assert CheckoutRequest.from_wire(body).checkout_details.payment_method == "WalletV2"


def test_cardholder_email_format() -> None:
    body = checkout_body(checkoutDetails={"paymentMethod": "WalletV2", "cardholderEmail": "nope"})
    assert_names(problems_of(body), "checkoutDetails.cardholderEmail")


# -------------------------------------------------------------------------- addressDetails


def billing(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"houseNumber": "1", "street": "Main St", "city": "Berlin",
                            "zipPostalCode": "10115", "countryCode": "DEU"}
    base.update(fields)
    return base


@pytest.mark.parametrize("field", ["houseNumber", "street", "city", "zipPostalCode",
                                   "countryCode"])
def test_billing_address_mandatory_fields(field: str) -> None:
    addr = billing()
    del addr[field]
    body = checkout_body(addressDetails={"billingAddress": addr})
    assert_names(problems_of(body), f"addressDetails.billingAddress.{field}", "required")


@pytest.mark.parametrize("code", ["DE", "XXX", "GERMANY", "D3U"])
def test_country_must_be_alpha3(code: str) -> None:
    body = checkout_body(addressDetails={"billingAddress": billing(countryCode=code)})
    assert_names(problems_of(body), "addressDetails.billingAddress.countryCode", "alpha-3")
    body = checkout_body(addressDetails={"shippingAddress": {"countryCode": code}})
    assert_names(problems_of(body), "addressDetails.shippingAddress.countryCode", "alpha-3")


@pytest.mark.parametrize(("state", "ok"), [("DE-BY", True), ("US-CA", True), ("de-by", True),
                                           ("BY", False), ("DE-ZZ", False), ("Bavaria", False)])
def test_state_must_be_iso_3166_2(state: str, ok: bool) -> None:
    body = checkout_body(addressDetails={"billingAddress": billing(state=state),
                                         "shippingAddress": {"state": state}})
    if ok:
        req = CheckoutRequest.from_wire(body)
        assert req.address_details is not None
        assert req.address_details.billing_address is not None
        assert req.address_details.billing_address.state == state.upper()
    else:
        probs = problems_of(body)
        assert_names(probs, "addressDetails.billingAddress.state", "3166-2")
        assert_names(probs, "addressDetails.shippingAddress.state", "3166-2")


def test_shipping_address_is_all_optional_and_keeps_delivery_method() -> None:
    body = checkout_body(addressDetails={"shippingAddress": {"deliveryMethod": "courier"}})
    wire = CheckoutRequest.from_wire(body).to_wire("minor")
    assert wire["addressDetails"] == {"shippingAddress": {"deliveryMethod": "courier"}}, wire


# --------------------------------------------------------------------- shoppingCartDetails


@pytest.mark.parametrize(("qty", "ok"), [(1, True), (9999, True), (0, False), (10000, False)])
def test_product_quantity_range(qty: int, ok: bool) -> None:
    body = with_cart(itemDetails=[item(productQuantity=qty, unitAmount="1.00",
                                       totalAmount=f"{qty}.00")])
    if ok:
        CheckoutRequest.from_wire(body)
    else:
        assert_names(problems_of(body), "shoppingCartDetails.itemDetails[0].productQuantity")


@pytest.mark.parametrize("field", ["productId", "productName", "productQuantity", "unitAmount",
                                   "totalAmount"])
def test_item_mandatory_fields(field: str) -> None:
    it = item()
    del it[field]
    assert_names(problems_of(with_cart(itemDetails=[it])),
                 f"shoppingCartDetails.itemDetails[0].{field}", "required")


def test_item_product_type_values() -> None:
    assert_names(problems_of(with_cart(itemDetails=[item(productType="service")])),
                 "shoppingCartDetails.itemDetails[0].productType")
    CheckoutRequest.from_wire(with_cart(itemDetails=[item(productType="giftcard")]))


def test_item_total_amount_arithmetic() -> None:
    probs = problems_of(with_cart(itemDetails=[item(totalAmount="9.99")]))
    assert_names(probs, "shoppingCartDetails.itemDetails[0].totalAmount", "10.00")
    ok = item(discountAmount="1.50", discountName="Promo", totalAmount="8.50")
    CheckoutRequest.from_wire(with_cart(itemDetails=[ok]))


def test_discount_name_required_when_discount_positive() -> None:
    it = item(discountAmount="1.00", totalAmount="9.00")
    assert_names(problems_of(with_cart(itemDetails=[it])),
                 "shoppingCartDetails.itemDetails[0].discountName", "required")
    zero = item(discountAmount="0.00")  # zero discount needs no name
    CheckoutRequest.from_wire(with_cart(itemDetails=[zero]))


def test_discount_amount_must_not_be_negative() -> None:
    it = item(discountAmount="-1.00", discountName="x", totalAmount="11.00")
    assert_names(problems_of(with_cart(itemDetails=[it])),
                 "shoppingCartDetails.itemDetails[0].discountAmount", "negative")


def test_tax_rate_required_when_unit_tax_supplied() -> None:
    it = item(unitTaxAmount="0.80")
    assert_names(problems_of(with_cart(itemDetails=[it])),
                 "shoppingCartDetails.itemDetails[0].taxRate", "unitTaxAmount")


def test_item_total_tax_required_when_tax_rate_positive() -> None:
    it = item(unitTaxAmount="0.80", taxRate="19")
    assert_names(problems_of(with_cart(itemDetails=[it], totalTaxAmount="1.60")),
                 "shoppingCartDetails.itemDetails[0].totalTaxAmount", "taxRate")


def test_zero_tax_rate_needs_no_tax_totals() -> None:
    CheckoutRequest.from_wire(with_cart(itemDetails=[item(taxRate="0")]))


def test_discount_tax_required_when_taxed_and_discounted() -> None:
    it = item(taxRate="19", totalTaxAmount="1.60", discountAmount="1.00", discountName="Promo",
              totalAmount="9.00")
    assert_names(problems_of(with_cart(itemDetails=[it], totalTaxAmount="1.60")),
                 "shoppingCartDetails.itemDetails[0].discountTaxAmount", "required")
    it["discountTaxAmount"] = "0.16"
    CheckoutRequest.from_wire(with_cart(itemDetails=[it], totalTaxAmount="1.60"))


def test_order_total_tax_required_when_any_rate_positive() -> None:
    it = item(taxRate="19", totalTaxAmount="1.60")
    assert_names(problems_of(with_cart(itemDetails=[it])),
                 "shoppingCartDetails.totalTaxAmount", "required")
    ship = {"shippingName": "DHL", "shippingAmount": "4.90", "shippingTaxRate": "19",
            "shippingTaxAmount": "0.78"}
    assert_names(problems_of(with_cart(shippingDetails=ship)),
                 "shoppingCartDetails.totalTaxAmount", "required")


def test_order_total_tax_is_items_plus_shipping_tax() -> None:
    items = [item(taxRate="19", totalTaxAmount="1.60"),
             item(productId="SKU-2", taxRate="7", totalTaxAmount="0.65")]
    ship = {"shippingName": "DHL", "shippingAmount": "4.90", "shippingTaxRate": "19",
            "shippingTaxAmount": "0.78"}
    CheckoutRequest.from_wire(with_cart(itemDetails=items, shippingDetails=ship,
                                        totalTaxAmount="3.03"))
    probs = problems_of(with_cart(itemDetails=items, shippingDetails=ship, totalTaxAmount="2.25"))
    assert_names(probs, "shoppingCartDetails.totalTaxAmount", "3.03")


def test_sample_spelling_totaltaxamount_and_shoppingcarddetails() -> None:
    body = checkout_body()
    body["shoppingCardDetails"] = {"totaltaxAmount": "1.60",
                                   "ItemDetails": [item(taxRate="19", totalTaxAmount="1.60")]}
    req = CheckoutRequest.from_wire(body)
    assert req.shopping_cart_details is not None
    assert req.shopping_cart_details.total_tax_amount == Decimal("1.60")
    wire = req.to_wire("minor")
    assert wire["shoppingCartDetails"]["totalTaxAmount"] == "160", wire


def test_shipping_name_required_when_shipping_amount_positive() -> None:
    probs = problems_of(with_cart(shippingDetails={"shippingAmount": "4.90"}))
    assert_names(probs, "shoppingCartDetails.shippingDetails.shippingName", "required")
    CheckoutRequest.from_wire(with_cart(shippingDetails={"shippingAmount": "0.00"}))


@pytest.mark.parametrize(
    ("disc", "field"),
    [({"discountAmount": "1.00", "discountName": "x"}, "discountType"),
     ({"discountAmount": "1.00", "discountType": "giftcard"}, "discountName"),
     ({"discountAmount": "1.00", "discountType": "coupon", "discountName": "x"}, "discountType")],
)
def test_order_discount_rules(disc: dict[str, str], field: str) -> None:
    assert_names(problems_of(with_cart(discountDetails=[disc])),
                 f"shoppingCartDetails.discountDetails[0].{field}")


def test_cart_amounts_follow_the_currency_exponent() -> None:
    body = with_cart(itemDetails=[item(unitAmount="5", totalAmount="10.5")])
    body.update(currencyCode="JPY", amount="1000")
    # 5 × 2 = 10, so 10.5 breaks the arithmetic; use a consistent but over-precise cart
    body["shoppingCartDetails"]["itemDetails"] = [item(unitAmount="5.5", totalAmount="11")]
    assert_names(problems_of(body), "shoppingCartDetails.itemDetails[0].unitAmount",
                 "JPY amounts have 0 decimal places")


# ------------------------------------------------------------------------------ wire formats


@pytest.mark.parametrize(
    ("currency", "major", "minor_wire", "decimal_wire"),
    [("JPY", "1234", "1234", "1234"), ("EUR", "12.34", "1234", "12.34"),
     ("BHD", "1.234", "1234", "1.234"), ("EUR", "0.05", "5", "0.05")],
)
def test_money_wire_formats(currency: str, major: str, minor_wire: str, decimal_wire: str) -> None:
    amount = Decimal(major)
    assert money.exponent(currency) == {"JPY": 0, "EUR": 2, "BHD": 3}[currency]
    assert money.to_wire(amount, currency, "minor") == minor_wire
    assert money.to_wire(amount, currency, "decimal") == decimal_wire
    assert money.from_wire(minor_wire, currency, "minor") == amount
    assert money.from_wire(decimal_wire, currency, "decimal") == amount
    req = CheckoutRequest.from_wire(checkout_body(currencyCode=currency, amount=major))
    assert req.to_wire("minor")["amount"] == minor_wire
    assert req.to_wire("decimal")["amount"] == decimal_wire
    back = CheckoutRequest.from_wire(req.to_wire("minor"), "minor")
    assert back.amount == amount, (back.amount, amount)
    back = CheckoutRequest.from_wire(req.to_wire("decimal"), "decimal")
    assert back.amount == amount, (back.amount, amount)


def test_minor_wire_must_be_whole() -> None:
    assert_names(problems_of(checkout_body(amount="12.34"), "minor"), "amount", "whole number")
    with pytest.raises(ValueError, match="whole number"):
        money.from_wire("12.5", "EUR", "minor")


def test_json_numbers_accepted_on_the_wire_but_never_float() -> None:
    assert money.from_wire(1234, "EUR", "minor") == Decimal("12.34")
    assert money.from_wire(Decimal("12.34"), "EUR", "decimal") == Decimal("12.34")
    for bad in (12.34, True):
        with pytest.raises(ValueError, match="float"):
            money.to_decimal(bad)
    parsed = loads('{"amount": 12.34}')
    assert isinstance(parsed["amount"], Decimal), "loads must parse JSON decimals as Decimal"


def test_format_major() -> None:
    assert money.format_major(Decimal("1000"), "JPY") == "1,000 JPY"
    assert money.format_major(Decimal("12.3"), "EUR") == "12.30 EUR"
    assert money.format_major(Decimal("1.5"), "BHD") == "1.500 BHD"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "1e5", "1,00", "--1", "."])
def test_to_decimal_rejects_non_plain_numbers(text: str) -> None:
    with pytest.raises(ValueError, match="number"):
        money.to_decimal(text)


# ------------------------------------------------------------------------------- 2.3 / 2.4


def followup_body(**top: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "merchantId": "M-1001", "storeId": "S-01", "userId": "ops-bot", "type": "ecom.capture",
        "amount": "5.00", "currencyCode": "EUR", "clientSystemTransactionId": "ORDER-1-CAP1",
        "clientSystemInvoiceId": "ORDER-1", "apmDetails": {"apmProvider": "WalletV2"},
    }
    body.update(top)
    return body


def test_followup_request_wire_shape() -> None:
    req = FollowUpRequest.from_wire(followup_body())
    assert req.operation == "capture"
    assert req.to_wire("minor") == {**followup_body(amount="500")}, req.to_wire("minor")
    assert req.to_wire("decimal")["amount"] == "5.00"


def test_followup_sample_spelling_apmdetails_apmprovidername() -> None:
    body = followup_body()
    del body["apmDetails"]
    body["apmdetails"] = {"apmProviderName": "WalletV2"}
    body["type"] = "ecom.reversalPreauthorisation"
    req = FollowUpRequest.from_wire(body)
    assert req.type == "ecom.reversalPreauthorization", req.type
    assert req.to_wire("minor")["apmDetails"] == {"apmProvider": "WalletV2"}


@pytest.mark.parametrize("field", ["merchantId", "storeId", "userId", "type", "amount",
                                   "currencyCode", "clientSystemTransactionId",
                                   "clientSystemInvoiceId", "apmDetails"])
def test_followup_mandatory_fields(field: str) -> None:
    body = followup_body()
    del body[field]
    assert_names(problems_of(body, model=FollowUpRequest), field, "required")


def test_followup_rules() -> None:
    assert_names(problems_of(followup_body(type="ecom.sale"), model=FollowUpRequest), "type")
    assert_names(problems_of(followup_body(clientSystemTransactionId="ORDER-1"),
                             model=FollowUpRequest), "clientSystemTransactionId", "new reference")
    assert_names(problems_of(followup_body(amount="5.001"), model=FollowUpRequest), "amount",
                 "decimal place")
    assert_names(problems_of(followup_body(amount=5.0), model=FollowUpRequest), "amount",
                 "float")
    assert_names(problems_of(followup_body(apmDetails={"apmProvider": "Other"}),
                             model=FollowUpRequest), "apmDetails.apmProvider")


def test_followup_sample_pascalcase_cart_and_numeric_amount() -> None:
    body = followup_body(amount=500)
    body["ShoppingCartDetails"] = {
        "TotalTaxAmount": 160,
        "ItemDetails": [{"ProductId": "SKU-1", "ProductName": "W", "ProductQuantity": 2,
                         "UnitAmount": 500, "TotalAmount": 1000, "TaxRate": 19,
                         "TotalTaxAmount": 160}],
    }
    req = FollowUpRequest.from_wire(body, "minor")
    assert req.amount == Decimal("5.00"), req.amount
    cart = req.shopping_cart_details
    assert cart is not None
    assert cart.item_details is not None
    assert cart.item_details[0].total_amount == Decimal("10.00")
    assert cart.total_tax_amount == Decimal("1.60")


def test_followup_response_variants() -> None:
    resp = FollowUpResponse.from_wire(loads(
        '{"Id": "p-1", "STATE": "Approved", "providerStateCode": "CapturedByProvider",'
        ' "currencyCode": "EUR", "clientSystemTransactionId": "ORDER-1-CAP1",'
        ' "apmdetails": {"apmProvider": "WalletV2", "apmPaymentMethod": "wallet"},'
        ' "extraField": 1}'
    ))
    assert (resp.id, resp.state, resp.provider_state_code) == ("p-1", "Approved",
                                                                "CapturedByProvider")
    assert resp.apm_details is not None
    assert resp.apm_details.apm_provider_name == "WalletV2", resp.apm_details
    assert resp.apm_details.apm_payment_method == "wallet"


def test_checkout_response() -> None:
    assert CheckoutResponse.from_wire({"RedirectUrl": "https://x.example/pay/1"}).redirect_url == (
        "https://x.example/pay/1"
    )
    with pytest.raises(RequestValidationError) as info:
        CheckoutResponse.from_wire({"url": "x"})
    assert_names(info.value.problems, "redirectUrl", "required")


def test_duplicate_key_in_two_cases_is_refused() -> None:
    body = checkout_body()
    body["AMOUNT"] = "1.00"
    assert_names(problems_of(body), "AMOUNT", "twice")


# ------------------------------------------------------------------------ property tests

CURRENCIES = ["EUR", "JPY", "BHD", "USD", "KWD", "KRW"]


@st.composite
def carts(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A consistent checkout with a cart, amounts as major-unit strings."""
    currency = draw(st.sampled_from(CURRENCIES))
    exp = money.exponent(currency)
    unit = Decimal(1).scaleb(-exp)

    def amt(lo: int = 0, hi: int = 10**6) -> Decimal:
        return Decimal(draw(st.integers(lo, hi))) * unit

    def s(d: Decimal) -> str:
        return f"{d.quantize(unit):f}"

    items = []
    tax_total = Decimal(0)
    taxed = False
    for n in range(draw(st.integers(1, 4))):
        qty = draw(st.integers(1, 9999))
        unit_amount = amt(0, 10**5)
        discount = amt(0, int(unit_amount / unit) * qty) if draw(st.booleans()) else None
        it: dict[str, Any] = {
            "productId": f"SKU-{n}", "productName": f"Item {n}", "productQuantity": qty,
            "unitAmount": s(unit_amount),
            "totalAmount": s(unit_amount * qty - (discount or 0)),
        }
        if discount is not None:
            it["discountAmount"] = s(discount)
            if discount > 0:
                it["discountName"] = "Promo"
        if draw(st.booleans()):
            taxed = True
            item_tax = amt(0, 10**5)
            it.update(taxRate=str(draw(st.integers(1, 25))), unitTaxAmount=s(amt(0, 10**4)),
                      totalTaxAmount=s(item_tax))
            tax_total += item_tax
            if discount:
                it["discountTaxAmount"] = s(amt(0, 100))
        items.append(it)
    cart: dict[str, Any] = {"itemDetails": items}
    if draw(st.booleans()):
        ship_tax = amt(0, 1000)
        cart["shippingDetails"] = {"shippingName": "Courier", "shippingAmount": s(amt(1, 10**4)),
                                   "shippingTaxRate": "19", "shippingTaxAmount": s(ship_tax)}
        tax_total += ship_tax
        taxed = True
    if taxed or draw(st.booleans()):
        cart["totalTaxAmount"] = s(tax_total)
    if draw(st.booleans()):
        cart["discountDetails"] = [{"discountAmount": s(amt(0, 1000)),
                                    "discountType": draw(st.sampled_from(
                                        ["discount", "storecredit", "giftcard"])),
                                    "discountName": "Voucher"}]
    body = checkout_body(currencyCode=currency, amount=s(amt(1)), shoppingCartDetails=cart)
    return body, currency


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(carts(), st.sampled_from(["minor", "decimal"]))
def test_any_valid_cart_round_trips(case: tuple[dict[str, Any], str], fmt: Any) -> None:
    body, _ = case
    req = CheckoutRequest.from_wire(body)
    wire = req.to_wire(fmt)
    again = CheckoutRequest.from_wire(wire, fmt)
    assert again == req, f"round trip through {fmt} changed the request:\n{wire}"
    assert again.to_wire(fmt) == wire


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(carts(), st.integers(1, 10**4), st.booleans(), st.data())
def test_any_inconsistent_cart_is_rejected_naming_the_field(
    case: tuple[dict[str, Any], str], delta_units: int, negative: bool, data: st.DataObject
) -> None:
    body, currency = case
    body = copy.deepcopy(body)
    unit = Decimal(1).scaleb(-money.exponent(currency))
    delta = delta_units * unit * (-1 if negative else 1)
    cart = body["shoppingCartDetails"]
    target = data.draw(st.sampled_from(
        ["item"] + (["tax"] if "totalTaxAmount" in cart else [])
    ))
    if target == "item":
        n = data.draw(st.integers(0, len(cart["itemDetails"]) - 1))
        it = cart["itemDetails"][n]
        new = Decimal(it["totalAmount"]) + delta
        if new < 0:
            new = Decimal(it["totalAmount"]) + abs(delta)
        it["totalAmount"] = f"{new:f}"
        expected = f"shoppingCartDetails.itemDetails[{n}].totalAmount"
    else:
        new = Decimal(cart["totalTaxAmount"]) + delta
        if new < 0:
            new = Decimal(cart["totalTaxAmount"]) + abs(delta)
        cart["totalTaxAmount"] = f"{new:f}"
        expected = "shoppingCartDetails.totalTaxAmount"
    with pytest.raises(RequestValidationError) as info:
        CheckoutRequest.from_wire(body)
    fields = [p for p, _ in info.value.problems]
    assert expected in fields, f"perturbed {expected}, problems named {info.value.problems}"


def test_negative_zero_is_sent_as_zero() -> None:
    item_ = item(discountAmount="-0.00")
    req = CheckoutRequest.from_wire(with_cart(itemDetails=[item_]))
    for fmt, expected in (("decimal", "0.00"), ("minor", "0")):
        wire = req.to_wire(fmt)  # type: ignore[arg-type]
        sent = wire["shoppingCartDetails"]["itemDetails"][0]["discountAmount"]
        assert sent == expected, f"{fmt}: -0.00 sent as {sent!r}"
