"""Accessibility of the demo page and the payment sheet: axe-core, keyboard only, screenshots.

axe-core comes from ``axe-playwright-python`` (it ships the axe script); no serious or critical
violation is allowed. Screenshots at 360 px and 1280 px go to ``tests/artifacts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from walletpay.sheet_access import open_context

pytestmark = pytest.mark.browser

BUTTON_LOCALES = ("en ar bg ca cs da de el es et fi fr hr id it ja ko ms nl no pl pt ru sk sl sr "
                  "sv th tr uk zh").split()


def _axe(page: Any) -> list[str]:
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        pytest.skip("axe-playwright-python is not installed (dev extra)")
    results = Axe().run(page)
    return [f"{v['impact']}: {v['id']}: {v['help']} ({len(v['nodes'])} nodes: "
            f"{[n['target'] for n in v['nodes']][:3]})"
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


def _open_demo(page: Any, sandbox: Any, query: str) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?{query}")
    page.wait_for_selector("#merchant-wallet-button:not([hidden])")


def test_axe_demo_page_and_open_sheet(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "scenario=full&ref=a11y-axe")
    assert _axe(page) == []
    page.click("#merchant-pay-button")
    page.wait_for_selector("#walletpay-sheet")
    page.wait_for_function("wpSheet('.walletpay-sheet-box')"
                           ".getAttribute('aria-busy') === 'false'")
    assert _axe(page) == []
    # with an error showing and Pay blocked
    page.select_option("#walletpay-ship-country", "NL")
    page.fill("#walletpay-ship-postal", "9999")
    page.dispatch_event("#walletpay-ship-postal", "change")
    page.wait_for_selector("#walletpay-sheet-error:not([hidden])")
    assert _axe(page) == []


def _focused(page: Any) -> str:
    value: str = page.evaluate("wpActive().id || wpActive().tagName")
    return value


def test_dialog_focus_trap_escape_and_return(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "ref=a11y-focus")
    page.focus("#merchant-pay-button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#walletpay-sheet")
    assert page.evaluate("wpSheet('#walletpay-sheet').contains("
                         "wpActive())")
    assert page.get_attribute("#walletpay-sheet", "role") == "dialog"
    assert page.get_attribute("#walletpay-sheet", "aria-modal") == "true"
    assert page.get_attribute("#walletpay-sheet", "lang") == "en"  # the sheet's text is English
    # the card choices are a labelled list of radio buttons
    assert page.locator("#walletpay-cards legend").inner_text() == "Card"
    items = page.locator("#walletpay-cards ul li input[type=radio]")
    assert items.count() >= 5
    seen = set()
    for _ in range(30):  # Tab around: focus never leaves the dialog
        page.keyboard.press("Tab")
        assert page.evaluate("wpSheet('#walletpay-sheet').contains("
                             "wpActive())"), _focused(page)
        seen.add(_focused(page))
    assert {"walletpay-pay", "walletpay-cancel"} <= seen
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("wpSheet('#walletpay-sheet').contains("
                         "wpActive())")
    page.keyboard.press("Escape")
    page.wait_for_selector("#walletpay-sheet", state="detached")
    assert _focused(page) == "merchant-pay-button"
    last = page.evaluate("window.demoEvents")[-1]
    assert last["name"] == "handlePaymentError"
    assert last["detail"].startswith("CANCELED")
    # and after Cancel too
    page.keyboard.press("Enter")
    page.wait_for_selector("#walletpay-sheet")
    page.click("#walletpay-cancel")
    page.wait_for_selector("#walletpay-sheet", state="detached")
    assert _focused(page) == "merchant-pay-button"


def test_keyboard_only_payment(page: Any, sandbox: Any) -> None:
    _open_demo(page, sandbox, "ref=a11y-keyboard")
    page.keyboard.press("Tab")  # the first focusable element of the page is the pay button
    while _focused(page) != "merchant-pay-button":
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#walletpay-sheet")
    assert _focused(page).startswith("walletpay-card-")
    page.keyboard.press("ArrowDown")  # the next card of the radio group
    chosen = _focused(page).removeprefix("walletpay-card-")
    assert page.is_checked(f"#walletpay-card-{chosen}")
    for _ in range(20):
        if _focused(page) == "walletpay-pay":
            break
        page.keyboard.press("Tab")
    assert _focused(page) == "walletpay-pay"
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#result').dataset.outcome !== ''")
    assert page.get_attribute("#result", "data-outcome") == "Approved"
    detail = page.evaluate("window.capturedDetail")
    assert detail["transactionAccountId"].startswith("ta_")


@pytest.mark.parametrize("width", [360, 1280])
def test_screenshots(browser: Any, sandbox: Any, artifacts: Path, width: int) -> None:
    context = open_context(browser, viewport={"width": width, "height": 800},
                                  is_mobile=width < 400, device_scale_factor=1)
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        _open_demo(page, sandbox, f"scenario=full&walletButton=1&ref=a11y-shot-{width}")
        page.screenshot(path=str(artifacts / f"demo-{width}.png"), full_page=True)
        page.click("#merchant-pay-button")
        page.wait_for_selector("#walletpay-sheet")
        page.select_option("#walletpay-shipping-option", "overnight")
        page.wait_for_function("wpSheet('#walletpay-total').textContent"
                               " === '24.84 EUR'")
        page.screenshot(path=str(artifacts / f"demo-sheet-{width}.png"))
        page.click("#walletpay-pay")
        page.wait_for_function("document.querySelector('#result').dataset.outcome !== ''")
        page.screenshot(path=str(artifacts / f"paid-{width}.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
    for name in ("demo", "demo-sheet", "paid"):
        assert (artifacts / f"{name}-{width}.png").stat().st_size > 1000


def test_button_text_and_lang_agree_for_every_locale(page: Any, sandbox: Any) -> None:
    page.goto(f"{sandbox.url}/demo/merchant?scenario=manual")
    page.wait_for_function("window.demoSession !== undefined")
    english = {"buy": "Buy with WalletPay", "pay": "Pay with WalletPay"}
    for locale in BUTTON_LOCALES:
        for kind in ("buy", "pay"):
            page.evaluate("""([locale, kind]) => {
              const s = window.demoSession;
              document.querySelectorAll('.walletpay-button').forEach((b) => b.remove());
              runWalletPay(s.merchantId, s.storeId, s.clientSystemTransactionId,
                ['PAN_ONLY', 'CRYPTOGRAM_3DS'], ['VISA'], 'DE', 'EUR', 'FINAL', s.amount,
                'test', s.publicKeyApi, true, '', 'Shop',
                {buttonLocale: locale, buttonType: kind});
            }""", [locale, kind])
            button = page.locator(".walletpay-button")
            button.wait_for()
            lang, text = button.get_attribute("lang"), button.inner_text()
            assert button.get_attribute("data-button-locale") == locale
            if lang == "en":
                assert text == english[kind], (locale, text)
            else:
                assert lang == locale, (locale, lang)
                assert text != english[kind], (locale, text)
                assert text.endswith("WalletPay"), (locale, text)
