"""The demo merchant: charges exactly the total the payer approved, once; fits a phone.

Browser tests on ``/demo/merchant`` plus raw HTTP on its server routes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from walletpay.sheet_access import open_context

pytestmark = pytest.mark.browser


def _open(page: Any, sandbox: Any, query: str) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?{query}")
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")
    page.click("#merchant-pay-button")
    page.wait_for_selector("#walletpay-sheet")


def _total_is(page: Any, text: str) -> None:
    page.wait_for_function(f"wpSheet('#walletpay-total').textContent === '{text}'")


def _outcome(page: Any) -> str:
    page.wait_for_function("document.querySelector('#result').dataset.outcome !== ''")
    outcome: str = page.get_attribute("#result", "data-outcome")
    return outcome


@pytest.mark.parametrize("card", ["visa-pan", "mc-token"])
def test_authorized_amount_is_the_sheet_total(page: Any, sandbox: Any, cli: Any,
                                              card: str) -> None:
    ref = f"demo-total-{card}"
    _open(page, sandbox, f"scenario=full&ref={ref}")
    _total_is(page, "12.34 EUR")
    page.select_option("#walletpay-shipping-option", "overnight")
    _total_is(page, "24.84 EUR")
    if card == "mc-token":
        page.fill("#walletpay-offer-code", "SAVE2")
        page.click("#walletpay-offer-apply")
        _total_is(page, "22.84 EUR")
    shown = page.inner_text("#walletpay-total").split()[0]
    page.check(f"#walletpay-card-{card}")
    page.click("#walletpay-pay")
    assert _outcome(page) == "Approved"
    records = cli("lookup", ref)
    assert [Decimal(str(r["transactionAmount"])) for r in records] == [Decimal(shown)], records
    assert shown in page.inner_text("#status")


def test_pay_pressed_while_the_total_changes_does_not_charge_the_old_total(
    page: Any, sandbox: Any, cli: Any
) -> None:
    ref = "demo-race"
    _open(page, sandbox, f"scenario=full&ref={ref}")
    _total_is(page, "12.34 EUR")
    # the option change and the press happen before the shop's new total arrives
    page.evaluate("""() => {
      const sel = wpSheet('#walletpay-shipping-option');
      sel.value = 'express';
      sel.dispatchEvent(new Event('change'));
      wpSheet('#walletpay-pay').click();
    }""")
    page.wait_for_selector("#walletpay-sheet-notice:not([hidden])")
    assert "17.34 EUR" in page.inner_text("#walletpay-sheet-notice")
    assert page.evaluate("window.demoAuthorizeCalls") == 0
    page.click("#walletpay-pay")
    assert _outcome(page) == "Approved"
    assert [Decimal(str(r["transactionAmount"])) for r in cli("lookup", ref)] == \
        [Decimal("17.34")]


def test_an_order_cannot_be_paid_twice(page: Any, sandbox: Any) -> None:
    _open(page, sandbox, "ref=demo-twice")
    page.click("#walletpay-pay")
    assert _outcome(page) == "Approved"
    assert page.is_hidden("#merchant-wallet-button")
    page.evaluate("startWalletPay().catch((e) => e.code)")
    assert page.locator("#walletpay-sheet").count() == 0
    last = page.evaluate("window.demoEvents")[-1]
    assert last["name"] == "handlePaymentError"
    assert "payment is complete" in last["detail"]
    detail = page.evaluate("window.capturedDetail")
    again = httpx.post(f"{sandbox.url}/demo/merchant/api/result", json={"detail": detail})
    assert again.status_code == 409
    assert again.json()["description"] == "DemoOrderPaid"


@pytest.mark.parametrize("width", [320, 360, 375])
def test_fits_a_phone_without_sideways_scrolling(browser: Any, sandbox: Any, width: int) -> None:
    context = open_context(browser, viewport={"width": width, "height": 740}, is_mobile=True,
                                  has_touch=True, device_scale_factor=2)
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        _open(page, sandbox, f"scenario=full&ref=demo-phone-{width}")
        assert page.evaluate("window.innerWidth") == width  # the viewport meta is honoured
        box = page.locator(".walletpay-sheet-box").bounding_box()
        assert box["x"] >= 0, box
        assert box["x"] + box["width"] <= width, box
        overflowing = page.evaluate("""() => [...wpSheet('#walletpay-sheet').querySelectorAll('*')]
            .filter((el) => el.getBoundingClientRect().right > innerWidth + 0.5)
            .map((el) => el.id || el.tagName)""")
        assert overflowing == []
        page.check("#walletpay-card-mc-token")
        page.click("#walletpay-pay")
        assert _outcome(page) == "Approved"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()


def test_page_load_has_no_failed_requests(page: Any, sandbox: Any) -> None:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400
            else None)
    page.goto(f"{sandbox.url}/demo/merchant?ref=demo-404")
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")
    assert failed == []


# -- the demo server over raw HTTP -------------------------------------------------------------


def test_session_is_only_for_the_demo_merchant(sandbox: Any) -> None:
    for query in ("merchantId=M-2002", "storeId=S-99"):
        resp = httpx.get(f"{sandbox.url}/demo/merchant/api/session?{query}")
        assert resp.status_code == 400
        assert "the demo merchant is" in resp.json()["details"]["message"]
    ok = httpx.get(f"{sandbox.url}/demo/merchant/api/session").json()
    assert (ok["merchantId"], ok["storeId"]) == ("M-1001", "S-01")
    assert "encryptionKeyId" not in ok  # the page gets the public API key only


def test_results_are_bounded_and_never_hold_a_cryptogram(sandbox: Any) -> None:
    with httpx.Client(base_url=sandbox.url) as client:
        for i in range(105):
            client.post("/demo/merchant/api/result", json={"detail": {
                "clientSystemTransactionId": f"nope-{i}", "cryptogram": "SECRET-CRYPTOGRAM",
                "pan": "4111"}})
        results = client.get("/demo/merchant/api/results").json()["results"]
    assert len(results) == 100
    assert "SECRET-CRYPTOGRAM" not in str(results)
    assert "pan" not in results[-1]["detail"]
