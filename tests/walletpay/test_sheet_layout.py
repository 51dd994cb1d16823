"""The payment sheet on a real merchant's page (Chromium, another origin than the gateway).

Isolation from the page's CSS and DOM, the total and Pay on screen together with every
optional section on (phone and desktop), the busy state and the callback timeout.
Screenshots of the open sheet go to tests/artifacts/sheet-{320,360,1280}.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from walletpay.merchant_site import MerchantSite
from walletpay.sheet_access import open_context
from walletpay.shop_pages import add_pages, open_sheet, wait_event, wait_outcome

pytestmark = pytest.mark.browser

STYLE_PROBES = {  # element -> computed properties that the page's CSS must not change
    "#walletpay-total": ("color", "font-family", "letter-spacing", "font-size"),
    "#walletpay-total-label": ("color",),
    ".walletpay-card span": ("color", "font-family"),
    "input[name=walletpay-card]": ("opacity", "appearance", "width", "position"),
    "#walletpay-pay": ("background-color", "color", "padding-top", "min-height", "display"),
    ".walletpay-body": ("padding-top", "overflow-y"),
    "#walletpay-cards": ("padding-top", "border-top-width"),
}


@pytest.fixture(scope="module")
def shop(sandbox: Any) -> Iterator[str]:
    with add_pages(MerchantSite(sandbox.url)) as site:
        yield site.url


def _styles(page: Any) -> dict[str, dict[str, str]]:
    styles: dict[str, dict[str, str]] = page.evaluate("""(probes) => {
      const out = {};
      for (const [sel, props] of Object.entries(probes)) {
        const cs = getComputedStyle(wpSheet(sel));
        out[sel] = Object.fromEntries(props.map((p) => [p, cs.getPropertyValue(p)]));
      }
      return out;
    }""", {k: list(v) for k, v in STYLE_PROBES.items()})
    return styles


def _sheet_shot(page: Any) -> bytes:
    # inside the rounded corners (there, the page shows through the overlay)
    box = page.locator(".walletpay-sheet-box").bounding_box()
    clip = {"x": box["x"] + 8, "y": box["y"] + 8, "width": box["width"] - 16,
            "height": box["height"] - 16}
    shot: bytes = page.screenshot(clip=clip, animations="disabled")
    return shot


def test_hostile_css_changes_nothing(browser: Any, shop: str, artifacts: Path) -> None:
    context = open_context(browser, viewport={"width": 800, "height": 900},
                           device_scale_factor=1)
    try:
        page = context.new_page()
        open_sheet(page, shop, "/plain")
        plain, plain_styles = _sheet_shot(page), _styles(page)
        page.goto("about:blank")
        open_sheet(page, shop, "/hostile")
        # the page's rules did apply to the page itself...
        assert page.evaluate("getComputedStyle(document.querySelector('h1')).color") == \
            "rgb(238, 238, 238)"
        hostile, hostile_styles = _sheet_shot(page), _styles(page)
        (artifacts / "sheet-plain-css.png").write_bytes(plain)
        (artifacts / "sheet-hostile-css.png").write_bytes(hostile)
        # ...and not to the sheet: same computed styles, the same pixels
        assert hostile_styles == plain_styles
        assert plain_styles["#walletpay-total"]["color"] == "rgb(17, 17, 17)"
        assert plain_styles["input[name=walletpay-card]"]["opacity"] == "1"
        assert plain_styles["input[name=walletpay-card]"]["appearance"] == "auto"
        assert hostile == plain, "the sheet looks different under the page's CSS"
        # which card is chosen stays visible: the checked card's row is highlighted
        assert page.evaluate("""() => getComputedStyle(
            wpSheet('input[name=walletpay-card]:checked').closest('label')).backgroundColor""") \
            == "rgb(232, 240, 251)"
    finally:
        context.close()


def test_the_page_cannot_read_the_sheet(browser: Any, shop: str) -> None:
    context = browser.new_context()  # the real, closed shadow root (no test access)
    try:
        page = context.new_page()
        page.goto(f"{shop}/plain")
        page.evaluate("run({optional: {emailRequired: true}})")
        wait_event(page, "handleWalletPayReady")
        page.click("#buy")
        page.wait_for_selector("walletpay-host", state="attached")
        seen = page.evaluate("""() => ({
          shadowRoot: document.querySelector('walletpay-host').shadowRoot,
          cards: document.querySelectorAll('input[name=walletpay-card]').length,
          sheet: document.getElementById('walletpay-sheet'),
          text: document.body.innerText,
          html: document.documentElement.outerHTML,
        })""")
        assert seen["shadowRoot"] is None
        assert seen["cards"] == 0
        assert seen["sheet"] is None
        for text in (seen["text"], seen["html"]):
            assert "••••" not in text
            assert "walletpay-card" not in text
        page.keyboard.press("Escape")  # the closed sheet still works from the keyboard
        page.wait_for_selector("walletpay-host", state="detached")
    finally:
        context.close()


def _assert_total_and_pay_on_screen(page: Any, width: int, height: int) -> None:
    for sel in ("#walletpay-total-line", "#walletpay-pay", "#walletpay-cancel"):
        box = page.locator(sel).bounding_box()
        assert box is not None, sel
        assert box["x"] >= 0, (sel, box)
        assert box["x"] + box["width"] <= width, (sel, box)
        assert box["y"] >= 0, (sel, box)
        assert box["y"] + box["height"] <= height, (sel, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize(("width", "height"), [(320, 640), (360, 740), (1280, 800)])
def test_total_and_pay_visible_together_with_every_section(
        browser: Any, shop: str, artifacts: Path, width: int, height: int) -> None:
    context = open_context(browser, viewport={"width": width, "height": height},
                           is_mobile=width < 400, has_touch=width < 400, device_scale_factor=1)
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        open_sheet(page, shop)
        for section in ("#walletpay-email", "#walletpay-billing", "#walletpay-bill-phone",
                        "#walletpay-shipping", "#walletpay-ship-phone",
                        "#walletpay-shipping-option", "#walletpay-offer-code",
                        "#walletpay-items .walletpay-item"):
            assert page.locator(section).count() >= 1, section
        page.select_option("#walletpay-shipping-option", "overnight")
        page.wait_for_function("wpSheet('#walletpay-total').textContent === '24.84 EUR'")
        _assert_total_and_pay_on_screen(page, width, height)
        page.screenshot(path=str(artifacts / f"sheet-{width}.png"))
        # the body scrolls under the footer: the last section can be reached, the footer stays
        page.locator("#walletpay-offer-apply").scroll_into_view_if_needed()
        assert page.locator("#walletpay-offer-apply").is_visible()
        _assert_total_and_pay_on_screen(page, width, height)
        if width == 320:
            from walletpay.test_a11y import _axe

            assert _axe(page) == []
        page.click("#walletpay-pay")
        assert wait_outcome(page)["ok"] is True
    finally:
        context.close()
    assert (artifacts / f"sheet-{width}.png").stat().st_size > 5000


def test_billing_country_is_a_list_of_alpha2_codes(page: Any, shop: str) -> None:
    open_sheet(page, shop)
    assert page.evaluate("wpSheet('#walletpay-bill-country').tagName") == "SELECT"
    codes = page.eval_on_selector_all("#walletpay-bill-country option",
                                      "os => os.map((o) => o.value)")
    assert len(codes) > 200
    assert all(len(c) == 2 and c.isalpha() and c.isupper() for c in codes)
    with pytest.raises(Exception, match="did not find some options"):
        page.select_option("#walletpay-bill-country", "x1", timeout=500)
    page.select_option("#walletpay-bill-country", "NL")
    page.fill("#walletpay-email", "payer@localhost")  # not an e-mail address
    page.click("#walletpay-pay")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    assert "a valid e-mail address" in page.inner_text("#walletpay-sheet-error")
    page.fill("#walletpay-email", "payer@example.com")
    page.click("#walletpay-pay")
    detail = wait_outcome(page)["detail"]
    assert detail["billingAddress"]["countryCode"] == "NL"
    assert detail["email"] == "payer@example.com"


def test_busy_state_then_timeout_then_retry(page: Any, shop: str) -> None:
    page.goto(f"{shop}/plain")
    page.evaluate("WalletPay.configure({callbackTimeoutMs: 1000}); window.hangData = true;"
                  " run();")
    wait_event(page, "handleWalletPayReady")
    page.click("#buy")
    # the shop's INITIALIZE answer is pending: spinner and words, Pay marked busy
    page.wait_for_selector("#walletpay-busy:not([hidden])")
    assert page.is_visible(".walletpay-spinner")
    assert "Waiting for the shop" in page.inner_text("#walletpay-busy")
    assert page.get_attribute("#walletpay-pay", "aria-disabled") == "true"
    assert page.get_attribute(".walletpay-sheet-box", "aria-busy") == "true"
    # ...then the timeout: a clear error, Pay blocked, Try again and Cancel offered
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])", timeout=3000)
    assert page.inner_text("#walletpay-sheet-error") == (
        "The shop did not answer within 1 s. Press Try again, or Cancel.")
    assert page.is_hidden("#walletpay-busy")
    assert page.is_disabled("#walletpay-pay")
    assert page.is_visible("#walletpay-retry")
    assert page.is_enabled("#walletpay-cancel")
    errors = wait_event(page, "handlePaymentError")
    assert errors[0].startswith("onPaymentDataChanged: did not settle within 1000 ms")
    page.evaluate("window.hangData = false")
    page.click("#walletpay-retry")
    page.wait_for_selector("#walletpay-sheet-error", state="hidden")
    page.wait_for_function("!wpSheet('#walletpay-pay').disabled")
    # the authorization callback hangs too: busy, then its own timeout, Pay again works
    page.evaluate("window.hangAuth = true")
    page.click("#walletpay-pay")
    page.wait_for_function("wpSheet('#walletpay-busy-text').textContent.includes('confirm')")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])", timeout=5000)
    assert "did not confirm the payment within 1 s" in page.inner_text("#walletpay-sheet-error")
    assert page.is_enabled("#walletpay-pay")
    assert page.evaluate("window.outcome") is None  # the payment is not over
    page.evaluate("window.hangAuth = false")
    page.click("#walletpay-pay")
    assert wait_outcome(page)["ok"] is True
