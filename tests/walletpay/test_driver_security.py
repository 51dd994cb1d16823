"""Only a test run drives the sheet (Chromium, a plain context: the sheet's root stays closed).

A hostile page script, without and with the test driver on the page, tries to pay: it takes
the driver's port, sends the sheet's commands with no token and with a guessed one, calls
WalletPayTesting.pay, and replaces fetch, attachShadow and MessagePort.postMessage after
walletpay.js loaded. The sheet obeys none of it: no payment account is requested and the
page gets no result. The tokens themselves: admin-only, one-time.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from walletpay.conftest import driver_token

# What a hostile script on the page does before trying to pay: it replaces fetch,
# attachShadow and MessagePort.postMessage (after walletpay.js loaded) to see what passes.
SNIFF = """() => {
  window.sniffed = [];
  const f = window.fetch;
  window.fetch = (...a) => { window.sniffed.push('fetch ' + String(a[0])); return f(...a); };
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    window.sniffed.push('attachShadow');
    return attach.call(this, Object.assign({}, init, {mode: 'open'}));
  };
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (m, ...rest) {
    window.sniffed.push('post ' + JSON.stringify(m));
    return post.call(this, m, ...rest);
  };
}"""

# It asks walletpay.js for the private port and sends the sheet's commands on it.
HIJACK = """async () => {
  const port = await new Promise((resolve) => {
    window.addEventListener('walletpay-testing-connect', (e) => {
      e.preventDefault(); resolve(e.detail.port); }, {once: true});
    window.dispatchEvent(new Event('walletpay-testing-request'));
    setTimeout(() => resolve(null), 1000);
  });
  if (!port) return {port: false, replies: []};
  const replies = [];
  port.onmessage = (m) => replies.push(m.data);
  let id = 0;
  for (const token of [undefined, 'wpt_guessed-token', '']) {
    for (const op of ['open', 'card', 'pay']) {
      port.postMessage({id: ++id, op, args: {id: 'visa-token'}, token});
    }
  }
  await new Promise((r) => setTimeout(r, 1000));
  return {port: true, replies};
}"""


@pytest.fixture
def watched(browser: Any, sandbox: Any) -> Iterator[Any]:
    """A factory of pages on the demo shop (``driver``: the test driver added first); each
    page records the payment-account requests it makes in ``page.accounts``."""
    contexts: list[Any] = []

    def make(driver: bool) -> Any:
        context = browser.new_context()
        contexts.append(context)
        if driver:
            context.add_init_script(httpx.get(f"{sandbox.url}/walletpay-testing.js").text)
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        pg.accounts = []
        pg.on("request", lambda r: pg.accounts.append(r.url)
              if "/api/v5/paymentAccounts" in r.url else None)
        pg.goto(f"{sandbox.url}/demo/merchant?ref=hostile-{secrets.token_hex(4)}")
        pg.wait_for_function("!document.querySelector('#merchant-wallet-button').hidden")
        pg.evaluate(SNIFF)
        return pg

    yield make
    for context in contexts:
        context.close()


def _no_payment(pg: Any) -> None:
    pg.wait_for_timeout(300)
    assert pg.accounts == [], pg.accounts
    assert pg.evaluate("!!window.capturedDetail") is False


@pytest.mark.browser
def test_a_page_script_without_the_driver_cannot_pay(watched: Any) -> None:
    pg = watched(driver=False)
    pg.evaluate("() => { startWalletPay(); }")  # a page may open the sheet; only a payer pays
    pg.wait_for_selector("walletpay-host", state="attached")
    got = pg.evaluate(HIJACK)
    assert got["port"] is True  # no driver took it: the page gets the port, and it is useless
    assert len(got["replies"]) == 9, got
    for reply in got["replies"]:
        assert reply["ok"] is False, reply
        assert ("a one-time test token is required" in reply["error"]
                or "the sandbox refused the test token (HTTP 403" in reply["error"]), reply
    _no_payment(pg)
    # the sheet is still closed to the page, and nothing of the sheet's went through the
    # replaced functions (only the hostile script's own posts did)
    assert pg.evaluate("document.querySelector('walletpay-host').shadowRoot") is None
    sniffed = pg.evaluate("window.sniffed")
    assert [s for s in sniffed if not s.startswith('post {"id":')] == [], sniffed
    assert not [s for s in sniffed if '"ok":' in s], sniffed


@pytest.mark.browser
def test_a_page_script_with_the_driver_loaded_cannot_pay(watched: Any, sandbox: Any) -> None:
    pg = watched(driver=True)
    got = pg.evaluate(HIJACK)
    assert got == {"port": False, "replies": []}  # the driver takes every port first
    for options, refusal in (
            ("{card: 'visa-token'}", "a one-time test token is required"),
            ("{card: 'visa-token', token: 'wpt_guessed'}", "the sandbox refused the test token"),
            ("{card: 'visa-token', token: 'wpt_x', openDirectly: true}",
             "the sandbox refused the test token")):
        message = pg.evaluate(f"WalletPayTesting.pay({options}).then(() => 'paid', "
                              "(e) => e.message)")
        assert refusal in message, message
    _no_payment(pg)
    # the test itself pays; the hostile script's replaced functions saw no token go by
    detail = pg.evaluate("(t) => WalletPayTesting.pay({token: t, card: 'visa-token'})",
                         driver_token(sandbox))
    assert detail["transactionAccountId"].startswith("ta_")
    sniffed = pg.evaluate("window.sniffed")
    assert not [s for s in sniffed if "wpt_" in s or s == "attachShadow"], sniffed
    assert pg.evaluate("document.querySelector('walletpay-host')") is None


def test_tokens_come_from_the_admin_api_once(sandbox: Any) -> None:
    with httpx.Client(base_url=sandbox.url) as http:
        # a page on another origin cannot get one (a cross-site request to an admin route)
        refused = http.post("/_sandbox/testing/token",
                            headers={"Origin": "https://shop.example"})
        assert refused.status_code == 403, refused.text
        issued = http.post("/_sandbox/testing/token")
        assert issued.status_code == 200, issued.text
        token = issued.json()["token"]
        assert token.startswith("wpt_")
        assert len(token) > 30
        first = http.post("/wallet/testing/redeem", json={"token": token},
                          headers={"Origin": "https://shop.example"})
        assert first.status_code == 200, first.text
        assert first.headers["access-control-allow-origin"] == "*"
        again = http.post("/wallet/testing/redeem", json={"token": token})
        assert again.status_code == 403, again.text
        assert "is not a live one-time test token" in again.text
        assert http.post("/wallet/testing/redeem", json={"token": ""}).status_code == 400
