"""Fixtures for the browser-wallet tests: an in-process sandbox app and a wallet flow helper."""

from __future__ import annotations

import base64
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

with warnings.catch_warnings():
    # starlette warns that its httpx-based TestClient is deprecated (httpx2); harmless here.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from walletctl.sandbox.config import SandboxConfig
from walletpay.sheet_access import CAPTURE_DETAIL, open_context

MERCHANT = "M-1001"
STORE = "S-01"
SERVER_AUTH = {"Authorization": "PublicApiKey sandbox-api-key"}
SERVICE_BASIC = "Basic " + base64.b64encode(b"ops-bot:sandbox-secret").decode()


def build_app(config: SandboxConfig | None = None) -> FastAPI:
    """The real sandbox app when it exists; else a bare app with only the walletpay routes."""
    config = config or SandboxConfig()
    try:
        from walletctl.sandbox.app import create_app
    except ImportError:
        from walletctl.sandbox.config import SandboxContext
        from walletctl.sandbox.store import Store
        from walletctl.sandbox.walletpay import install

        app = FastAPI()
        install(app, SandboxContext(config=config, store=Store(None)))
        return app
    return create_app(config)


@pytest.fixture
def app() -> FastAPI:
    return build_app()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


class Wallet:
    """Drives the gateway like the client script does."""

    def __init__(self, client: TestClient, merchant: str = MERCHANT, store: str = STORE) -> None:
        self.client = client
        self.merchant = merchant
        self.store = store
        resp = client.post("/api/v5/publicKeys", json={"merchantId": merchant, "storeId": store},
                           headers={"Authorization": SERVICE_BASIC})
        assert resp.status_code == 200, resp.text
        self.keys: dict[str, Any] = resp.json()
        self.auth = {"Authorization": f"PublicApiKey {self.keys['apiKey']}"}

    def payment_method_data(self, card: str, **extra: Any) -> dict[str, Any]:
        resp = self.client.post("/_sandbox/wallet/token", json={
            "cardId": card, "gatewayMerchantId": self.merchant,
            "publicKeyApi": self.keys["apiKey"], **extra})
        assert resp.status_code == 200, resp.text
        pmd: dict[str, Any] = resp.json()["paymentMethodData"]
        return pmd

    def create_account(self, card: str, ref: str = "wp-1",
                       pmd: dict[str, Any] | None = None) -> Any:
        pmd = pmd or self.payment_method_data(card)
        return self.client.post("/api/v5/paymentAccounts", headers=self.auth, json={
            "merchantId": self.merchant, "storeId": self.store, "clientSystemTransactionId": ref,
            "paymentData": {"apiVersion": 2, "apiVersionMinor": 0, "paymentMethodData": pmd}})

    def account(self, card: str, ref: str = "wp-1") -> dict[str, Any]:
        resp = self.create_account(card, ref)
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        return body

    def challenge(self, account_id: str, outcome: str = "success") -> dict[str, Any]:
        resp = self.client.post("/_sandbox/3ds/challenge", json={
            "transactionAccountId": account_id, "merchantId": self.merchant,
            "storeId": self.store, "outcome": outcome})
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        return body

    def authorize(self, account_id: str, ref: str, **extra: Any) -> Any:
        body = {"merchantId": self.merchant, "storeId": self.store, "userId": "ops-bot",
                "type": "ecom.sale", "amount": "1234", "currencyCode": "EUR",
                "clientSystemTransactionId": ref, "transactionAccountId": account_id,
                "encryptionKeyId": self.keys["encryptionKeyId"], **extra}
        # the merchant server's credential: the page's transaction key moves no money
        return self.client.post("/api/v5/transactions", headers=SERVER_AUTH, json=body)


@pytest.fixture
def wallet(client: TestClient) -> Wallet:
    return Wallet(client)


@pytest.fixture
def make_wallet(client: TestClient) -> Any:
    """Factory: ``make_wallet(merchant=..., store=...)`` -> a fresh :class:`Wallet` session."""

    def make(merchant: str = MERCHANT, store: str = STORE) -> Wallet:
        return Wallet(client, merchant, store)

    return make


# -- real browser (headless Chromium via Playwright) ---------------------------------------------
# One sandbox on a real loopback port and one browser per test module (the browser:
# tests/browser_fixtures.py, ``pw`` and ``browser``), each test in a context of its own.

SECRETS = ("sandbox-secret", "4111111111111111", "5204740000001002")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    from walletctl.sandbox.server import EmbeddedSandbox

    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = open_context(browser)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(10_000)
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def driven_page(browser: Any, sandbox: Any) -> Iterator[Any]:
    """A plain page (the sheet's shadow root stays closed) driven as a merchant's test does:
    the sandbox's /walletpay-testing.js (WalletPayTesting) and the page's own detail capture
    (``window.capturedDetail``) are added before the page loads."""
    context = browser.new_context()
    context.add_init_script(httpx.get(f"{sandbox.url}/walletpay-testing.js").text)
    context.add_init_script(CAPTURE_DETAIL)
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def driver_token(sandbox: Any) -> str:
    """A one-time token for the test driver, from the sandbox's admin API (as a test runs)."""
    resp = httpx.post(f"{sandbox.url}/_sandbox/testing/token")
    assert resp.status_code == 200, resp.text
    return str(resp.json()["token"])


def drive(page: Any, sandbox: Any, expression: str) -> Any:
    """``expression`` evaluated with ``T``, a fresh driver token: ``WalletPayTesting.pay({token:
    T, card: ...})``."""
    return page.evaluate(f"(T) => {expression}", driver_token(sandbox))


@pytest.fixture
def cli(sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``cli("account", ...)``: the real CLI against ``sandbox``; checks no secret leaks."""
    monkeypatch.setenv("WALLETCTL_TEST_KEY", "sandbox-api-key")
    monkeypatch.setenv("WALLETCTL_TEST_SERVICE_SECRET", "sandbox-secret")
    path = tmp_path / "profiles.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"""default_profile = "sandbox"
[profiles.sandbox]
base_url = "{sandbox.url}"
merchant_id = "M-1001"
store_id = "S-01"
user_id = "ops-bot"
currency = "EUR"
timeout = 10
[profiles.sandbox.auth]
scheme = "PublicApiKey"
key_env = "WALLETCTL_TEST_KEY"
service_secret_env = "WALLETCTL_TEST_SERVICE_SECRET"
""")
    from click.testing import CliRunner

    from walletctl.cli.main import app as cli_app

    runner = CliRunner()

    def run(*args: str, expect: int = 0, hidden: tuple[str, ...] = ()) -> Any:
        result = runner.invoke(cli_app, ["--config", str(path), "-o", "json", *args])
        text = result.stdout + result.stderr
        assert result.exit_code == expect, f"walletctl {' '.join(args)} -> {text}"
        for secret in (*SECRETS, *hidden):
            assert secret not in text, f"secret leaked by walletctl {args[0]}"
        return json.loads(result.stdout) if result.stdout.strip() else None

    return run


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go (tests/artifacts/, git-ignored; kept for a person to look at)."""
    path = Path(__file__).resolve().parents[1] / "artifacts"
    path.mkdir(exist_ok=True)
    return path
