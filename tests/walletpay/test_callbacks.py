"""Merchant callback results are validated (spec 2.7) before anything reaches the sheet.

Each invalid value a merchant's ``onPaymentDataChanged`` / ``onPaymentAuthorized`` returns is
reported (console.error + handlePaymentError naming the field and rule), never shown as if
valid, and an address / option error blocks Pay until the payer fixes it.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser

_RUN = """(cb) => {
  const s = window.demoSession;
  const items = [{label: 'Subtotal', type: 'SUBTOTAL', price: s.amount}];
  const opts = {
    shippingAddressRequired: true, shippingOptionRequired: true,
    shippingOptionParameters: {shippingOptions: [{id: 'std', label: 'Standard'}]},
    callbackIntents: ['SHIPPING_OPTION', 'OFFER'],
    additionalTransactionInfo: {displayItems: items},
    onPaymentDataChanged: (data) => (data.callbackTrigger === 'INITIALIZE'
      ? Promise.resolve({}) : (CHANGED)),
  };
  if (HAS_AUTH) {
    opts.callbackIntents.push('PAYMENT_AUTHORIZATION');
    opts.onPaymentAuthorized = () => (AUTHORIZED);
  }
  runWalletPay(s.merchantId, s.storeId, s.clientSystemTransactionId,
               ['PAN_ONLY', 'CRYPTOGRAM_3DS'], ['VISA', 'MASTERCARD'], 'DE', 'EUR', 'FINAL',
               s.amount, 'test', s.publicKeyApi, false, '', 'Shop', opts);
}"""


def _start(page: Any, sandbox: Any, changed: str, authorized: str = "null") -> list[str]:
    page.goto(f"{sandbox.url}/demo/merchant?scenario=manual&amount=10.00")
    page.wait_for_function("window.demoSession !== undefined")
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.evaluate(_RUN.replace("CHANGED", changed).replace("AUTHORIZED", authorized)
                  .replace("HAS_AUTH", "false" if authorized == "null" else "true"))
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")
    page.click("#merchant-pay-button")
    page.wait_for_selector("#walletpay-sheet")
    return console


def _errors(page: Any) -> list[str]:
    return [e["detail"] for e in page.evaluate("window.demoEvents")
            if e["name"] == "handlePaymentError"]


BAD_UPDATES = [
    ("Promise.resolve({error: {reason: 'OTHER_ERROR', message: 'x', "
     "intent: 'SHIPPING_ADDRESS'}})", "error.intent: must be one of the callbackIntents"),
    ("Promise.resolve({error: {reason: 'OUT_OF_STOCK', message: 'x', intent: 'OFFER'}})",
     "error.reason: must be one of OFFER_INVALID"),
    ("Promise.resolve({error: {reason: 'OFFER_INVALID', intent: 'OFFER'}})",
     "error.message: must be a string"),
    ("Promise.resolve({newTransactionInfo: {totalPrice: 'abc', currencyCode: 'EUR'}})",
     "newTransactionInfo.totalPrice: must be a decimal string"),
    ("Promise.resolve({newTransactionInfo: {totalPrice: '11.00', currencyCode: 'XXX1'}})",
     "newTransactionInfo.currencyCode: must be an ISO 4217"),
    ("Promise.resolve({newTransactionInfo: {totalPrice: '11.00', currencyCode: 'USD'}})",
     "newTransactionInfo.currencyCode: must stay EUR"),
    ("Promise.resolve({newTransactionInfo: {totalPrice: '11.00', displayItems: "
     "[{label: 'x', type: 'TAX', price: '1.00'}]}})",
     "newTransactionInfo.displayItems[0].type: must be one of LINE_ITEM, SUBTOTAL"),
    ("Promise.resolve({newShippingOptionParameters: {shippingOptions: []}})",
     "newShippingOptionParameters.shippingOptions: must not be empty"),
    ("Promise.resolve({newOfferInfo: {offers: [{redemptionCode: 'A'}]}})",
     "newOfferInfo.offers[0].description: must be a string"),
    ("Promise.resolve('ok')", "(result): must be an object"),
    ("Promise.resolve({newTotal: '1.00'})", "(result).newTotal: is not a known field"),
    ("Promise.reject(new Error('boom'))", "(rejection).reason: must be one of"),
]


@pytest.mark.parametrize(("changed", "expected"), BAD_UPDATES,
                         ids=[e.split(":")[0] for _, e in BAD_UPDATES])
def test_invalid_data_changed_value_is_reported_and_not_shown(
    page: Any, sandbox: Any, changed: str, expected: str
) -> None:
    console = _start(page, sandbox, changed)
    page.select_option("#walletpay-shipping-option", "std")
    page.dispatch_event("#walletpay-shipping-option", "change")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    message = f"onPaymentDataChanged: {expected}"
    assert any(e.startswith(message) for e in _errors(page)), _errors(page)
    assert any(message in c for c in console), console
    # nothing of it is shown as valid: the total stays, the error is the wallet's own, Pay waits
    assert page.inner_text("#walletpay-total") == "10.00 EUR"
    assert page.get_attribute("#walletpay-sheet-error", "data-reason") == "OTHER_ERROR"
    assert "cannot use" in page.inner_text("#walletpay-sheet-error")
    assert page.is_disabled("#walletpay-pay")


BAD_RESULTS = [
    ("Promise.resolve({transactionState: 'DONE'})",
     "transactionState: must be one of SUCCESS, ERROR"),
    ("Promise.resolve(undefined)", "(result): must be an object"),
    ("Promise.resolve({transactionState: 'ERROR', error: {reason: 'NOPE', message: 'm', "
     "intent: 'PAYMENT_AUTHORIZATION'}})", "error.reason: must be one of"),
    ("Promise.resolve({transactionState: 'ERROR', error: {reason: 'OTHER_ERROR', "
     "message: 'm', intent: 'SHIPPING_ADDRESS'}})", "error.intent: must be one of the"),
    ("Promise.reject('no')", "(rejection): must be an object"),
]


@pytest.mark.parametrize(("authorized", "expected"), BAD_RESULTS,
                         ids=[e.split(":")[0] for _, e in BAD_RESULTS])
def test_invalid_authorization_result_is_reported_and_the_sheet_stays(
    page: Any, sandbox: Any, authorized: str, expected: str
) -> None:
    _start(page, sandbox, "Promise.resolve({})", authorized)
    page.click("#walletpay-pay")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    assert any(e.startswith(f"onPaymentAuthorized: {expected}") for e in _errors(page)), \
        _errors(page)
    assert page.is_visible("#walletpay-sheet")
    names = [e["name"] for e in page.evaluate("window.demoEvents")]
    assert "handlePaymentResult" not in names
    assert page.is_enabled("#walletpay-pay")  # the payer may try again


def test_unserviceable_address_blocks_pay_until_fixed(page: Any, sandbox: Any) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?scenario=full&ref=cb-unserviceable")
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")
    page.click("#merchant-pay-button")
    page.wait_for_selector("#walletpay-sheet")
    page.select_option("#walletpay-ship-country", "NL")
    page.fill("#walletpay-ship-postal", "9999")
    page.dispatch_event("#walletpay-ship-postal", "change")
    page.wait_for_selector("#walletpay-sheet-error[data-reason=SHIPPING_ADDRESS_UNSERVICEABLE]")
    page.wait_for_function("wpSheet('#walletpay-pay').disabled")
    page.click("#walletpay-pay", force=True)  # a disabled button does nothing
    page.evaluate("wpSheet('#walletpay-pay').dispatchEvent(new Event('click'))")
    assert page.is_visible("#walletpay-sheet")
    assert page.evaluate("window.demoAuthorizeCalls") == 0
    page.fill("#walletpay-ship-postal", "1011")  # the payer fixes the address
    page.dispatch_event("#walletpay-ship-postal", "change")
    page.wait_for_selector("#walletpay-sheet-error", state="hidden")
    page.wait_for_function("!wpSheet('#walletpay-pay').disabled")
    page.click("#walletpay-pay")
    page.wait_for_function("document.querySelector('#result').dataset.outcome !== ''")
    assert page.get_attribute("#result", "data-outcome") == "Approved"
    detail = page.evaluate("window.capturedDetail")
    assert detail["shippingAddress"]["postalCode"] == "1011"


def test_offer_error_does_not_block_pay(page: Any, sandbox: Any) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?scenario=full&ref=cb-offer")
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")
    page.click("#merchant-pay-button")
    page.fill("#walletpay-offer-code", "BOGUS")
    page.click("#walletpay-offer-apply")
    page.wait_for_selector("#walletpay-sheet-error[data-reason=OFFER_INVALID]")
    page.wait_for_function("!wpSheet('#walletpay-pay').disabled")
