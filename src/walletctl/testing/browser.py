"""A merchant's checkout page in headless Chromium (Playwright) with the sandbox's test driver
loaded in every frame: the ``wallet_checkout`` fixture (docs/testing.md)."""

from __future__ import annotations

import os
import secrets
import shutil
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["DRIVER_PATH", "WalletPayBrowser", "WalletPayPage", "driver_script", "find_chromium"]

DRIVER_PATH = "/walletpay-testing.js"
CHALLENGE_URL = "**/pay/3ds/**"
ANSWER_BINDING = "__walletpayTestingAnswer_"  # + a per-helper suffix: pay()'s answer
# pay() in the page: the driver tells its answer (option answer) in the task of the page's event,
# before the page's handler runs; a Playwright binding takes it to the test process
PAY_SCRIPT = """(a) => {
  const say = (ok, value) => { window[a.binding](a.nonce, ok, value); };
  WalletPayTesting.pay(Object.assign({}, a.options, {answer: say})).catch(() => {});
}"""
CHROMIUM_ENV = "WALLETCTL_CHROMIUM"


def driver_script(base_url: str, timeout: float = 10.0) -> str:
    """The sandbox's test driver (``GET /walletpay-testing.js``), as text."""
    url = base_url.rstrip("/") + DRIVER_PATH
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - http(s) URL
        return str(resp.read().decode("utf-8"))


def find_chromium() -> str | None:
    """``$WALLETCTL_CHROMIUM``, else ``chromium`` / ``chromium-browser`` on PATH; None lets
    Playwright use its own downloaded browser."""
    for candidate in (os.environ.get(CHROMIUM_ENV), shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def _no_token() -> str:
    raise RuntimeError("WalletPayPage: no token source (open pages with WalletPayBrowser.open)")


@dataclass
class WalletPayPage:
    """One page (Playwright ``Page``) with the driver loaded: ``pay``, ``cancel``,
    ``challenge``, ``state``. A failure raises Playwright's ``Error`` whose message carries
    the driver's ``WalletPayTesting: <step>: ...`` line. Each call gets a one-time token
    from the sandbox's admin API (``token``) and passes it to the driver: the sheet obeys
    nothing else."""

    page: Any
    token: Callable[[], str] = field(default=_no_token, repr=False)
    _answers: list[dict[str, Any]] = field(default_factory=list, repr=False)
    _binding: str = field(default="", repr=False)
    _nonce: str = field(default="", repr=False)

    def pay(self, card: str | None = None, **options: Any) -> dict[str, Any]:
        """Press the merchant's button (waiting for it; ``button="<css selector>"`` names
        it, ``open_directly=True`` opens the sheet without it), choose ``card``, fill what is
        given, press Pay; the ``event.detail`` of the page's ``handlePaymentResult``.
        ``timeout_ms`` bounds every wait. The driver tells the answer (its ``answer``
        option) through a binding in the task of the page's event, before the page's handler
        runs: what a page reports after it has started to navigate (an ``evaluate``'s value,
        a binding's call, a request) can be lost to a shop that leaves at once."""
        from playwright.sync_api import Error
        from pydantic.alias_generators import to_camel

        args = {to_camel(k): v for k, v in options.items()}
        if card is not None:
            args["card"] = card
        args["token"] = self.token()
        if not self._binding:
            self._binding = ANSWER_BINDING + secrets.token_hex(8)
            self.page.expose_binding(self._binding, self._heard)
        self._answers.clear()
        # only this call's answer counts: a page script that calls the binding cannot know it
        self._nonce = secrets.token_hex(16)
        self.page.evaluate(PAY_SCRIPT, {"binding": self._binding, "nonce": self._nonce,
                                        "options": args})
        limit = float(args.get("timeoutMs", 20_000)) + 5_000
        give_up = time.monotonic() + limit / 1000
        while not self._answers:
            if time.monotonic() > give_up:
                raise Error(f"WalletPayTesting: pay: no answer from the page in {limit:g} ms "
                            f"(the page is at {self.page.url})")
            self.page.wait_for_timeout(20)
        answer = self._answers[0]
        if not answer["ok"]:
            raise Error(str(answer["value"]))
        return dict(answer["value"])

    def _heard(self, source: Any, *said: Any) -> None:
        if len(said) == 3 and said[0] == self._nonce and not self._answers:
            self._answers.append({"ok": bool(said[1]), "value": said[2]})

    def cancel(self) -> str:
        """Cancel the open sheet; the ``handlePaymentError`` message (``CANCELED: ...``)."""
        return str(self.page.evaluate("(t) => WalletPayTesting.cancel({token: t})",
                                      self.token()))

    def challenge(self, outcome: str = "pass", timeout_ms: float = 20_000) -> dict[str, Any]:
        """Wait until the page is the sandbox's hosted 3DS page, then pass or fail it."""
        from playwright.sync_api import Error
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        if outcome not in ("pass", "fail"):
            raise ValueError(f'challenge: outcome must be "pass" or "fail", not {outcome!r}')
        try:
            self.page.wait_for_url(CHALLENGE_URL, timeout=timeout_ms)
        except PlaywrightTimeout:
            raise Error(f"WalletPayTesting: 3-D Secure: the page did not reach the sandbox's "
                        f"3-D Secure page (/pay/3ds/...) within {timeout_ms:g} ms; it is at "
                        f"{self.page.url} (did the payment need 3-D Secure, and does the "
                        f"shop send the payer to its challengeUrl?)") from None
        # Playwright's own click (not the driver's evaluate): the page navigates as it is
        # answered, which would destroy an evaluate's context before its value came back
        button = self.page.wait_for_selector(f"#threeds-{outcome}", timeout=timeout_ms)
        amount = self.page.text_content("#threeds-amount")
        answer = {"challengeId": self.page.url.split("?")[0].rsplit("/", 1)[-1],
                  "outcome": outcome, "amount": amount}
        assert button is not None
        button.click()
        return answer

    def state(self) -> dict[str, Any]:
        """The sheet's summary: ``ready``, ``open``, ``cards``, ``card``, ``total``, ``error``..."""
        value: dict[str, Any] = self.page.evaluate("(t) => WalletPayTesting.state({token: t})",
                                                   self.token())
        return value


@dataclass
class WalletPayBrowser:
    """Headless Chromium whose pages carry the test driver of the sandbox at ``base_url``
    (a context manager; ``launch``: more ``chromium.launch`` options)."""

    base_url: str
    executable: str | None = None
    launch: dict[str, Any] = field(default_factory=dict)
    admin_token: str | None = field(default=None, repr=False)
    _playwright: Any = field(default=None, repr=False)
    _browser: Any = field(default=None, repr=False)
    _driver: str = field(default="", repr=False)
    _contexts: list[Any] = field(default_factory=list, repr=False)

    def start(self) -> WalletPayBrowser:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise RuntimeError("WalletPayBrowser needs Playwright: pip install playwright "
                               "(or walletctl[browser])") from None
        self._driver = driver_script(self.base_url)
        self._playwright = sync_playwright().start()
        options: dict[str, Any] = {"headless": True, **self.launch}
        executable = self.executable or find_chromium()
        if executable:
            options["executable_path"] = executable
        try:
            self._browser = self._playwright.chromium.launch(**options)
        except Exception:
            self._playwright.stop()
            raise
        return self

    def open(self, url: str, *, device: str | None = None, **context: Any) -> WalletPayPage:
        """A new browser context (``device``: a Playwright device name such as ``"Pixel 5"``;
        more ``new_context`` options as keywords) with the driver in every frame, at ``url``."""
        if self._browser is None:
            self.start()
        if device is not None:
            context = {**self._playwright.devices[device], **context}
        ctx = self._browser.new_context(**context)
        self._contexts.append(ctx)
        ctx.add_init_script(self._driver)
        page = ctx.new_page()
        page.goto(url)
        return WalletPayPage(page, token=self.driver_token)

    def driver_token(self) -> str:
        """A one-time token for the driver, from the sandbox's admin API."""
        from walletctl.ops.sandbox_admin import driver_token

        return driver_token(self.base_url, token=self.admin_token)

    def close_pages(self) -> None:
        """Close every page :meth:`open` made (the browser stays up)."""
        for ctx in self._contexts:
            ctx.close()
        self._contexts.clear()

    def close(self) -> None:
        self.close_pages()
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None

    def __enter__(self) -> WalletPayBrowser:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
