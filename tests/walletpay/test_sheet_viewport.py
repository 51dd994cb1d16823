"""The sheet on real pages that fight it (Chromium, Playwright device profiles, another origin).

A phone (Pixel 5, iPhone SE profiles) whose page has an element wider than the screen, the
same in ``dir=rtl``, a ``<body>`` with ``transform: translateZ(0)`` on a long page scrolled to
its end at 1280x800, and a Content-Security-Policy with only nonces (no 'unsafe-inline'):
each time Total, Pay and Cancel are inside ``window.visualViewport`` (what the payer sees),
the sheet is in the top layer and styled, no CSP violation reaches the console or a
``securitypolicyviolation`` listener, and the payment goes through. Screenshots go to
tests/artifacts/viewport-<case>.png.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from walletpay.merchant_site import MerchantSite
from walletpay.sheet_access import open_context
from walletpay.shop_pages import add_pages, page

pytestmark = pytest.mark.browser

NONCE = "c2hlZXQtdGVzdC1ub25jZQ"
WIDE = '<div id="wide">A 600 px wide table of order lines</div>' + (
    '<div id="merchant-wallet-button"><button type="button" id="buy">'
    'Pay with WalletPay</button></div>')
WIDE_CSS = "<style>#wide { width: 600px; background: #fd8; padding: 8px; }</style>"
LONG = ('<div id="spacer">A long page</div><div id="merchant-wallet-button">'
        '<button type="button" id="buy">Pay with WalletPay</button></div>')
TRANSFORMED_CSS = ("<style>body { transform: translateZ(0); margin: 0; }"
                   " #spacer { height: 4000px; background: linear-gradient(#cef, #fec); }</style>")
# Records what a strict policy blocks (the console gets the same as "Refused to ...").
CSP_LISTENER = ("window.cspViolations = []; document.addEventListener("
                "'securitypolicyviolation', (e) => window.cspViolations.push("
                "e.violatedDirective + ' ' + e.blockedURI), true);")
SHEET_PARTS = ("#walletpay-total-line", "#walletpay-pay", "#walletpay-cancel")


def _nonced(html: str) -> str:
    return (html.replace("<script ", f'<script nonce="{NONCE}" ')
            .replace("<script>", f'<script nonce="{NONCE}">')
            .replace("<style>", f'<style nonce="{NONCE}">'))


@pytest.fixture(scope="module")
def shop(sandbox: Any) -> Iterator[str]:
    with add_pages(MerchantSite(sandbox.url)) as site:
        rtl = page(body=WIDE, style=WIDE_CSS).replace('<html lang="en">',
                                                      '<html lang="ar" dir="rtl">')
        site.pages.update({
            "/wide": page(body=WIDE, style=WIDE_CSS),
            "/wide-rtl": rtl,
            "/transformed": page(body=LONG, style=TRANSFORMED_CSS),
            "/csp": _nonced(page(style="<style>h1 { color: #0a4; }</style>")),
        })
        # only nonces: no 'unsafe-inline', nothing for styles but the page's own nonce
        site.headers["/csp"] = {"Content-Security-Policy": (
            f"default-src 'none'; script-src 'nonce-{NONCE}'; style-src 'nonce-{NONCE}'; "
            f"connect-src {sandbox.url}; img-src data:")}
        yield site.url


def _until(pg: Any, expression: str, seconds: float = 10) -> None:
    """Polls from outside: wait_for_function's in-page polling is an eval, which a strict
    CSP (no 'unsafe-eval') refuses."""
    deadline = time.monotonic() + seconds
    while not pg.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {seconds} s: {expression}"
        pg.wait_for_timeout(50)


def _open(pg: Any, shop: str, path: str, over: dict[str, Any]) -> None:
    pg.goto(f"{shop}{path}")
    pg.evaluate("(over) => run(over)", over)
    _until(pg, "window.events.some((e) => e[0] === 'handleWalletPayReady')")
    if path == "/transformed":
        pg.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        assert pg.evaluate("scrollY") > 3000  # at the end of the long page
    # the merchant's button from the keyboard: in a right-to-left page wider than the phone,
    # Playwright's pointer clicks miss the page's own elements
    pg.focus("#buy")
    pg.keyboard.press("Enter")
    _until(pg, "!!wpSheet('.walletpay-sheet-box')"
               " && wpSheet('.walletpay-sheet-box').ariaBusy === 'false'")


def _device(pw: Any, name: str) -> dict[str, Any]:
    profile = dict(pw.devices[name])
    profile.pop("default_browser_type", None)  # Chromium runs every profile here
    return profile


def _where(pg: Any) -> dict[str, Any]:
    """The visual viewport and the sheet's parts, in layout-viewport coordinates."""
    where: dict[str, Any] = pg.evaluate("""(parts) => {
      const vv = window.visualViewport;
      const boxes = {};
      for (const sel of parts) {
        const r = wpSheet(sel).getBoundingClientRect();
        boxes[sel] = {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
      }
      return {vv: {left: vv.offsetLeft, top: vv.offsetTop, right: vv.offsetLeft + vv.width,
                   bottom: vv.offsetTop + vv.height, scale: vv.scale},
              layout: {width: innerWidth, height: innerHeight},
              modal: wpSheet('#walletpay-sheet').matches(':modal'), boxes};
    }""", list(SHEET_PARTS))
    return where


def _assert_inside_visual_viewport(where: dict[str, Any]) -> None:
    vv = where["vv"]
    for sel, box in where["boxes"].items():
        assert box["right"] > box["left"], (sel, box)
        assert box["bottom"] > box["top"], (sel, box)
        for side in ("left", "top"):  # half a pixel of rounding
            assert box[side] >= vv[side] - 0.5, (sel, side, where)
        for side in ("right", "bottom"):
            assert box[side] <= vv[side] + 0.5, (sel, side, where)


def _screenshot(context: Any, pg: Any, path: Path) -> None:
    # what the compositor shows (the visual viewport): page.screenshot() places its clip
    # wrongly in a right-to-left page that is wider than the phone
    cdp = context.new_cdp_session(pg)
    path.write_bytes(base64.b64decode(cdp.send("Page.captureScreenshot")["data"]))
    cdp.detach()


CASES = {  # case -> (device profile or None for 1280x800, page)
    "pixel5-wide": ("Pixel 5", "/wide"),
    "iphone-se-wide": ("iPhone SE", "/wide"),
    "pixel5-rtl": ("Pixel 5", "/wide-rtl"),
    "iphone-se-rtl": ("iPhone SE", "/wide-rtl"),
    "desktop-transformed": (None, "/transformed"),
    "desktop-csp": (None, "/csp"),
    "pixel5-csp": ("Pixel 5", "/csp"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_total_and_pay_inside_the_visual_viewport(
        pw: Any, browser: Any, shop: str, artifacts: Path, case: str) -> None:
    device, path = CASES[case]
    options: dict[str, Any] = (
        _device(pw, device) if device else
        {"viewport": {"width": 1280, "height": 800}, "device_scale_factor": 1})
    context = open_context(browser, **options)
    context.add_init_script(CSP_LISTENER)
    try:
        pg = context.new_page()
        pg.set_default_timeout(10_000)
        console: list[str] = []
        pg.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        _open(pg, shop, path, {"button": path == "/csp"})
        _screenshot(context, pg, artifacts / f"viewport-{case}.png")
        if path.startswith("/wide"):
            # the page really is wider than the phone: the layout viewport outgrows the screen
            assert pg.evaluate("document.documentElement.scrollWidth") > \
                options["viewport"]["width"]
        where = _where(pg)
        _assert_inside_visual_viewport(where)
        assert pg.evaluate("window.cspViolations") == []
        assert not [m for m in console if "Content Security Policy" in m], console
        # styled (the constructed stylesheet applied, whatever the page's CSP)
        assert pg.evaluate("getComputedStyle(wpSheet('#walletpay-pay')).backgroundColor") == \
            "rgb(17, 17, 17)"
        assert where["modal"] is True, "the sheet is not a modal dialog in the top layer"
        if path == "/transformed":
            assert pg.evaluate("scrollY") > 3000  # opening the sheet did not scroll the page
        pg.click("#walletpay-pay")
        _until(pg, "!!window.outcome")
        assert pg.evaluate("window.outcome.ok") is True
        assert pg.evaluate("window.cspViolations") == []
        assert not [m for m in console if "Content Security Policy" in m], console
        assert errors == []
        if path == "/csp":
            # the policy is in force: the page's own inline style without the nonce is refused
            pg.evaluate("""() => { const s = document.createElement('style');
                                  s.textContent = 'h1 { color: red }';
                                  document.head.appendChild(s); }""")
            _until(pg, "window.cspViolations.length > 0")
            assert pg.evaluate("getComputedStyle(document.querySelector('h1')).color") == \
                "rgb(0, 170, 68)"
    finally:
        context.close()
    assert (artifacts / f"viewport-{case}.png").stat().st_size > 3000


def test_keyboard_and_focus_under_a_nonce_only_csp(browser: Any, shop: str) -> None:
    context = open_context(browser, viewport={"width": 800, "height": 700})
    try:
        pg = context.new_page()
        pg.set_default_timeout(10_000)
        _open(pg, shop, "/csp", {"optional": {"emailRequired": True}})
        assert pg.evaluate("wpActive().id").startswith("walletpay-card-")
        for _ in range(12):  # Tab around: focus never leaves the dialog
            pg.keyboard.press("Tab")
            assert pg.evaluate("wpSheet('#walletpay-sheet').contains(wpActive())")
        pg.keyboard.press("Escape")
        _until(pg, "!!window.outcome")
        assert pg.evaluate("window.outcome.code") == "CANCELED"
        assert pg.evaluate("document.querySelector('walletpay-host')") is None
        assert pg.evaluate("document.activeElement.id") == "buy"  # focus back on the trigger
    finally:
        context.close()
