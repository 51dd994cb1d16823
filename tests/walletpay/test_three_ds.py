"""The hosted 3-D Secure challenge and the money rules of the browser wallet, on a real port.

The merchant server (server key) creates a challenge for one Card account, amount and
reference; the shopper answers it on ``/pay/3ds/{id}`` (here through the test driver, the
keyboard, a phone-sized screen and axe); its result authorizes that amount and reference once.
The page's transaction key authorizes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox
from walletpay.conftest import MERCHANT, SERVER_AUTH, SERVICE_BASIC, STORE
from walletpay.test_a11y import _axe

IDS = {"merchantId": MERCHANT, "storeId": STORE}
# a Pixel 5 as Playwright describes it (viewport, scale, touch, mobile)
PHONE = {"viewport": {"width": 393, "height": 727}, "device_scale_factor": 2.75,
         "is_mobile": True, "has_touch": True}


class Shop:
    """The merchant server's calls for one order, against the sandbox at ``url``."""

    def __init__(self, url: str, reference: str, card: str = "visa-pan") -> None:
        self.http = httpx.Client(base_url=url, timeout=10)
        self.reference = reference
        keys = self.http.post("/api/v5/publicKeys", json=IDS,
                              headers={"Authorization": SERVICE_BASIC}).json()
        self.page_key = {"Authorization": f"PublicApiKey {keys['apiKey']}"}
        self.key_id = keys["encryptionKeyId"]
        pmd = self.http.post("/wallet/token", json={
            "cardId": card, "gatewayMerchantId": MERCHANT,
            "publicKeyApi": keys["apiKey"]}).json()["paymentMethodData"]
        made = self.http.post("/api/v5/paymentAccounts", headers=self.page_key, json={
            **IDS, "clientSystemTransactionId": reference,
            "paymentData": {"apiVersion": 2, "apiVersionMinor": 0, "paymentMethodData": pmd}})
        assert made.status_code == 200, made.text
        self.account: dict[str, Any] = made.json()

    def challenge(self, amount: str = "1234", headers: dict[str, str] | None = None,
                  **extra: Any) -> httpx.Response:
        return self.http.post("/api/v5/threeDSecure", headers=headers or SERVER_AUTH, json={
            **IDS, "transactionAccountId": self.account["transactionAccountId"],
            "amount": amount, "currencyCode": "EUR",
            "clientSystemTransactionId": self.reference, **extra})

    def status(self, challenge_id: str, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.http.get(f"/api/v5/threeDSecure/{challenge_id}", params=IDS,
                             headers=headers or SERVER_AUTH)

    def authorize(self, three_ds: dict[str, Any], amount: str = "1234",
                  reference: str | None = None,
                  headers: dict[str, str] | None = None) -> httpx.Response:
        return self.http.post("/api/v5/transactions", headers=headers or SERVER_AUTH, json={
            **IDS, "userId": "shop", "type": "ecom.sale", "amount": amount,
            "currencyCode": "EUR", "clientSystemTransactionId": reference or self.reference,
            "transactionAccountId": self.account["transactionAccountId"],
            "encryptionKeyId": self.key_id, "threeDSecure": three_ds})


def _refused(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    return f"{resp.json().get('description')}: {resp.json()['details']['message']}"


@pytest.fixture
def driven(browser: Any, sandbox: Any) -> Iterator[Any]:
    context = browser.new_context(**PHONE)
    context.add_init_script(httpx.get(f"{sandbox.url}/walletpay-testing.js").text)
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


@pytest.mark.browser
def test_the_result_authorizes_that_amount_and_reference_once(driven: Any,
                                                              sandbox: Any) -> None:
    shop = Shop(sandbox.url, "3ds-bound")
    back = f"{sandbox.url}/demo/merchant?from=3ds"
    made = shop.challenge(returnUrl=back)
    assert made.status_code == 200, made.text
    challenge = made.json()
    assert challenge["challengeUrl"] == f"{sandbox.url}/pay/3ds/{challenge['challengeId']}"
    assert shop.status(challenge["challengeId"]).json()["status"] == "pending"
    driven.goto(challenge["challengeUrl"])
    assert driven.evaluate("WalletPayTesting.challenge('pass')")["amount"] == "12.34 EUR"
    driven.wait_for_url(f"{back}&challengeId={challenge['challengeId']}")
    result = shop.status(challenge["challengeId"]).json()
    assert (result["status"], result["transStatus"], result["amount"]) == (
        "completed", "Y", "1234")
    three = result["threeDSecure"]
    # the page's key moves no money
    assert "server key" in _refused(shop.authorize(three, headers=shop.page_key), 403)
    # another amount, or another reference, is not what the payer approved
    assert "approved 12.34 EUR, not 0.01 EUR" in _refused(shop.authorize(three, "1"), 422)
    assert "another clientSystemTransactionId" in _refused(
        shop.authorize(three, reference="3ds-other"), 422)
    ok = shop.authorize(three)
    assert ok.status_code == 200, ok.text
    assert ok.json()["state"] == "Approved"
    # once: the result, the page, and the Card account itself
    assert _refused(shop.authorize(three), 422).startswith("ThreeDSecureUsed")
    again = driven.goto(challenge["challengeUrl"])
    assert again is not None
    assert again.status == 409
    assert _refused(shop.challenge(), 422).startswith("PaymentAccountUsed")
    shortcut = shop.http.post("/_sandbox/3ds/challenge", json={
        **IDS, "transactionAccountId": shop.account["transactionAccountId"]}).json()
    second = {k: shortcut[k] for k in ("threeDSServerTransId", "authenticationValue", "eci")}
    assert _refused(shop.authorize(second, reference="3ds-bound-2"), 422).startswith(
        "PaymentAccountUsed")


@pytest.mark.browser
def test_a_failed_check_declines(driven: Any, sandbox: Any) -> None:
    shop = Shop(sandbox.url, "3ds-fail")
    challenge = shop.challenge().json()
    driven.goto(challenge["challengeUrl"])
    driven.evaluate("WalletPayTesting.challenge('fail')")
    driven.wait_for_selector("text=The 3-D Secure check is answered")
    result = shop.status(challenge["challengeId"]).json()
    assert result["transStatus"] == "N"
    declined = shop.authorize(result["threeDSecure"]).json()
    assert (declined["state"], declined["providerStateCode"]) == (
        "Declined", "AuthenticationFailed")


@pytest.mark.browser
def test_the_page_on_a_phone_with_the_keyboard_and_axe(browser: Any, sandbox: Any,
                                                       artifacts: Path) -> None:
    shop = Shop(sandbox.url, "3ds-a11y")
    challenge = shop.challenge(returnUrl=f"{sandbox.url}/demo/merchant").json()
    context = browser.new_context(**PHONE)
    page = context.new_page()
    try:
        page.goto(challenge["challengeUrl"])
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        for name in ("#threeds-pass", "#threeds-fail", "#threeds-amount"):
            box = page.locator(name).bounding_box()
            assert box is not None, name
            assert 0 <= box["x"] <= box["x"] + box["width"] <= 393, name
            assert box["y"] + box["height"] <= 727, name
        assert _axe(page) == []
        page.screenshot(path=str(artifacts / "threeds-phone.png"), full_page=True)
        for _ in range(10):  # keyboard only: Tab to "Confirm payment", then Enter
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.id") == "threeds-pass":
                break
        assert page.evaluate("document.activeElement.id") == "threeds-pass"
        page.keyboard.press("Enter")
        page.wait_for_url(f"{sandbox.url}/demo/merchant?challengeId=*")
        assert shop.status(challenge["challengeId"]).json()["transStatus"] == "Y"
    finally:
        context.close()


def test_who_may_create_and_read_a_challenge(sandbox: Any) -> None:
    shop = Shop(sandbox.url, "3ds-who")
    assert "server key" in _refused(shop.challenge(headers=shop.page_key), 403)
    challenge_id = shop.challenge().json()["challengeId"]
    assert "server key" in _refused(shop.status(challenge_id, headers=shop.page_key), 403)
    assert _refused(shop.http.get(f"/api/v5/threeDSecure/{challenge_id}", headers=SERVER_AUTH,
                                  params={"merchantId": "M-2002", "storeId": STORE}),
                    404).startswith("ThreeDSecureChallengeNotFound")
    assert "amount" in _refused(shop.http.post("/api/v5/threeDSecure", headers=SERVER_AUTH,
                                               json={**IDS, "transactionAccountId": "ta_x"}),
                                400)
    token = Shop(sandbox.url, "3ds-token", card="mc-token")
    assert _refused(token.challenge(), 422).startswith("ThreeDSecureNotNeeded")
    assert shop.http.post(f"/pay/3ds/{challenge_id}", data={"answer": "maybe"}).status_code == 400
    assert shop.http.get("/pay/3ds/ch_00").status_code == 404


def test_the_shortcut_is_an_admin_route(sandbox: Any) -> None:
    shop = Shop(sandbox.url, "3ds-admin")
    body = {**IDS, "transactionAccountId": shop.account["transactionAccountId"]}
    # a page on another origin cannot mint 3DS results
    foreign = shop.http.post("/_sandbox/3ds/challenge", json=body,
                             headers={"Origin": "http://localhost:1234"})
    assert foreign.status_code == 403, foreign.text
    with EmbeddedSandbox(SandboxConfig(quiet=True, admin_token="t0ken-3ds")) as sb:
        guarded = Shop(sb.url, "3ds-admin")
        body["transactionAccountId"] = guarded.account["transactionAccountId"]
        assert guarded.http.post("/_sandbox/3ds/challenge", json=body).status_code == 401
        ok = guarded.http.post("/_sandbox/3ds/challenge", json=body,
                               headers={"X-Sandbox-Token": "t0ken-3ds"})
        assert ok.status_code == 200, ok.text
        # the CLI's shortcut sends the token it is given (--admin-token / $WALLETCTL_SANDBOX_TOKEN)
        cmd = [sys.executable, "-m", "walletctl", "-o", "json", "sandbox", "3ds",
               body["transactionAccountId"], "--url", sb.url, "--merchant-id", MERCHANT,
               "--store-id", STORE]
        refused = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode != 0
        assert "X-Sandbox-Token" in refused.stderr, refused.stderr
        done = subprocess.run([*cmd, "--admin-token", "t0ken-3ds"], capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["transStatus"] == "Y"


def test_an_unanswered_challenge_expires() -> None:
    with EmbeddedSandbox(SandboxConfig(quiet=True, allow_clock_control=True)) as sb:
        shop = Shop(sb.url, "3ds-late")
        challenge = shop.challenge().json()
        moved = shop.http.post("/_sandbox/clock", json={"advanceSeconds": 16 * 60})
        assert moved.status_code == 200, moved.text
        assert shop.status(challenge["challengeId"]).json()["status"] == "expired"
        page = shop.http.get(f"/pay/3ds/{challenge['challengeId']}")
        assert page.status_code == 410
        late = shop.http.post(f"/pay/3ds/{challenge['challengeId']}", data={"answer": "pass"})
        assert late.status_code == 410
        assert "has expired" in late.text
