"""The merchant-facing test driver (/walletpay-testing.js, WalletPayTesting) in Chromium.

Every page here is a plain context (conftest's ``driven_page``): no shadow root is opened, the
driver is the only way in.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from walletpay.conftest import drive, driver_token
from walletpay.merchant_site import MerchantSite


def _shop(title: str, reference: str, profile: str, merchant_number: str,
          handlers: str = "") -> str:
    """A merchant page with the wallet button, paying 5.00 EUR (served by the merchant site,
    another origin); ``handlers``: the page's own callbacks."""
    return f"""<!doctype html><html lang="en"><head><title>{title}</title>
<script src="__GATEWAY__/walletpay.js"></script></head><body>
<div id="merchant-wallet-button" hidden><button type="button">Pay</button></div>
<script>
  function handleWalletPayReady() {{
    document.getElementById("merchant-wallet-button").hidden = false;
  }}{handlers}
  runWalletPay("M-1001", "S-01", "{reference}", ["PAN_ONLY", "CRYPTOGRAM_3DS"], ["VISA"], "DE",
               "EUR", "FINAL", "5.00", "{profile}", "__KEY__", false, "{merchant_number}",
               "Shop", {{}});
</script></body></html>"""


# A merchant page paying in profile prod.
PROD_PAGE = _shop("Prod shop", "prod-1", "prod", "MN-100000000001")
# A shop that leaves for its confirmation page the moment it has the payment (no fetch first).
LEAVING_PAGE = _shop("Leaving shop", "leave-1", "test", "", handlers="""
  function handlePaymentResult() { location.assign("/thanks"); }""")


def _result(sandbox: Any, reference: str) -> dict[str, Any]:
    found = [r for r in httpx.get(f"{sandbox.url}/demo/merchant/api/results").json()["results"]
             if r["detail"].get("clientSystemTransactionId") == reference]
    assert found, f"no demo result for {reference}"
    return dict(found[-1])


@pytest.mark.browser
def test_pay_resolves_with_the_detail_the_page_received(driven_page: Any, sandbox: Any) -> None:
    driven_page.goto(f"{sandbox.url}/demo/merchant?ref=drv-token")
    detail = drive(driven_page, sandbox, "WalletPayTesting.pay({token: T, card: 'mc-token'})")
    assert detail == driven_page.evaluate("window.capturedDetail")
    assert detail["transactionAccountId"].startswith("ta_")
    assert detail["eciIndicator"] == "02"
    driven_page.wait_for_function("document.querySelector('#merchant-wallet-button').hidden")
    assert _result(sandbox, "drv-token")["outcome"] == "Approved"


@pytest.mark.browser
def test_sections_shipping_option_and_offer(driven_page: Any, sandbox: Any) -> None:
    driven_page.goto(f"{sandbox.url}/demo/merchant?scenario=full&ref=drv-full")
    detail = drive(driven_page, sandbox, """WalletPayTesting.pay({token: T, card: 'visa-token',
        email: 'ada@shop.example', billing: {name: 'Ada L', postalCode: '10117'},
        shipping: {name: 'Ada L', countryCode: 'DE', postalCode: '80331'},
        shippingOption: 'overnight', offer: 'SAVE2'})""")
    assert detail["email"] == "ada@shop.example"
    assert detail["billingAddress"]["postalCode"] == "10117"
    assert detail["shippingAddress"]["postalCode"] == "80331"
    driven_page.wait_for_function("document.querySelector('#merchant-wallet-button').hidden")
    result = _result(sandbox, "drv-full")
    # 12.34 + overnight 12.50 - SAVE2 2.00: the total the sheet showed is what was charged
    assert (result["amount"], result["outcome"]) == ("22.84", "Approved")


@pytest.mark.browser
@pytest.mark.parametrize(("options", "message"), [
    ("{card: 'no-such-card'}", "card: \"no-such-card\" is not offered on this sheet"),
    ("{cardd: 'mc-token'}", "pay: cardd: is not an option"),
    ("{card: 'mc-token', offer: 'NOPE'}", "the sheet shows OFFER_INVALID: Unknown offer code"),
    ("{card: 'mc-token', shippingOption: 'teleport'}", "shippingOption: \"teleport\" is not one"),
    ("{shipping: {countryCode: 'NL', postalCode: '9999 AA'}}",
     "SHIPPING_ADDRESS_UNSERVICEABLE"),
    ("{billing: {planet: 'Mars'}}", "fill: billing.planet: is not a field"),
])
def test_refusals_name_the_problem(driven_page: Any, sandbox: Any, options: str,
                                   message: str) -> None:
    driven_page.goto(f"{sandbox.url}/demo/merchant?scenario=full")
    with pytest.raises(Exception, match="WalletPayTesting: ") as caught:
        drive(driven_page, sandbox, f"WalletPayTesting.pay({{token: T, ...{options}}})")
    assert message in str(caught.value)


@pytest.mark.browser
def test_cancel_and_the_step_by_step_calls(driven_page: Any, sandbox: Any) -> None:
    driven_page.goto(f"{sandbox.url}/demo/merchant?scenario=full")
    driven_page.evaluate("(t) => { window.s = WalletPayTesting.session(t); }",
                         driver_token(sandbox))
    opened = driven_page.evaluate("s.open()")
    assert opened["open"]
    assert opened["cards"][0] == "visa-pan"
    assert opened["sections"] == ["email", "billing", "shipping", "shippingOption", "offer"]
    assert driven_page.evaluate("s.chooseCard('amex-pan')")["card"] == "amex-pan"
    express = driven_page.evaluate("s.chooseShippingOption('express')")
    assert express["total"] == "17.34"
    message = drive(driven_page, sandbox, "WalletPayTesting.cancel({token: T})")
    assert message.startswith("CANCELED: ")
    assert driven_page.evaluate("s.state()")["open"] is False


@pytest.mark.browser
def test_the_page_still_cannot_read_the_sheet(driven_page: Any, sandbox: Any) -> None:
    # the page's earliest listener (an init script after the driver's) never sees the port
    driven_page.context.add_init_script("""window.seenPorts = 0;
        window.addEventListener('walletpay-testing-connect', () => { window.seenPorts++; },
                                true);""")
    driven_page.goto(f"{sandbox.url}/demo/merchant")
    drive(driven_page, sandbox, "WalletPayTesting.session(T).open()")
    assert driven_page.evaluate("document.querySelector('walletpay-host').shadowRoot") is None
    assert driven_page.evaluate("window.seenPorts") == 0
    assert drive(driven_page, sandbox,
                 "WalletPayTesting.pay({token: T, card: 'visa-token'})")["cryptogram"]


@pytest.mark.browser
def test_a_prod_profile_sheet_is_never_driven(driven_page: Any, sandbox: Any) -> None:
    with MerchantSite(sandbox.url) as site:  # another origin, as a merchant's shop
        site.pages["/prod"] = PROD_PAGE
        driven_page.goto(f"{site.url}/prod")
        with pytest.raises(Exception, match="a prod profile's payment sheet is never driven"):
            drive(driven_page, sandbox, "WalletPayTesting.pay({token: T, card: 'visa-token'})")


@pytest.mark.browser
def test_challenge_refuses_any_other_page(driven_page: Any, sandbox: Any) -> None:
    driven_page.goto(f"{sandbox.url}/demo/merchant")
    with pytest.raises(Exception, match="3-D Secure: timed out after 300 ms waiting for the "
                                        "sandbox's 3-D Secure page"):
        driven_page.evaluate("WalletPayTesting.challenge('pass', 300)")
    with pytest.raises(Exception, match='outcome must be "pass" or "fail"'):
        driven_page.evaluate("WalletPayTesting.challenge('maybe')")
    assert json.loads(json.dumps(driven_page.evaluate("WalletPayTesting.events()"))) == [
        {"type": "handleWalletPayReady", "detail": None}]


def test_the_driver_is_served_like_the_script(sandbox: Any) -> None:
    with httpx.Client(base_url=sandbox.url) as http:
        first = http.get("/walletpay-testing.js", headers={"Accept-Encoding": "gzip"})
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("application/javascript")
        assert first.headers["content-encoding"] == "gzip"
        assert "global.WalletPayTesting = Object.freeze" in first.text
        again = http.get("/walletpay-testing.js", headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304
    # the driver holds no way into the sheet but the port
    assert "attachShadow" not in first.text
    assert "shadowRoot" not in first.text


def test_the_python_helper_names_the_missing_playwright(monkeypatch: pytest.MonkeyPatch,
                                                        sandbox: Any) -> None:
    import sys

    from walletctl.testing.browser import WalletPayBrowser

    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    with pytest.raises(RuntimeError, match="needs Playwright: pip install playwright"):
        WalletPayBrowser(sandbox.url).start()


@pytest.mark.browser
def test_the_python_helper_answers_a_shop_that_leaves_at_once(driven_page: Any,
                                                              sandbox: Any) -> None:
    """WalletPayPage.pay's answer is a request the page sends and the test's route takes: a
    shop that navigates the moment it has the payment cannot take the answer with it (an
    evaluate's value, a binding's call or a console line can be lost that way)."""
    from playwright.sync_api import Error

    from walletctl.testing.browser import WalletPayPage

    with MerchantSite(sandbox.url) as site:
        site.pages["/leave"] = LEAVING_PAGE
        site.pages["/thanks"] = "<!doctype html><title>Thanks</title><p>Thanks</p>"
        checkout = WalletPayPage(driven_page, token=lambda: driver_token(sandbox))
        for _ in range(10):
            driven_page.goto(f"{site.url}/leave")
            detail = checkout.pay("visa-token")
            assert detail["transactionAccountId"].startswith("ta_"), detail
            driven_page.wait_for_url("**/thanks")
        driven_page.goto(f"{site.url}/leave")
        with pytest.raises(Error, match=r"WalletPayTesting: .*no-such-card"):
            checkout.pay("no-such-card")
