"""Real-browser tests: headless Chromium (Debian's ``chromium``) driven by Playwright.

One sandbox on a real loopback port and one browser per module. The demo merchant page
(``/demo/merchant``) loads ``/walletpay.js``; the tests click through the emulated wallet
sheet and then use ``walletctl account`` / ``authorize`` / ``lookup`` on what the merchant
server received. Without a Chromium binary the module is skipped with a loud reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletpay.cli_flow import authorize_event

pytestmark = pytest.mark.browser

def _open_demo(page: Any, sandbox: Any, query: str) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?{query}")
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")


def _pay(page: Any, card: str) -> None:
    page.click("#merchant-pay-button")
    page.wait_for_selector("#walletpay-sheet")
    page.check(f"#walletpay-card-{card}")
    page.click("#walletpay-pay")


def _wait_outcome(page: Any) -> str:
    page.wait_for_function("document.querySelector('#result').dataset.outcome !== ''")
    outcome: str = page.get_attribute("#result", "data-outcome")
    return outcome


def _received(sandbox: Any, ref: str) -> dict[str, Any]:
    results = httpx.get(f"{sandbox.url}/demo/merchant/api/results").json()["results"]
    found = [r for r in results if r["detail"].get("clientSystemTransactionId") == ref]
    assert len(found) == 1, results
    record: dict[str, Any] = found[0]
    return record


@pytest.mark.parametrize("card", ["visa-pan", "mc-token"])
def test_each_card_reaches_the_merchant_then_cli_authorizes(
    page: Any, sandbox: Any, cli: Any, tmp_path: Path, card: str
) -> None:
    ref = f"browser-{card}"
    _open_demo(page, sandbox, f"authorize=0&ref={ref}")
    _pay(page, card)
    assert _wait_outcome(page) == "account"
    record = _received(sandbox, ref)
    assert record["stored"]["cryptogram"] is card.endswith("token")
    detail = page.evaluate("window.capturedDetail")  # as the merchant's own listener got it
    if "cryptogram" in detail:  # the demo's results and page never show the cryptogram
        assert detail["cryptogram"] not in json.dumps(record)
        assert detail["cryptogram"] not in page.inner_text("body")
        assert detail["cryptogram"] not in json.dumps(page.evaluate("window.demoEvents"))
    assert record["detail"]["transactionAccountId"] == detail["transactionAccountId"]
    assert detail["transactionAccountId"].startswith("ta_")
    assert detail["transactionMethod"] == "WalletPay"
    is_token = card.endswith("token")
    assert ("cryptogram" in detail) is is_token, detail
    assert ("eciIndicator" in detail) is is_token, detail
    assert None not in detail.values()
    assert record["account"]["cardType"] == ("Token" if is_token else "Card")
    hidden = (detail["cryptogram"],) if is_token else ()

    key_id = record["encryptionKeyId"]
    acct = cli("account", detail["transactionAccountId"], "--encryption-key-id", key_id,
               hidden=hidden)
    assert acct["cardType"] == record["account"]["cardType"]
    assert "*" in acct["maskedCardNumber"]

    tx = authorize_event(cli, sandbox.url, tmp_path, detail, key_id, is_token=is_token,
                         hidden=hidden)
    assert tx["state"] == "Approved", tx
    assert tx["clientSystemTransactionId"] == ref
    records = cli("lookup", ref)
    assert [(r["state"], r["clientSystemTransactionId"]) for r in records] == [("Approved", ref)]


def test_merchant_server_authorizes_a_preauth(page: Any, sandbox: Any, cli: Any) -> None:
    ref = "browser-server-auth"
    _open_demo(page, sandbox, f"ref={ref}&type=preauth&amount=20.00")
    _pay(page, "visa-token")
    assert _wait_outcome(page) == "Approved"
    record = _received(sandbox, ref)
    assert record["transaction"]["state"] == "Approved"
    records = cli("lookup", ref)
    assert records[0]["state"] == "Approved"
    assert records[0]["type"] in ("ecom.preauthorization", "ecom.preAuthorisation")


def test_success_detail_has_exactly_the_requested_fields(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "authorize=0&ref=browser-fields")
    _pay(page, "visa-pan")
    _wait_outcome(page)
    events = page.evaluate("window.demoEvents")
    results = [e for e in events if e["name"] == "handlePaymentResult"]
    assert len(results) == 1, events
    detail = results[0]["detail"]
    assert set(detail) == {"clientSystemTransactionId", "transactionAccountId",
                           "transactionMethod", "email", "billingAddress"}, detail
    assert detail["billingAddress"] == {"name": "Test Payer", "postalCode": "10115",
                                        "countryCode": "DE"}


BAD_CALLS = [
    ("currencyCode", "'EURO'", "currencyCode: must be an ISO 4217"),
    ("amountStatus", "'ESTIMATED'", "amountStatus: must be FINAL"),
    ("allowedCardNetworks", "['VISA', 'INTERAC']", "allowedCardNetworks[1]: must be one of"),
    ("allowedMethods", "['PAN_ONLY']", "allowedMethods: must be"),
    ("amount", "'12,50'", "amount: must be a decimal string"),
    ("profile", "'live'", "profile: must be test or prod"),
    ("merchantNo", "'short'", "merchantNo: must be a string of 12 to 18 characters"),
    ("optionalParams", "{buttonColor: 'red'}", "optionalParams.buttonColor: must be one of"),
    ("optionalParams", "{callbackIntents: ['SHIPPING_OPTION']}",
     "optionalParams.onPaymentDataChanged: is required"),
    ("optionalParams",
     "{additionalTransactionInfo: {checkoutOption: 'NOW'}}",
     "optionalParams.additionalTransactionInfo.checkoutOption: must be one of"),
    ("optionalParams", "{shippingOptionRequired: true, shippingAddressRequired: true}",
     "optionalParams.shippingOptionParameters: is required"),
    ("optionalParams", "{emialRequired: true}", "optionalParams.emialRequired: is not a known"),
]

_CALL = """(args) => {
  const a = Object.assign({
    mid: 'M-1001', sid: 'S-01', ref: 'bad-1', methods: ['PAN_ONLY', 'CRYPTOGRAM_3DS'],
    networks: ['VISA'], country: 'DE', currencyCode: 'EUR', amountStatus: 'FINAL',
    amount: '12.34', profile: 'test', key: window.demoSession.publicKeyApi, button: false,
    merchantNo: '', name: 'Shop', optionalParams: undefined}, args);
  try {
    runWalletPay(a.mid, a.sid, a.ref, a.methods, a.networks, a.country, a.currencyCode,
                 a.amountStatus, a.amount, a.profile, a.key, a.button, a.merchantNo, a.name,
                 a.optionalParams);
    return {thrown: null};
  } catch (e) {
    return {thrown: {name: e.name, message: e.message, parameter: e.parameter,
                     isWalletPayError: e instanceof WalletPayError}};
  }
}"""

_ARG_NAMES = {"allowedCardNetworks": "networks", "allowedMethods": "methods"}


def test_bad_arguments_throw_and_raise_handle_payment_error(page: Any, sandbox: Any) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?scenario=manual")
    page.wait_for_function("window.demoSession !== undefined")
    for param, js_value, expected in BAD_CALLS:
        name = _ARG_NAMES.get(param, param)
        before = len(page.evaluate("window.demoEvents"))
        result = page.evaluate(f"(f) => f({{{name}: {js_value}}})".replace(
            "(f) => f", f"({_CALL})"))
        thrown = result["thrown"]
        assert thrown is not None, f"{param}={js_value} was accepted"
        assert thrown["name"] == "WalletPayError"
        assert thrown["isWalletPayError"] is True
        assert thrown["message"].startswith(f"runWalletPay: {expected}"), thrown
        events = page.evaluate("window.demoEvents")[before:]
        assert events == [{"name": "handlePaymentError", "detail": thrown["message"]}], events
    # and a good call is accepted and becomes ready
    assert page.evaluate(f"({_CALL})({{}})")["thrown"] is None
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")


def test_payment_authorized_error_then_success(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "scenario=full&failFirst=1&ref=browser-retry")
    _pay(page, "mc-token")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    assert "please try again" in page.inner_text("#walletpay-sheet-error")
    assert page.get_attribute("#walletpay-sheet-error", "data-reason") == "PAYMENT_DATA_INVALID"
    assert page.is_visible("#walletpay-sheet"), "ERROR must keep the sheet open"
    names = [e["name"] for e in page.evaluate("window.demoEvents")]
    assert "handlePaymentResult" not in names
    page.click("#walletpay-pay")  # retry
    page.wait_for_selector("#walletpay-sheet", state="detached")
    assert _wait_outcome(page) == "Approved"
    assert page.evaluate("window.demoAuthorizeCalls") == 2
    names = [e["name"] for e in page.evaluate("window.demoEvents")]
    assert names.count("handlePaymentResult") == 1
    detail = _received(sandbox, "browser-retry")["detail"]
    assert detail["shippingAddress"]["countryCode"] == "DE"
    assert "cryptogram" not in detail
    assert detail["email"] == "payer@example.com"


def test_shipping_option_and_offer_update_the_total(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "scenario=full&ref=browser-shipping&amount=10.00")
    page.click("#merchant-pay-button")
    page.wait_for_selector("#walletpay-sheet")

    def total_is(text: str) -> None:
        page.wait_for_function(
            f"wpSheet('#walletpay-total').textContent === '{text}'")

    total_is("10.00 EUR")
    page.select_option("#walletpay-shipping-option", "express")
    total_is("15.00 EUR")
    page.select_option("#walletpay-shipping-option", "overnight")
    total_is("22.50 EUR")
    page.fill("#walletpay-offer-code", "BOGUS")
    page.click("#walletpay-offer-apply")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    assert page.get_attribute("#walletpay-sheet-error", "data-reason") == "OFFER_INVALID"
    page.fill("#walletpay-offer-code", "SAVE2")
    page.click("#walletpay-offer-apply")
    total_is("20.50 EUR")
    assert page.is_hidden("#walletpay-sheet-error")
    assert "SAVE2" in page.inner_text("#walletpay-offers")
    # an unserviceable address is reported through onPaymentDataChanged's error
    page.select_option("#walletpay-ship-country", "NL")
    page.fill("#walletpay-ship-postal", "9999")
    page.dispatch_event("#walletpay-ship-postal", "change")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    assert page.get_attribute("#walletpay-sheet-error", "data-reason") == \
        "SHIPPING_ADDRESS_UNSERVICEABLE"
    countries = page.eval_on_selector_all("#walletpay-ship-country option", "os => os.map(o => "
                                          "o.value)")
    assert countries == ["DE", "FR", "NL"]


def test_wallet_button_and_cancel(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "scenario=full&walletButton=1&ref=browser-button")
    button = page.locator("#merchant-wallet-button .walletpay-button")
    assert button.inner_text() == "Buy with WalletPay"
    assert button.get_attribute("data-button-color") == "white"
    assert button.get_attribute("data-button-size-mode") == "fill"
    button.click()
    page.wait_for_selector("#walletpay-sheet")
    assert "Unverified merchant" in page.inner_text("#walletpay-sheet")
    page.click("#walletpay-cancel")
    page.wait_for_selector("#walletpay-sheet", state="detached")
    events = page.evaluate("window.demoEvents")
    assert events[-1]["name"] == "handlePaymentError"
    assert events[-1]["detail"].startswith("CANCELED")
