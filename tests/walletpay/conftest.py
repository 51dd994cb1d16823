"""Fixtures for the browser-wallet tests: an in-process sandbox app and a wallet flow helper."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

with warnings.catch_warnings():
    # starlette warns that its httpx-based TestClient is deprecated (httpx2); harmless here.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from walletctl.sandbox.config import SandboxConfig

MERCHANT = "M-1001"
STORE = "S-01"
SERVICE_BASIC = "Basic " + base64.b64encode(b"ops-bot:sandbox-secret").decode()


def build_app(config: SandboxConfig | None = None) -> FastAPI:
    """The real sandbox app when it exists; else a bare app with only the walletpay routes."""
    config = config or SandboxConfig()
    try:
        from walletctl.sandbox.app import create_app
    except ImportError:
        from walletctl.sandbox.context import SandboxContext
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
        return self.client.post("/api/v5/transactions", headers=self.auth, json=body)


@pytest.fixture
def wallet(client: TestClient) -> Wallet:
    return Wallet(client)


@pytest.fixture
def make_wallet(client: TestClient) -> Any:
    """Factory: ``make_wallet(merchant=..., store=...)`` -> a fresh :class:`Wallet` session."""

    def make(merchant: str = MERCHANT, store: str = STORE) -> Wallet:
        return Wallet(client, merchant, store)

    return make
