"""The sheet under the page's CSS ``zoom`` (Chromium, Playwright device profiles).

A shop that sets ``zoom`` on ``<html>`` or ``<body>`` (0.5, 0.8, 1.25, 2) on an iPhone SE, a
Pixel 5 and a 1280x800 window: each time Total, Pay and Cancel are inside ``window.visualViewport``
and the sheet's text is as large as without the page's zoom. One page per device; the sheet
is opened from the merchant's button and cancelled for each zoom. Screenshots go to
tests/artifacts/zoom-<device>-<target>-<zoom>.png.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from walletpay.merchant_site import MerchantSite
from walletpay.sheet_access import open_context
from walletpay.shop_pages import add_pages, page

pytestmark = pytest.mark.browser

SHEET_PARTS = ("#walletpay-total-line", "#walletpay-pay", "#walletpay-cancel")
ZOOMS = (0.5, 0.8, 1.25, 2)
TARGETS = ("html", "body")
DEVICES = {"iphone-se": "iPhone SE", "pixel5": "Pixel 5", "desktop": None}
SCREENSHOTS = {("iphone-se", "html", 1.25), ("iphone-se", "body", 2),
               ("desktop", "html", 2), ("pixel5", "body", 0.8)}


@pytest.fixture(scope="module")
def shop(sandbox: Any) -> Iterator[str]:
    with add_pages(MerchantSite(sandbox.url)) as site:
        site.pages["/zoomed"] = page(style="<style>#zoom-note { color: #a40; }</style>",
                                     body='<p id="zoom-note">zoomed by the test</p>'
                                          '<div id="merchant-wallet-button"><button '
                                          'type="button" id="buy">Pay with WalletPay</button>'
                                          '</div>')
        yield site.url


def _until(pg: Any, expression: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not pg.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {seconds} s: {expression}"
        pg.wait_for_timeout(30)


def _where(pg: Any) -> dict[str, Any]:
    where: dict[str, Any] = pg.evaluate("""(parts) => {
      const vv = window.visualViewport;
      const boxes = {};
      for (const sel of parts) {
        const r = wpSheet(sel).getBoundingClientRect();
        boxes[sel] = {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
      }
      return {vv: {left: vv.offsetLeft, top: vv.offsetTop, right: vv.offsetLeft + vv.width,
                   bottom: vv.offsetTop + vv.height},
              payHeight: boxes['#walletpay-pay'].bottom - boxes['#walletpay-pay'].top, boxes};
    }""", list(SHEET_PARTS))
    return where


def _inside(where: dict[str, Any]) -> list[str]:
    """The parts outside the visual viewport (half a pixel of rounding allowed)."""
    vv = where["vv"]
    out = []
    for sel, box in where["boxes"].items():
        if box["right"] <= box["left"] or box["bottom"] <= box["top"]:
            out.append(f"{sel} has no size: {box}")
        for side in ("left", "top"):
            if box[side] < vv[side] - 0.5:
                out.append(f"{sel} {side} {box[side]:.1f} < {vv[side]:.1f}")
        for side in ("right", "bottom"):
            if box[side] > vv[side] + 0.5:
                out.append(f"{sel} {side} {box[side]:.1f} > {vv[side]:.1f}")
    return out


def _options(pw: Any, device: str | None) -> dict[str, Any]:
    if device is None:
        return {"viewport": {"width": 1280, "height": 800}, "device_scale_factor": 1}
    profile = dict(pw.devices[device])
    profile.pop("default_browser_type", None)
    return profile


@pytest.mark.parametrize("name", list(DEVICES))
def test_total_pay_and_cancel_inside_the_viewport_under_page_zoom(
        pw: Any, browser: Any, shop: str, artifacts: Path, name: str) -> None:
    context = open_context(browser, **_options(pw, DEVICES[name]))
    try:
        pg = context.new_page()
        pg.set_default_timeout(10_000)
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.goto(f"{shop}/zoomed")
        pg.evaluate("(over) => run(over)", {"optional": {}})
        _until(pg, "window.events.some((e) => e[0] === 'handleWalletPayReady')")
        _until(pg, "!!document.getElementById('buy')")
        pg.evaluate("() => { startWalletPay(); }")
        _until(pg, "!!wpSheet('#walletpay-pay')")
        unzoomed = _where(pg)["payHeight"]
        pg.evaluate("() => wpSheet('#walletpay-cancel').click()")
        problems: dict[str, list[str]] = {}
        for target in TARGETS:
            for zoom in ZOOMS:
                pg.evaluate("([t, z]) => { document.documentElement.style.zoom = '';"
                            " document.body.style.zoom = ''; document.querySelector(t)"
                            ".style.zoom = String(z); }", [target, zoom])
                pg.evaluate("() => { startWalletPay(); }")
                _until(pg, "!!wpSheet('#walletpay-pay')")
                where = _where(pg)
                case = f"{target} zoom {zoom}"
                problems[case] = _inside(where)
                # the sheet keeps its own size: the page's zoom neither shrinks nor grows it
                if abs(where["payHeight"] - unzoomed) > 1:
                    problems[case].append(f"Pay is {where['payHeight']:.1f} px high, "
                                          f"{unzoomed:.1f} px unzoomed")
                if (name, target, zoom) in SCREENSHOTS:
                    pg.screenshot(path=str(artifacts / f"zoom-{name}-{target}-{zoom}.png"))
                pg.evaluate("() => wpSheet('#walletpay-cancel').click()")
                _until(pg, "!document.querySelector('walletpay-host')")
        assert not {k: v for k, v in problems.items() if v}, problems
        # and the payment still goes through under the heaviest zoom
        pg.evaluate("() => { startWalletPay(); }")
        _until(pg, "!!wpSheet('#walletpay-pay')")
        pg.evaluate("() => wpSheet('#walletpay-pay').click()")
        _until(pg, "window.events.some((e) => e[0] === 'handlePaymentResult')")
        detail = pg.evaluate("window.events.find((e) => e[0] === 'handlePaymentResult')[1]")
        assert detail.get("transactionAccountId"), detail
        assert errors == []
    finally:
        context.close()
