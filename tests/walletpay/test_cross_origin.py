"""The browser wallet on a merchant's own site: the page is on another origin than the gateway.

The merchant site (``merchant_site.MerchantSite``) is a separate HTTP server on
``http://localhost:<port>``; the sandbox is on ``http://127.0.0.1:<port>``. Both credential
kinds are paid end to end in Chromium, then ``walletctl account`` / ``authorize`` / ``lookup``
run on what the merchant server received. CORS answers are checked with raw HTTP too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletpay.cli_flow import authorize_event
from walletpay.conftest import driver_token
from walletpay.merchant_site import MerchantSite

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(sandbox: Any) -> Iterator[MerchantSite]:
    with MerchantSite(sandbox.url) as s:
        yield s


@pytest.mark.parametrize("card", ["visa-pan", "mc-token"])
def test_pay_from_another_origin_then_cli_authorizes(
    driven_page: Any, sandbox: Any, site: MerchantSite, cli: Any, tmp_path: Path, card: str
) -> None:
    # paid as a merchant's own browser test would: through the driver, sheet closed
    page = driven_page
    ref = f"xo-{card}"
    page.goto(f"{site.url}/checkout?ref={ref}")
    assert page.evaluate("location.origin") != sandbox.url
    paid = page.evaluate("([token, card]) => WalletPayTesting.pay({token, card})",
                         [driver_token(sandbox), card])
    page.wait_for_function("document.getElementById('status').textContent.startsWith('stored')")
    detail = next(d for d in site.results if d.get("clientSystemTransactionId") == ref)
    assert detail == paid
    assert detail["transactionMethod"] == "WalletPay"
    is_token = card.endswith("token")
    assert ("cryptogram" in detail) is is_token
    hidden = (detail["cryptogram"],) if is_token else ()
    key_id = site.keys["encryptionKeyId"]
    acct = cli("account", detail["transactionAccountId"], "--encryption-key-id", key_id,
               hidden=hidden)
    assert acct["cardType"] == ("Token" if is_token else "Card")
    tx = authorize_event(cli, sandbox.url, tmp_path, detail, key_id, is_token=is_token,
                         hidden=hidden)
    assert tx["state"] == "Approved", tx
    assert [r["state"] for r in cli("lookup", ref)] == ["Approved"]
    assert [e[0] for e in page.evaluate("window.events")] == ["ready", "result"]


@pytest.mark.parametrize(("override", "mid", "status"), [
    ("pk_bogus", None, "401"),
    (None, "M-9999", "403"),  # a key of another merchant
])
def test_refused_key_raises_error_and_keeps_the_button_hidden(
    page: Any, site: MerchantSite, override: str | None, mid: str | None, status: str
) -> None:
    site.public_key_override = override
    try:
        page.goto(f"{site.url}/checkout?ref=xo-badkey" + (f"&mid={mid}" if mid else ""))
        page.wait_for_function("window.events.length > 0")
    finally:
        site.public_key_override = None
    events = page.evaluate("window.events")
    assert [e[0] for e in events] == ["error"], events
    assert events[0][1].startswith(f"publicKeyApi: refused by the gateway (HTTP {status}")
    assert page.is_hidden("#merchant-wallet-button")
    page.evaluate("startWalletPay().catch(() => null)")  # a refused key: no sheet
    assert page.locator("#walletpay-sheet").count() == 0


def test_expired_key_is_refused_before_ready(page: Any, sandbox: Any) -> None:

    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True, allow_clock_control=True)) as sb, \
            MerchantSite(sb.url) as shop:
        moved = httpx.post(f"{sb.url}/_sandbox/clock",
                           json={"advanceSeconds": 3600})
        assert moved.status_code == 200, moved.text
        check = httpx.get(f"{sb.url}/api/v5/publicKeys/current?merchantId=M-1001&storeId=S-01",
                          headers={"Authorization": f"PublicApiKey {shop.keys['apiKey']}"})
        assert check.status_code == 401, check.text
        page.goto(f"{shop.url}/checkout?ref=xo-expired")
        page.wait_for_function("window.events.length > 0")
        events = page.evaluate("window.events")
    assert events[0][0] == "error", events
    assert "HTTP 401" in events[0][1], events
    assert "expired" in events[0][1], events


# -- CORS on the wire ------------------------------------------------------------------------

ORIGIN = "http://shop.example"


def test_preflight_and_responses_carry_cors_for_the_script_routes(sandbox: Any) -> None:
    for path, method in [("/api/v5/paymentAccounts", "POST"), ("/wallet/token", "POST"),
                         ("/wallet/cards", "GET"), ("/api/v5/publicKeys/current", "GET")]:
        resp = httpx.options(f"{sandbox.url}{path}", headers={
            "Origin": ORIGIN, "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization,content-type"})
        assert resp.status_code == 204, (path, resp.text)
        assert resp.headers["access-control-allow-origin"] == "*"
        assert method in resp.headers["access-control-allow-methods"]
        assert "Authorization" in resp.headers["access-control-allow-headers"]
        assert "access-control-allow-credentials" not in resp.headers
    cards = httpx.get(f"{sandbox.url}/wallet/cards", headers={"Origin": ORIGIN})
    assert cards.headers["access-control-allow-origin"] == "*"
    script = httpx.get(f"{sandbox.url}/walletpay.js", headers={"Origin": ORIGIN})
    assert script.headers["access-control-allow-origin"] == "*"
    # an error answer is readable cross-origin too (the page gets the gateway's error object)
    refused = httpx.get(f"{sandbox.url}/api/v5/publicKeys/current?merchantId=M&storeId=S",
                        headers={"Origin": ORIGIN, "Authorization": "PublicApiKey nope"})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(("path", "method"), [
    ("/_sandbox/reset", "POST"), ("/_sandbox/ledger", "GET"), ("/api/v5/publicKeys", "POST"),
    ("/api/v5/transactions", "POST"), ("/api/v5/paymentAccounts/ta_1", "GET"),
    ("/demo/merchant/api/session", "GET"), ("/_sandbox/wallet/token", "POST"),
])
def test_admin_and_server_routes_never_answer_cross_origin(
    sandbox: Any, path: str, method: str
) -> None:
    pre = httpx.options(f"{sandbox.url}{path}", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": method})
    assert "access-control-allow-origin" not in pre.headers
    assert pre.status_code < 500
    resp = httpx.request("GET" if method == "GET" else "OPTIONS", f"{sandbox.url}{path}",
                         headers={"Origin": ORIGIN})
    assert "access-control-allow-origin" not in resp.headers


def test_allow_origin_restricts_the_script_routes() -> None:
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    config = SandboxConfig(quiet=True, allowed_origins=("https://shop.example",))
    with EmbeddedSandbox(config) as sb:
        ok = httpx.options(f"{sb.url}/wallet/token", headers={
            "Origin": "https://shop.example", "Access-Control-Request-Method": "POST"})
        assert ok.status_code == 204
        assert ok.headers["access-control-allow-origin"] == "https://shop.example"
        assert "Origin" in ok.headers["vary"]
        for headers in ({"Origin": "https://evil.example", "Access-Control-Request-Method":
                         "POST"}, {"Origin": "https://evil.example"}):
            bad = httpx.request("OPTIONS" if len(headers) == 2 else "GET",
                                f"{sb.url}/wallet/cards" if len(headers) == 1 else
                                f"{sb.url}/wallet/token", headers=headers)
            assert bad.status_code == 403, bad.text
            assert "access-control-allow-origin" not in bad.headers
            assert bad.json()["description"] == "OriginNotAllowed"
            assert "--allow-origin" in bad.json()["details"]["message"]
        # no Origin header (a server or the CLI): not a browser request, not restricted
        assert httpx.get(f"{sb.url}/wallet/cards").status_code == 200


def test_gateway_refusal_at_payment_reaches_the_page_as_the_error_object(page: Any) -> None:
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True, allow_clock_control=True)) as sb, \
            MerchantSite(sb.url) as shop:
        page.goto(f"{shop.url}/checkout?ref=xo-late")
        page.wait_for_selector("#merchant-wallet-button:not([hidden])")
        # the key expires while the payer is on the page: Create Payment Account refuses it
        assert httpx.post(f"{sb.url}/_sandbox/clock",
                          json={"advanceSeconds": 3600}).status_code == 200
        page.click("#merchant-pay-button")
        page.click("#walletpay-pay")
        page.wait_for_function("document.getElementById('status').textContent"
                               ".startsWith('stored')")
    detail = shop.results[-1]
    assert set(detail) == {"code", "description", "details"}, detail
    assert "expired" in detail["details"]["message"]


def test_page_on_an_origin_not_allowed_gets_a_clear_error(page: Any) -> None:
    from walletctl.sandbox.config import SandboxConfig
    from walletctl.sandbox.server import EmbeddedSandbox

    config = SandboxConfig(quiet=True, allowed_origins=("https://shop.example",))
    with EmbeddedSandbox(config) as sb, MerchantSite(sb.url) as shop:
        page.goto(f"{shop.url}/checkout?ref=xo-notallowed")  # the script itself still loads
        page.wait_for_function("window.events.length > 0")
        events = page.evaluate("window.events")
    assert [e[0] for e in events] == ["error"], events
    assert events[0][1].startswith(f"could not reach the gateway at {sb.url}"), events
    assert "--allow-origin" in events[0][1]
    assert page.is_hidden("#merchant-wallet-button")
