"""Browser-wallet state in the sandbox store: restarts with the same ``--db``, reset, upgrade."""

from __future__ import annotations

import json
import signal
import sqlite3
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from sandbox_fixtures import ServedSandbox
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.store import Store

from .conftest import MERCHANT, SERVICE_BASIC, STORE, Wallet, build_app

NOW = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)
WALLETPAY_TABLES = ("walletpay_accounts", "walletpay_three_ds", "walletpay_messages")


class Served(ServedSandbox):
    """A quiet ``sandbox serve`` with an HTTP client; :meth:`stop` asserts a clean exit."""

    def __init__(self, *args: str) -> None:
        super().__init__("--quiet", *args)
        self.client = httpx.Client(base_url=self.url, timeout=20)

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str, str]:
        self.client.close()
        code, out, err = super().stop(sig)
        assert code == 0, err
        return code, out, err


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sandbox.db"


@pytest.fixture
def servers() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for server in started:
        server.kill()


def _serve(servers: list[Served], db: Path) -> Served:
    server = Served("--db", str(db))
    servers.append(server)
    return server


def _keys(client: httpx.Client) -> dict[str, Any]:
    resp = client.post("/api/v5/publicKeys", json={"merchantId": MERCHANT, "storeId": STORE},
                       headers={"Authorization": SERVICE_BASIC})
    assert resp.status_code == 200, resp.text
    keys: dict[str, Any] = resp.json()
    return keys


def _token(client: httpx.Client, keys: dict[str, Any], card: str) -> dict[str, Any]:
    resp = client.post("/_sandbox/wallet/token", json={
        "cardId": card, "gatewayMerchantId": MERCHANT, "publicKeyApi": keys["apiKey"]})
    assert resp.status_code == 200, resp.text
    pmd: dict[str, Any] = resp.json()["paymentMethodData"]
    return pmd


def _create_account(client: httpx.Client, keys: dict[str, Any], pmd: dict[str, Any],
                    ref: str) -> httpx.Response:
    return client.post(
        "/api/v5/paymentAccounts", headers=_auth(keys),
        json={"merchantId": MERCHANT, "storeId": STORE, "clientSystemTransactionId": ref,
              "paymentData": {"apiVersion": 2, "apiVersionMinor": 0, "paymentMethodData": pmd}})


def _auth(keys: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"PublicApiKey {keys['apiKey']}"}


def _get_account(client: httpx.Client, keys: dict[str, Any], account_id: str) -> httpx.Response:
    return client.get(f"/api/v5/paymentAccounts/{account_id}", headers=_auth(keys),
                      params={"merchantId": MERCHANT, "storeId": STORE,
                              "encryptionKeyId": keys["encryptionKeyId"]})


def _authorize(client: httpx.Client, keys: dict[str, Any], account_id: str, ref: str,
               **extra: Any) -> httpx.Response:
    # the merchant server's credential (the page's key moves no money)
    return client.post("/api/v5/transactions",
                       headers={"Authorization": "PublicApiKey sandbox-api-key"}, json={
        "merchantId": MERCHANT, "storeId": STORE, "userId": "ops-bot", "type": "ecom.sale",
        "amount": "1234", "currencyCode": "EUR", "clientSystemTransactionId": ref,
        "transactionAccountId": account_id, "encryptionKeyId": keys["encryptionKeyId"],
        **extra})


def _challenge(client: httpx.Client, account_id: str) -> dict[str, Any]:
    resp = client.post("/_sandbox/3ds/challenge", json={
        "transactionAccountId": account_id, "merchantId": MERCHANT, "storeId": STORE})
    assert resp.status_code == 200, resp.text
    three: dict[str, Any] = resp.json()
    return {k: three[k] for k in ("threeDSServerTransId", "authenticationValue", "eci")}


def _rows(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608
    finally:
        conn.close()


# -- the real server, restarted ---------------------------------------------------------------


def test_restart_keeps_keys_accounts_and_3ds(servers: list[Served], db: Path) -> None:
    first = _serve(servers, db)
    c = first.client
    keys = _keys(c)
    root_key = c.get("/_sandbox/wallet/rootKey").json()["rootKey"]
    used_pmd = _token(c, keys, "mc-token")
    used = _create_account(c, keys, used_pmd, "wp-used")
    assert used.status_code == 200, used.text
    used_acc = used.json()
    approved = _authorize(c, keys, used_acc["transactionAccountId"], "wp-used",
                          cryptogram=used_acc["cryptogram"], eciIndicator=used_acc["eciIndicator"])
    assert approved.json()["state"] == "Approved", approved.text
    token_resp = _create_account(c, keys, _token(c, keys, "visa-token"), "wp-token")
    assert token_resp.status_code == 200, token_resp.text
    token_acc = token_resp.json()
    card_resp = _create_account(c, keys, _token(c, keys, "visa-pan"), "wp-card")
    assert card_resp.status_code == 200, card_resp.text
    card_id = card_resp.json()["transactionAccountId"]
    three_ds = _challenge(c, card_id)
    pending_pmd = _token(c, keys, "discover-token")  # minted now, used after the restart
    before = _get_account(c, keys, token_acc["transactionAccountId"])
    assert before.status_code == 200, before.text
    err = first.stop()[2]

    second = _serve(servers, db)
    c = second.client
    assert c.get("/_sandbox/wallet/rootKey").json()["rootKey"] == root_key
    after = _get_account(c, keys, token_acc["transactionAccountId"])
    assert after.status_code == 200, after.text
    assert after.json() == before.json()
    ok = _authorize(c, keys, token_acc["transactionAccountId"], "wp-token",
                    cryptogram=token_acc["cryptogram"], eciIndicator=token_acc["eciIndicator"])
    assert ok.status_code == 200, ok.text
    assert ok.json()["state"] == "Approved"
    card_ok = _authorize(c, keys, card_id, "wp-card", threeDSecure=three_ds)
    assert card_ok.status_code == 200, card_ok.text
    assert card_ok.json()["state"] == "Approved"
    # single use still holds for what was used before and after the restart
    again = _authorize(c, keys, used_acc["transactionAccountId"], "wp-used-2",
                       cryptogram=used_acc["cryptogram"], eciIndicator=used_acc["eciIndicator"])
    assert again.status_code == 422, again.text
    assert again.json()["description"] == "CryptogramUsed"
    reuse = _authorize(c, keys, card_id, "wp-card-2", threeDSecure=three_ds)
    assert reuse.status_code == 422, reuse.text
    assert reuse.json()["description"] == "ThreeDSecureUsed"
    # the issued encryption key and the wallet's signing keys survived: an older token works,
    assert _create_account(c, keys, pending_pmd, "wp-later").status_code == 200
    # and a token used before the restart is still a replay
    replay = _create_account(c, keys, used_pmd, "wp-replay")
    assert replay.status_code == 422, replay.text
    assert replay.json()["description"] == "PaymentDataReplayed"
    # the ledger has the authorizations (method WalletPay) next to each other
    refs = [t["reference"] for t in c.get("/_sandbox/ledger").json()["transactions"]]
    assert refs == ["wp-used", "wp-token", "wp-card"]
    err += second.stop()[2]
    for secret in (keys["apiKey"], token_acc["cryptogram"], three_ds["authenticationValue"],
                   "PRIVATE KEY"):
        assert secret not in err


# -- reset and the in-process app -------------------------------------------------------------


def _app_client(db: Path) -> TestClient:
    return TestClient(build_app(SandboxConfig(db_path=str(db))))


def test_reset_clears_walletpay_state(db: Path) -> None:
    with _app_client(db) as client:
        wallet = Wallet(client)
        account = wallet.account("mc-token", "wp-r1")
        card = wallet.account("visa-pan", "wp-r2")
        wallet.challenge(card["transactionAccountId"])
        root_key = client.get("/_sandbox/wallet/rootKey").json()["rootKey"]
        assert all(_rows(db, t) > 0 for t in WALLETPAY_TABLES)
        assert client.post("/_sandbox/reset").status_code == 200
        assert all(_rows(db, t) == 0 for t in WALLETPAY_TABLES)
        # only the sandbox-level keys are left (static key's encryption key, wallet signer)
        assert _rows(db, "walletpay_keys") == 3
        assert client.get("/_sandbox/wallet/rootKey").json()["rootKey"] == root_key
        static = {"Authorization": "PublicApiKey sandbox-api-key"}
        gone = client.get(f"/api/v5/paymentAccounts/{account['transactionAccountId']}",
                          headers=static, params={"merchantId": MERCHANT, "storeId": STORE,
                                                  "encryptionKeyId": wallet.keys[
                                                      "encryptionKeyId"]})
        assert gone.status_code == 404, gone.text
        # the issued API key is gone with its encryption key: the wallet cannot mint for it
        assert client.post("/_sandbox/wallet/token", json={
            "cardId": "mc-token", "gatewayMerchantId": MERCHANT,
            "publicKeyApi": wallet.keys["apiKey"]}).status_code == 401
        # new keys and accounts work after the reset
        fresh = Wallet(client)
        assert fresh.account("mc-token", "wp-r3")["cardType"] == "Token"
    with _app_client(db) as client:  # and a restart after the reset does not bring them back
        assert client.get(f"/api/v5/paymentAccounts/{card['transactionAccountId']}",
                          headers=static, params={"merchantId": MERCHANT, "storeId": STORE,
                                                  "encryptionKeyId": "x"}).status_code == 404


def test_static_key_encryption_key_survives_restart(db: Path) -> None:
    with _app_client(db) as client:
        pmd = client.post("/_sandbox/wallet/token", json={
            "cardId": "visa-token", "gatewayMerchantId": MERCHANT,
            "publicKeyApi": "sandbox-api-key"}).json()["paymentMethodData"]
    with _app_client(db) as client:
        resp = client.post("/api/v5/paymentAccounts",
                           headers={"Authorization": "PublicApiKey sandbox-api-key"},
                           json={"merchantId": MERCHANT, "storeId": STORE,
                                 "clientSystemTransactionId": "wp-static",
                                 "paymentData": {"paymentMethodData": pmd}})
        assert resp.status_code == 200, resp.text


def test_in_memory_sandboxes_share_nothing() -> None:
    with TestClient(build_app()) as one:
        wallet = Wallet(one)
        account = wallet.account("mc-token", "wp-m1")
        root_one = one.get("/_sandbox/wallet/rootKey").json()["rootKey"]
    with TestClient(build_app()) as two:
        assert two.get("/_sandbox/wallet/rootKey").json()["rootKey"] != root_one
        resp = two.get(f"/api/v5/paymentAccounts/{account['transactionAccountId']}",
                       headers={"Authorization": "PublicApiKey sandbox-api-key"},
                       params={"merchantId": MERCHANT, "storeId": STORE,
                               "encryptionKeyId": wallet.keys["encryptionKeyId"]})
        assert resp.status_code == 404


# -- the store's browser-wallet methods -------------------------------------------------------


def test_store_single_use_and_replay_guard() -> None:
    store = Store(None)
    store.add_walletpay_account(account_id="ta_1", merchant_id="M", store_id="S", key_id="ek_1",
                                data={"cardType": "Token"}, now=NOW)
    store.add_three_ds(trans_id="3ds_1", account_id="ta_1", data={"eci": "05"}, now=NOW)
    assert store.mark_walletpay_used("account", "ta_1") is True
    assert store.mark_walletpay_used("account", "ta_1") is False
    assert store.mark_walletpay_used("three_ds", "3ds_1") is True
    assert store.mark_walletpay_used("three_ds", "3ds_1") is False
    assert store.mark_walletpay_used("three_ds", "nope") is False
    row = store.walletpay_account("ta_1")
    assert row is not None
    assert (row.used, row.parent_id, row.data) == (True, "ek_1", {"cardType": "Token"})
    with pytest.raises(ValueError, match="kind"):
        store.mark_walletpay_used("transactions", "ta_1")
    assert store.claim_message_id("msg_1", 2_000, now_ms=1_000) is True
    assert store.claim_message_id("msg_1", 2_000, now_ms=1_500) is False
    # long expired ids are forgotten (the token's own expiry check refuses them first)
    assert store.claim_message_id("msg_2", 3_000, now_ms=2_000 + 86_400_001) is True
    assert store.claim_message_id("msg_1", 2_000, now_ms=2_000 + 86_400_001) is True


def test_store_keys_load_or_create_and_reset_keeps_sandbox_keys() -> None:
    store = Store(None)
    assert store.add_walletpay_key(key_id="wallet_root", private_pem="A", merchant_id=None,
                                   store_id=None, now=NOW, keep=True) == "A"
    assert store.add_walletpay_key(key_id="wallet_root", private_pem="B", merchant_id=None,
                                   store_id=None, now=NOW, keep=True) == "A"
    store.add_walletpay_key(key_id="ek_1", private_pem="PEM-SECRET", merchant_id="M",
                            store_id="S", now=NOW)
    key = store.walletpay_key("ek_1")
    assert key is not None
    assert (key.merchant_id, key.store_id, key.private_pem) == ("M", "S", "PEM-SECRET")
    assert "PEM-SECRET" not in repr(key)
    store.reset_walletpay()
    assert store.walletpay_key("ek_1") is None
    assert store.walletpay_key("wallet_root") is not None


def test_old_database_file_is_upgraded(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE api_keys (key TEXT PRIMARY KEY, merchant_id TEXT NOT NULL, "
                 "store_id TEXT NOT NULL, expires_at TEXT, created_at TEXT NOT NULL, extra TEXT)")
    conn.execute("INSERT INTO api_keys VALUES ('pk_old', 'M', 'S', NULL, ?, ?)",
                 (NOW.isoformat(), json.dumps({"encryptionKeyId": "ek_lost"})))
    conn.commit()
    conn.close()
    with _app_client(db) as client:
        # the old key is kept, but its encryption key was never stored: 401 as before
        resp = client.post("/_sandbox/wallet/token", json={
            "cardId": "mc-token", "gatewayMerchantId": "M", "publicKeyApi": "pk_old"})
        assert resp.status_code == 401, resp.text
        assert Wallet(client).account("mc-token", "wp-up")["cardType"] == "Token"
    assert _rows(db, "walletpay_accounts") == 1
