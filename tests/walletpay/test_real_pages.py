"""walletpay.js on a real merchant's page, on another origin than the gateway (Chromium).

Buttons that appear late or live in marked containers, the Promise and its error codes,
amounts against the currency's exponent, the reference rule, a missing argument never
echoing the key, the script loaded as a module, a connection lost after the card details
were sent, the TypeScript declaration, a 16th argument, and the credit / prepaid filters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from walletpay.merchant_site import MerchantSite
from walletpay.shop_pages import add_pages, open_sheet, wait_event, wait_outcome

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def shop(sandbox: Any) -> Iterator[str]:
    with add_pages(MerchantSite(sandbox.url)) as site:
        yield site.url


def test_container_rendered_a_second_after_ready(page: Any, shop: str) -> None:
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    page.goto(f"{shop}/empty")
    page.evaluate("""() => {
      document.addEventListener('handleWalletPayReady', () => renderLater(1000,
        '<div id="merchant-wallet-button"><button type="button" id="late">Pay</button></div>'));
      run();
    }""")
    wait_event(page, "handleWalletPayReady")
    # ready fired with no container on the page: a warning naming what is looked for
    assert any('id="merchant-wallet-button"' in w and "data-walletpay-container" in w and
               "WalletPay.attachButton" in w for w in warnings), warnings
    page.wait_for_selector("#late")  # the single-page app renders its button later
    page.click("#late")
    page.wait_for_selector("#walletpay-sheet")
    page.click("#walletpay-cancel")
    assert wait_outcome(page)["code"] == "CANCELED"


def test_marked_container_and_attach_button(page: Any, shop: str) -> None:
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    page.goto(f"{shop}/marked")
    page.evaluate("run({optional: {emailRequired: true}})")
    wait_event(page, "handleWalletPayReady")
    assert warnings == []  # a container exists: nothing to warn about
    page.click("#marked")  # a button inside [data-walletpay-container]
    page.wait_for_selector("#walletpay-sheet")
    page.keyboard.press("Escape")
    page.wait_for_selector("#walletpay-sheet", state="detached")
    page.click("#attached")  # an element given to WalletPay.attachButton
    page.wait_for_selector("#walletpay-sheet")
    assert page.evaluate("location.hash") == ""  # the link's default action was prevented
    page.check("#walletpay-card-mc-token")
    page.click("#walletpay-pay")
    outcome = wait_outcome(page)
    # the first sheet's cancel settled runWalletPay's Promise; the payment reached the events
    assert outcome["code"] == "CANCELED"
    results = wait_event(page, "handlePaymentResult")
    assert results[0]["transactionAccountId"].startswith("ta_")


def test_promise_resolves_with_the_detail(page: Any, shop: str) -> None:
    open_sheet(page, shop)
    page.check("#walletpay-card-visa-token")
    page.click("#walletpay-pay")
    outcome = wait_outcome(page)
    assert outcome["ok"] is True
    detail = outcome["detail"]
    assert detail == wait_event(page, "handlePaymentResult")[0]  # the same object as the event
    assert detail["transactionAccountId"].startswith("ta_")
    assert detail["transactionMethod"] == "WalletPay"
    assert detail["billingAddress"]["countryCode"] == "DE"


def test_promise_rejects_with_codes(page: Any, shop: str) -> None:
    page.goto(f"{shop}/plain")
    page.evaluate("run({key: 'pk_bogus'})")
    outcome = wait_outcome(page)
    assert (outcome["ok"], outcome["name"], outcome["code"]) == (False, "WalletPayError",
                                                                  "GATEWAY_ERROR")
    assert outcome["message"].startswith("publicKeyApi: refused by the gateway (HTTP 401")
    assert outcome["message"] == wait_event(page, "handlePaymentError")[0]
    thrown = page.evaluate("tryRun({amount: '-1'})")
    assert (thrown["name"], thrown["code"], thrown["parameter"]) == (
        "WalletPayError", "DEVELOPER_ERROR", "amount")
    # a newer call replaces a pending one
    page.evaluate("run(); window.pending = window.lastPromise; null")
    wait_event(page, "handleWalletPayReady")  # ready settles nothing; the next call does
    page.evaluate("run()")
    code = page.evaluate("window.pending.then(() => 'resolved', (e) => e.code)")
    assert code == "SUPERSEDED"
    assert page.evaluate("WalletPay.configure({callbackTimeoutMs: 5000})") == {
        "callbackTimeoutMs": 5000}
    bad = page.evaluate("""() => { try { WalletPay.configure({callbackTimeoutMs: 10}); }
                                   catch (e) { return [e.code, e.message]; } }""")
    assert bad[0] == "DEVELOPER_ERROR"
    assert "from 1000 to 120000" in bad[1]


@pytest.mark.parametrize(("currency", "amount", "ok"), [
    ("JPY", "12.34", False), ("JPY", "1234", True), ("KWD", "1.234", True),
    ("EUR", "1.234", False), ("EUR", "12.34", True), ("CLF", "1.2345", True),
])
def test_amount_against_the_currency_exponent(page: Any, shop: str, currency: str,
                                              amount: str, ok: bool) -> None:
    page.goto(f"{shop}/plain")
    thrown = page.evaluate("(o) => tryRun(o)", {"currency": currency, "amount": amount,
                                                "optional": {}})
    if ok:
        assert thrown is None
        wait_event(page, "handleWalletPayReady")
        return
    assert thrown["parameter"] == "amount"
    if currency == "JPY":
        assert thrown["message"] == ("runWalletPay: amount: must be a whole number for JPY "
                                     "(ISO 4217: no minor unit), like 1234")
    else:
        assert "at most 2 decimals for EUR" in thrown["message"]
    assert wait_event(page, "handlePaymentError") == [thrown["message"]]


GOOD_REFS = ["pre order 002606", "#1001", "Bestellung-ä-7", "r" * 64, "\U0001f600" * 64]
BAD_REFS = [("r" * 65, "(65 given)"), ("a\tb", "U+0009"), (" lead", "starts or ends"),
            ("zero\u200bwidth", "U+200B"), ("", "(0 given)"), ("nbsp\u00a0x", "U+00A0")]


def test_references_follow_the_one_rule(page: Any, shop: str) -> None:
    page.goto(f"{shop}/plain")
    for ref in GOOD_REFS:
        assert page.evaluate("(ref) => tryRun({ref, optional: {}})", ref) is None, ref
    for ref, why in BAD_REFS:
        thrown = page.evaluate("(ref) => tryRun({ref, optional: {}})", ref)
        assert thrown is not None, ref
        assert thrown["parameter"] == "clientSystemTransactionId"
        assert thrown["message"].startswith(
            "runWalletPay: clientSystemTransactionId: must be 1-64 printable characters, no "
            "tabs, line breaks or control characters, not starting or ending with a space")
        assert why in thrown["message"], thrown
        if ref:
            assert ref not in thrown["message"]


def test_a_missing_argument_never_echoes_the_key(page: Any, shop: str) -> None:
    page.goto(f"{shop}/plain")
    messages = page.evaluate("""() => {
      const key = document.documentElement.innerHTML.match(/key: "([^"]+)"/)[1];
      try {  // sid forgotten: everything shifts left, profile receives the API key
        runWalletPay('M-1001', 'order-1', ['PAN_ONLY', 'CRYPTOGRAM_3DS'], ['VISA'], 'DE', 'EUR',
                     'FINAL', '12.34', 'test', key, false, '', 'Shop', {});
      } catch (e) { return [key, e.message, window.events.map((x) => x[1]).join(' ')]; }
    }""")
    api_key, message, events = messages
    assert api_key.startswith("pk_")
    assert api_key not in message
    assert api_key not in events
    assert message.startswith("runWalletPay: ")
    with_profile = page.evaluate("""(key) => {
      try { runWalletPay('M-1001', 'S-01', 'order-1', ['PAN_ONLY', 'CRYPTOGRAM_3DS'], ['VISA'],
                         'DE', 'EUR', 'FINAL', '12.34', key, false, '', 'Shop', {}); }
      catch (e) { return e.message; } }""", api_key)
    assert api_key not in with_profile
    assert with_profile.startswith("runWalletPay: profile: must be test or prod (the value is "
                                   "not shown; is an argument missing?")


def test_loaded_as_a_module(page: Any, shop: str, sandbox: Any) -> None:
    page.goto(f"{shop}/module")
    page.wait_for_function("typeof window.run === 'function'")
    assert page.evaluate("WalletPay.gateway") == sandbox.url
    page.evaluate("run({optional: {}})")
    wait_event(page, "handleWalletPayReady")  # the key was checked with the right gateway


def test_connection_lost_after_the_card_details_were_sent(page: Any, shop: str) -> None:
    made: list[int] = []

    def drop_answer(route: Any) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        made.append(route.fetch().status)  # the gateway makes and stores the account...
        route.abort("connectionreset")  # ...and the browser never sees the answer

    page.route("**/api/v5/paymentAccounts", drop_answer)
    open_sheet(page, shop, optional={"emailRequired": True})
    page.click("#walletpay-pay")
    outcome = wait_outcome(page)
    assert made == [200]
    assert outcome["code"] == "NETWORK"
    message = outcome["message"]
    assert "was lost after the card details were sent" in message
    assert "nothing was charged" in message
    assert message != "Failed to fetch"
    assert wait_event(page, "handlePaymentError") == [message]


def test_typescript_declaration_is_served(sandbox: Any) -> None:
    resp = httpx.get(f"{sandbox.url}/walletpay.d.ts")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/typescript")
    assert resp.headers["etag"]
    text = resp.text
    for needle in ("declare function runWalletPay(", "Promise<PaymentResultDetail>",
                   '"CANCELED"', '"DEVELOPER_ERROR"', '"GATEWAY_ERROR"', '"NETWORK"',
                   "attachButton", "callbackTimeoutMs", "interface WalletPayOptionalParams",
                   "handlePaymentError: CustomEvent<string>"):
        assert needle in text, needle


def test_a_sixteenth_argument_is_a_developer_error(page: Any, shop: str) -> None:
    page.goto(f"{shop}/plain")
    thrown = page.evaluate("""() => {
      const key = document.documentElement.innerHTML.match(/key: "([^"]+)"/)[1];
      try {
        runWalletPay('M-1001', 'S-01', 'order-16', ['PAN_ONLY', 'CRYPTOGRAM_3DS'], ['VISA'],
                     'DE', 'EUR', 'FINAL', '12.34', 'test', key, false, '', 'Shop', {},
                     {emailRequired: true});
      } catch (e) { return {name: e.name, code: e.code, parameter: e.parameter,
                            message: e.message}; }
      return null;
    }""")
    assert thrown == {
        "name": "WalletPayError", "code": "DEVELOPER_ERROR", "parameter": "argument 16",
        "message": "runWalletPay: argument 16: runWalletPay takes 15 arguments "
                   "(optionalParams is the last); got 16"}
    assert wait_event(page, "handlePaymentError") == [thrown["message"]]
    assert page.evaluate("window.events.some((e) => e[0] === 'handleWalletPayReady')") is False


@pytest.mark.parametrize(("filters", "hidden"), [
    ({}, set()),
    ({"allowCreditCards": False}, {"visa-pan", "mc-token", "visa-token", "amex-pan", "jcb-pan",
                                   "discover-token", "visa-decline"}),
    ({"allowPrepaidCards": False}, {"mc-prepaid"}),
])
def test_credit_and_prepaid_filters_hide_cards(page: Any, shop: str, sandbox: Any,
                                               filters: dict[str, bool], hidden: set[str]) -> None:
    catalogue = httpx.get(f"{sandbox.url}/wallet/cards").json()["cards"]
    funding = {c["id"]: c["funding"] for c in catalogue}
    assert funding["visa-debit"] == "DEBIT"
    assert funding["mc-prepaid"] == "PREPAID"
    open_sheet(page, shop, optional={"emailRequired": True, **filters})
    shown = set(page.eval_on_selector_all("input[name=walletpay-card]",
                                          "els => els.map((e) => e.value)"))
    assert shown == set(funding) - hidden
    card = "visa-debit" if filters else "mc-prepaid"  # both new cards make accounts
    page.check(f"#walletpay-card-{card}")
    page.click("#walletpay-pay")
    detail = wait_outcome(page)["detail"]
    assert detail["transactionAccountId"].startswith("ta_")
    assert ("cryptogram" in detail) is (card == "visa-debit")  # a device token; PAN_ONLY


def test_no_card_left_after_the_filters(page: Any, shop: str) -> None:
    page.goto(f"{shop}/plain")
    page.evaluate("""() => { window.lastPromise = runWalletPay('M-1001', 'S-01', 'order-f',
        ['PAN_ONLY', 'CRYPTOGRAM_3DS'], ['MASTERCARD'], 'DE', 'EUR', 'FINAL', '12.34', 'test',
        document.documentElement.innerHTML.match(/key: "([^"]+)"/)[1], false, '', 'Shop',
        {allowCreditCards: false, allowPrepaidCards: false,
         existingPaymentMethodRequired: true});
      window.lastPromise.catch((e) => { window.outcome = {code: e.code}; }); }""")
    assert wait_outcome(page)["code"] == "WALLET_UNAVAILABLE"
    assert wait_event(page, "handlePaymentError") == [
        "no usable payment method for the allowed card networks and card kinds"]
