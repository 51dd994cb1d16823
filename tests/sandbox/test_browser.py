"""The hosted approval page in a real headless Chromium (Playwright): click, get redirected.

The redirect URLs point back at the sandbox itself (``/_sandbox/health?outcome=...``), so
the browser really lands somewhere without internet. Skipped loudly without Chromium.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sandbox_fixtures import AUTH_HEADERS, make_checkout_body
from walletctl.sandbox.server import EmbeddedSandbox

from .helpers import CHECKOUT, records

pytestmark = pytest.mark.browser

# the browser: tests/browser_fixtures.py (one Chromium per test module)


def _checkout(sb: EmbeddedSandbox, ref: str, amount: str = "1234") -> str:
    back = sb.url + "/_sandbox/health?outcome="
    urls = {"returnUrl": back + "return", "successUrl": back + "success",
            "pendingUrl": back + "pending", "errorUrl": back + "error",
            "cancelUrl": back + "cancel", "refusedUrl": back + "refused"}
    resp = httpx.post(sb.url + CHECKOUT, headers=AUTH_HEADERS,
                      json=make_checkout_body(ref, amount, redirectDetails=urls))
    assert resp.status_code == 200, resp.text
    url: str = resp.json()["redirectUrl"]
    return url


@pytest.mark.parametrize(
    ("button", "amount", "outcome", "state"),
    [
        ("approve", "1234", "success", "Approved"),
        ("decline", "1234", "refused", "Declined"),
        ("cancel", "1234", "cancel", "Cancelled"),
        ("pending", "1234", "pending", "Pending"),
        ("approve", "1201", "refused", "Declined"),  # magic: declined by the provider
    ],
)
def test_customer_clicks_through_the_page(browser: Any, live_sandbox: EmbeddedSandbox,
                                          button: str, amount: str, outcome: str,
                                          state: str) -> None:
    ref = f"BROWSER-{button}-{amount}"
    url = _checkout(live_sandbox, ref, amount)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(url)
        assert "Authorise payment" in page.title()
        back = page.get_attribute("#return", "href")
        assert back == live_sandbox.url + "/_sandbox/health?outcome=return"
        assert "12." in page.inner_text(".amount")
        page.click(f"#{button}")
        page.wait_for_url(f"**outcome={outcome}")
        assert '"status":"ok"' in page.content()
        # the link is single use: going back to it shows the "already used" page
        page.goto(url)
        assert "already used" in page.content()
    finally:
        context.close()
    with httpx.Client(base_url=live_sandbox.url, headers=AUTH_HEADERS) as client:
        assert records(client, ref)[0]["state"] == state
