"""The driver's waits and the step its errors name (Chromium, a plain context).

``timeoutMs`` bounds the wait for walletpay.js too; ``pay()`` presses the merchant's own button
and fails, naming the button, on a page whose button never appears (``openDirectly`` pays
there); the Python fixture's ``challenge()`` on a page that never reaches 3-D Secure names the
step and the page; the hosted 3DS page shows the shop's display name.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from walletctl.testing.browser import WalletPayPage
from walletpay.conftest import SERVER_AUTH, driver_token
from walletpay.merchant_site import MerchantSite
from walletpay.test_three_ds import Shop

# a shop whose button is never shown (its container stays empty)
NO_BUTTON = """<!doctype html><html lang="en"><head><title>No button</title>
<script src="__GATEWAY__/walletpay.js"></script></head><body>
<div id="merchant-wallet-button"></div>
<script>
  runWalletPay("M-1001", "S-01", "nb-" + Date.now(), ["PAN_ONLY", "CRYPTOGRAM_3DS"], ["VISA"],
               "DE", "EUR", "FINAL", "5.00", "test", "__KEY__", false, "", "Shop", {});
</script></body></html>"""
NO_SCRIPT = "<!doctype html><title>No wallet</title><p>This page never loads walletpay.js</p>"


@pytest.fixture(scope="module")
def shop(sandbox: Any) -> Iterator[str]:
    with MerchantSite(sandbox.url) as site:
        site.pages["/no-button"] = NO_BUTTON
        site.pages["/no-script"] = NO_SCRIPT
        yield site.url


def _refusal(pg: Any, sandbox: Any, options: str) -> tuple[str, float]:
    started = time.monotonic()
    message = pg.evaluate(f"(T) => WalletPayTesting.pay({{token: T, {options}}})"
                          ".then(() => 'paid', (e) => e.message)", driver_token(sandbox))
    return str(message), time.monotonic() - started


@pytest.mark.browser
def test_timeouts_and_the_merchant_button(driven_page: Any, sandbox: Any, shop: str) -> None:
    driven_page.goto(f"{shop}/no-script")
    message, took = _refusal(driven_page, sandbox, "timeoutMs: 300")
    assert message.startswith("WalletPayTesting: walletpay.js: timed out after 300 ms "
                              "waiting for the sandbox's walletpay.js"), message
    assert took < 5, took  # not the default 20 s
    driven_page.goto(f"{shop}/no-button")
    message, took = _refusal(driven_page, sandbox, "card: 'visa-token', timeoutMs: 500")
    assert message.startswith("WalletPayTesting: button: timed out after 500 ms waiting for "
                              "a visible, enabled merchant button"), message
    assert "openDirectly: true" in message
    assert took < 5, took
    assert driven_page.evaluate("document.querySelector('walletpay-host')") is None
    detail = driven_page.evaluate("(T) => WalletPayTesting.pay({token: T, card: 'visa-token',"
                                  " openDirectly: true})", driver_token(sandbox))
    assert detail["transactionAccountId"].startswith("ta_"), detail


@pytest.mark.browser
def test_the_fixture_names_a_missing_3ds_step(driven_page: Any, sandbox: Any,
                                              shop: str) -> None:
    from playwright.sync_api import Error

    driven_page.goto(f"{shop}/no-button")
    checkout = WalletPayPage(driven_page, token=lambda: driver_token(sandbox))
    with pytest.raises(Error) as caught:
        checkout.challenge("pass", timeout_ms=300)
    message = str(caught.value)
    assert message.startswith("WalletPayTesting: 3-D Secure: the page did not reach the "
                              "sandbox's 3-D Secure page (/pay/3ds/...) within 300 ms; it is "
                              f"at {shop}/no-button"), message


def test_the_3ds_page_names_the_shop(sandbox: Any) -> None:
    shop = Shop(sandbox.url, "3ds-named")
    named = shop.challenge(merchantName="Müller's Bikes").json()
    html = httpx.get(named["challengeUrl"]).text
    assert '<td id="threeds-merchant">Müller&#x27;s Bikes</td>' in html, html
    assert "M-1001 / S-01" not in html
    # without a name the page still says whose payment it is: the merchant and store ids
    plain = Shop(sandbox.url, "3ds-unnamed").challenge().json()
    assert '<td id="threeds-merchant">M-1001 / S-01</td>' in httpx.get(
        plain["challengeUrl"]).text
    too_long = shop.challenge(merchantName="x" * 101, headers=SERVER_AUTH)
    assert too_long.status_code == 400, too_long.text
    assert "merchantName" in too_long.text
