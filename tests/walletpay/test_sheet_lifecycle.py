"""The sheet survives the page (Chromium, another origin): a single-page app that removes
``<walletpay-host>`` or re-renders its whole body while the sheet is open, and a second
``runWalletPay`` while a sheet is open (replaced) or paying (refused at once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from walletpay.merchant_site import MerchantSite
from walletpay.shop_pages import BUTTON, add_pages, open_sheet, wait_event, wait_outcome

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def shop(sandbox: Any) -> Iterator[str]:
    with add_pages(MerchantSite(sandbox.url)) as site:
        yield site.url


def _pay_and_wait(page: Any) -> dict[str, Any]:
    page.evaluate("() => wpSheet('#walletpay-pay').click()")
    page.wait_for_function("window.events.some((e) => e[0] === 'handlePaymentResult')")
    detail: dict[str, Any] = page.evaluate(
        "window.events.filter((e) => e[0] === 'handlePaymentResult').pop()[1]")
    return detail


@pytest.mark.parametrize("how", [
    "document.querySelector('walletpay-host').remove()",
    # a framework re-rendering the page: the host goes, the merchant's button is new
    f"document.body.innerHTML = '<main><h1>Shop</h1>{BUTTON}</main>'",
])
def test_the_page_removing_the_open_sheet_cancels_it_and_the_next_payment_works(
        page: Any, shop: str, how: str) -> None:
    open_sheet(page, shop, optional={})
    page.evaluate(how)
    outcome = wait_outcome(page)
    assert (outcome["ok"], outcome["code"]) == (False, "CANCELED"), outcome
    assert "removed the payment sheet" in outcome["message"], outcome
    errors = page.evaluate("window.events.filter((e) => e[0] === 'handlePaymentError')")
    assert errors[-1][1] == outcome["message"]
    assert page.evaluate("document.querySelectorAll('walletpay-host').length") == 0
    # the merchant's (new) button opens a new sheet, which pays
    page.click("#buy")
    page.wait_for_function("!!wpSheet('#walletpay-pay')")
    detail = _pay_and_wait(page)
    assert detail["transactionAccountId"], detail
    assert page.evaluate("document.querySelectorAll('walletpay-host').length") == 0


def test_a_second_call_replaces_the_open_sheet(page: Any, shop: str) -> None:
    open_sheet(page, shop, ref="first-call", optional={})
    page.evaluate("window.first = window.lastPromise; null")
    page.evaluate("run({ref: 'second-call', amount: '20.00', optional: {}})")
    code = page.evaluate("window.first.then(() => 'resolved', (e) => e.code)")
    assert code == "SUPERSEDED"
    # the sheet reopens for the newer call: its total, its reference, one sheet only
    page.wait_for_function("!!wpSheet('#walletpay-total') && "
                           "wpSheet('#walletpay-total').textContent === '20.00 EUR'")
    assert page.evaluate("document.querySelectorAll('walletpay-host').length") == 1
    detail = _pay_and_wait(page)
    assert detail["clientSystemTransactionId"] == "second-call", detail
    assert wait_outcome(page)["ok"] is True
    results = page.evaluate("window.events.filter((e) => e[0] === 'handlePaymentResult')")
    assert len(results) == 1, results


def test_a_second_call_while_the_sheet_is_paying_is_refused_at_once(
        page: Any, shop: str) -> None:
    open_sheet(page, shop, ref="paying-call")
    page.evaluate("window.hangAuth = true; window.first = window.lastPromise;"
                  " wpSheet('#walletpay-pay').click()")
    page.wait_for_function("wpSheet('#walletpay-busy-text').textContent.includes('confirm')")
    refused = page.evaluate("run({ref: 'second-call', amount: '20.00'}); window.lastPromise"
                            ".then(() => 'resolved', (e) => [e.code, e.message])")
    assert refused[0] == "IN_PROGRESS", refused
    assert "in progress" in wait_event(page, "handlePaymentError")[-1]
    # the open payment goes on, untouched
    assert page.evaluate("wpSheet('#walletpay-total').textContent") == "12.34 EUR"
    assert page.evaluate("document.querySelectorAll('walletpay-host').length") == 1
    assert page.evaluate("Promise.race([window.first.then(() => 'settled', () => 'settled'),"
                         " new Promise((r) => setTimeout(() => r('pending'), 200))])") == \
        "pending"
