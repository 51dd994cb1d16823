"""Merchant pages for the real-page tests, served by :class:`MerchantSite` on another origin.

Every page defines ``run(overrides)`` (calls ``runWalletPay`` with every optional section on by
default and keeps the Promise's outcome in ``window.outcome``), ``tryRun(overrides)`` (the
synchronous throw, as a plain object) and records the three events in ``window.events``.
``window.hangData`` / ``window.hangAuth`` make the shop's callbacks never answer.
"""

from __future__ import annotations

from typing import Any

from walletpay.merchant_site import MerchantSite

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Shop</title>
  <link rel="icon" href="data:,">
  __STYLE__
  <script __TYPE__ src="__GATEWAY__/walletpay.js"></script>
</head>
<body>
<main>
  <h1>Shop</h1>
  <p>Order 1001.</p>
  __BODY__
</main>
<script __TYPE__>
  window.events = [];
  for (const name of ["handleWalletPayReady", "handlePaymentResult", "handlePaymentError"]) {
    document.addEventListener(name, (e) => window.events.push([name, e.detail]));
  }
  const ITEMS = [{label: "Subtotal", type: "SUBTOTAL", price: "12.34"},
                 {label: "Shipping", type: "LINE_ITEM", price: "0.00"}];
  const SHIPPING = {standard: "0.00", express: "5.00", overnight: "12.50"};
  function quote(option, offer) {
    const cents = 1234 + Math.round(Number(SHIPPING[option || "standard"]) * 100)
      - (offer === "SAVE2" ? 200 : 0);
    const total = (cents / 100).toFixed(2);
    const items = [ITEMS[0], {label: "Shipping", type: "LINE_ITEM",
                              price: SHIPPING[option || "standard"]}];
    if (offer === "SAVE2") items.push({label: "Offer SAVE2", type: "LINE_ITEM", price: "-2.00"});
    return {totalPrice: total, totalPriceStatus: "FINAL", currencyCode: "EUR",
            displayItems: items};
  }
  window.FULL = {
    emailRequired: true,
    billingAddressRequired: true,
    billingAddressParameters: {format: "FULL", phoneNumberRequired: true},
    shippingAddressRequired: true,
    shippingAddressParameters: {allowedCountryCodes: ["DE", "NL", "FR"],
                                phoneNumberRequired: true},
    shippingOptionRequired: true,
    shippingOptionParameters: {defaultSelectedOptionId: "standard", shippingOptions: [
      {id: "standard", label: "Standard", description: "3-5 days"},
      {id: "express", label: "Express", description: "1-2 days"},
      {id: "overnight", label: "Overnight", description: "next day"}]},
    callbackIntents: ["SHIPPING_ADDRESS", "SHIPPING_OPTION", "OFFER", "PAYMENT_AUTHORIZATION"],
    additionalTransactionInfo: {displayItems: ITEMS, totalPriceLabel: "Total"},
    offerInfo: [{offers: [{redemptionCode: "WELCOME", description: "welcome offer"}]}],
    onPaymentDataChanged: (data) => {
      if (window.hangData) return new Promise(() => {});
      const offer = data.offerData && data.offerData.redemptionCode;
      if (offer && offer !== "SAVE2") {
        return {newTransactionInfo: quote(data.shippingOptionData && data.shippingOptionData.id),
                error: {reason: "OFFER_INVALID", message: "Unknown offer code", intent: "OFFER"}};
      }
      return {newTransactionInfo: quote(data.shippingOptionData && data.shippingOptionData.id,
                                        offer)};
    },
    onPaymentAuthorized: (data) => window.hangAuth ? new Promise(() => {})
      : {transactionState: data.transactionAccountId ? "SUCCESS" : "ERROR"},
  };
  window.run = (over) => {
    const a = Object.assign({mid: "M-1001", sid: "S-01",
      ref: "rp-" + Math.random().toString(36).slice(2, 10), currency: "EUR", amount: "12.34",
      key: "__KEY__", button: false, optional: window.FULL}, over || {});
    window.outcome = null;
    window.lastPromise = runWalletPay(a.mid, a.sid, a.ref, ["PAN_ONLY", "CRYPTOGRAM_3DS"],
                 ["AMEX", "DISCOVER", "JCB", "MASTERCARD", "VISA"], "DE", a.currency, "FINAL",
                 a.amount, "test", a.key, a.button, "", "Every-section shop", a.optional);
    window.lastPromise.then((detail) => { window.outcome = {ok: true, detail}; },
            (e) => { window.outcome = {ok: false, name: e.name, code: e.code,
                                       message: e.message, detail: e.detail}; });
    return null;
  };
  window.tryRun = (over) => {
    try { window.run(over); return null; } catch (e) {
      return {name: e.name, code: e.code, parameter: e.parameter, message: e.message};
    }
  };
  window.renderLater = (ms, html) => setTimeout(
    () => document.querySelector("main").insertAdjacentHTML("beforeend", html), ms);
  __SCRIPT__
</script>
</body>
</html>
"""

BUTTON = ('<div id="merchant-wallet-button"><button type="button" id="buy">'
          'Pay with WalletPay</button></div>')

# A dark theme and a custom-radio rule, as real shops have them, plus rules that would wreck
# any DOM they reach.
HOSTILE_CSS = """<style>
  html, body { background: #111; }
  * { color: #eee !important; font-family: serif !important; letter-spacing: 2px !important; }
  input[type=radio] { appearance: none !important; opacity: 0 !important;
                      position: absolute !important; width: 0 !important; }
  button { all: unset !important; }
  div, p, fieldset { padding: 40px !important; margin: 0 !important; border: 0 !important; }
  ul { list-style: disc !important; }
</style>"""


def page(*, body: str = BUTTON, style: str = "", script: str = "",
         module: bool = False) -> str:
    return (TEMPLATE.replace("__STYLE__", style).replace("__BODY__", body)
            .replace("__SCRIPT__", script)
            .replace("__TYPE__", 'type="module"' if module else ""))


def add_pages(site: MerchantSite) -> MerchantSite:
    site.pages.update({
        "/plain": page(),
        "/empty": page(body=""),
        "/marked": page(body='<section data-walletpay-container class="pay">'
                             '<button type="button" id="marked">Pay</button></section>'
                             '<a href="#" id="attached" role="button">Pay by link</a>',
                        script="WalletPay.attachButton(document.getElementById('attached'));"),
        "/hostile": page(style=HOSTILE_CSS),
        "/module": page(module=True),
    })
    return site


def open_sheet(pg: Any, shop: str, path: str = "/plain", **over: Any) -> None:
    """Load ``path``, run, wait for ready, click the merchant button, wait for the sheet."""
    pg.goto(f"{shop}{path}")
    pg.evaluate("(over) => run(over)", over)
    wait_event(pg, "handleWalletPayReady")
    pg.click("#buy")
    pg.wait_for_selector("#walletpay-sheet")
    pg.wait_for_function("wpSheet('.walletpay-sheet-box').getAttribute('aria-busy') === 'false'")


def wait_event(pg: Any, name: str) -> Any:
    pg.wait_for_function("(n) => window.events.some((e) => e[0] === n)", arg=name)
    return pg.evaluate("(n) => window.events.filter((e) => e[0] === n).map((e) => e[1])", name)


def wait_outcome(pg: Any) -> dict[str, Any]:
    pg.wait_for_function("window.outcome !== null && window.outcome !== undefined")
    outcome: dict[str, Any] = pg.evaluate("window.outcome")
    return outcome
