"""Browser contexts for the sheet tests: the page's own event capture and access to the sheet."""

from __future__ import annotations

from typing import Any

# The raw event.detail, as a merchant's own listener receives it (the demo page's log and
# window.demoEvents never hold the cryptogram).
CAPTURE_DETAIL = ("document.addEventListener('handlePaymentResult', "
                  "(e) => { window.capturedDetail = e.detail; });")

# The sheet lives in a CLOSED shadow root (the page can neither restyle nor read it). To drive
# it, the tests' pages open every shadow root (Playwright's selectors pierce open ones) and get
# two helpers: wpSheet(selector) (an element of the sheet) and wpActive() (the focused
# element, inside the sheet too). test_isolation.py checks the real, closed sheet without this.
OPEN_SHADOW = """(() => {
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    return attach.call(this, Object.assign({}, init, {mode: 'open'}));
  };
  window.wpSheet = (sel) => {
    const host = document.querySelector('walletpay-host');
    return host && host.shadowRoot ? host.shadowRoot.querySelector(sel) : null;
  };
  window.wpActive = () => {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el;
  };
})();"""


def open_context(browser: Any, **options: Any) -> Any:
    """A browser context whose pages can reach into the sheet (see OPEN_SHADOW)."""
    context = browser.new_context(**options)
    context.add_init_script(OPEN_SHADOW)
    context.add_init_script(CAPTURE_DETAIL)
    return context
