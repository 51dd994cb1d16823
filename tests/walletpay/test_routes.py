"""Sandbox browser-wallet routes: keys, payment accounts, authorization, 3DS and refusals."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import pytest
from fastapi.testclient import TestClient

if TYPE_CHECKING:
    from walletpay.conftest import Wallet

MERCHANT = "M-1001"
STORE = "S-01"
SERVICE_BASIC = "Basic " + base64.b64encode(b"ops-bot:sandbox-secret").decode()


def _error(resp: Any, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body: dict[str, Any] = resp.json()
    assert set(body) == {"code", "description", "details"}, body
    assert isinstance(body["details"]["message"], str)
    return body


def test_public_keys_are_fresh_per_call(make_wallet: Any) -> None:
    a, b = make_wallet().keys, make_wallet().keys
    assert set(a) == {"apiKey", "encryptionKey", "encryptionKeyId", "expiresAt"}
    assert a["apiKey"] != b["apiKey"]
    assert a["encryptionKeyId"] != b["encryptionKeyId"]
    assert a["expiresAt"].endswith("Z")


@pytest.mark.parametrize("header", [None, "Basic dXNlcjp3cm9uZw==", "PublicApiKey x"])
def test_public_keys_needs_service_credentials(client: TestClient, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    resp = client.post("/api/v5/publicKeys", json={"merchantId": MERCHANT, "storeId": STORE},
                       headers=headers)
    _error(resp, 401)


def test_public_keys_names_the_missing_field(client: TestClient) -> None:
    resp = client.post("/api/v5/publicKeys", json={"merchantId": MERCHANT},
                       headers={"Authorization": SERVICE_BASIC})
    body = _error(resp, 400)
    assert body["details"]["message"].startswith("storeId:")
    assert body["description"] == "GeneralValidationError"


def test_pan_only_card_becomes_a_masked_card_account(wallet: Wallet) -> None:
    created = wallet.account("visa-pan")
    assert created["cardType"] == "Card"
    assert "cryptogram" not in created
    resp = wallet.client.get(f"/api/v5/paymentAccounts/{created['transactionAccountId']}",
                             headers=wallet.auth, params={
                                 "merchantId": MERCHANT, "storeId": STORE,
                                 "encryptionKeyId": wallet.keys["encryptionKeyId"]})
    assert resp.status_code == 200, resp.text
    acct = resp.json()
    assert acct["cardType"] == "Card"
    assert acct["cardNetwork"] == "VISA"
    assert acct["maskedCardNumber"] == "411111******1111"
    assert (acct["expiryMonth"], acct["expiryYear"]) == (12, 2030)
    assert "4111111111111111" not in resp.text


def test_device_token_account_returns_cryptogram_and_eci(wallet: Wallet) -> None:
    created = wallet.account("mc-token")
    assert created["cardType"] == "Token"
    assert created["cardNetwork"] == "MASTERCARD"
    assert created["cryptogram"]
    assert created["eciIndicator"] == "02"


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"merchantId": "M-OTHER"}, 403),  # the API key is not for that merchant
        ({"storeId": "S-OTHER"}, 403),
        ({"encryptionKeyId": "ek_other"}, 403),
        ({"encryptionKeyId": ""}, 400),
    ],
)
def test_get_payment_account_refuses_wrong_owner_or_key(
    wallet: Wallet, params: dict[str, str], status: int
) -> None:
    account_id = wallet.account("visa-pan")["transactionAccountId"]
    query = {"merchantId": MERCHANT, "storeId": STORE,
             "encryptionKeyId": wallet.keys["encryptionKeyId"], **params}
    resp = wallet.client.get(f"/api/v5/paymentAccounts/{account_id}", headers=wallet.auth,
                             params=query)
    _error(resp, status)


def test_get_payment_account_other_merchant_with_own_key_is_not_found(
    client: TestClient, wallet: Wallet, make_wallet: Any
) -> None:
    account_id = wallet.account("visa-pan")["transactionAccountId"]
    other = make_wallet(merchant="M-2002")
    resp = client.get(f"/api/v5/paymentAccounts/{account_id}", headers=other.auth, params={
        "merchantId": "M-2002", "storeId": STORE,
        "encryptionKeyId": other.keys["encryptionKeyId"]})
    _error(resp, 404)
    resp = client.get("/api/v5/paymentAccounts/ta_unknown", headers=wallet.auth, params={
        "merchantId": MERCHANT, "storeId": STORE,
        "encryptionKeyId": wallet.keys["encryptionKeyId"]})
    _error(resp, 404)


def test_payment_accounts_need_the_public_api_key(wallet: Wallet) -> None:
    pmd = wallet.payment_method_data("visa-pan")
    resp = wallet.client.post("/api/v5/paymentAccounts", json={
        "merchantId": MERCHANT, "storeId": STORE, "clientSystemTransactionId": "x",
        "paymentData": {"paymentMethodData": pmd}})
    _error(resp, 401)


def test_replayed_token_is_refused(wallet: Wallet) -> None:
    pmd = wallet.payment_method_data("visa-pan")
    assert wallet.create_account("visa-pan", pmd=pmd).status_code == 200
    body = _error(wallet.create_account("visa-pan", pmd=pmd), 422)
    assert "already used" in body["details"]["message"]


def test_tampered_token_is_refused(wallet: Wallet) -> None:
    pmd = wallet.payment_method_data("visa-pan")
    token = json.loads(pmd["tokenizationData"]["token"])
    msg = json.loads(token["signedMessage"])
    msg["tag"] = msg["tag"][:-4] + ("AAAA" if msg["tag"][-4:] != "AAAA" else "BBBB")
    token["signedMessage"] = json.dumps(msg)
    pmd["tokenizationData"]["token"] = json.dumps(token)
    body = _error(wallet.create_account("visa-pan", pmd=pmd), 422)
    assert "signature" in body["details"]["message"]


def test_expired_token_is_refused(wallet: Wallet) -> None:
    pmd = wallet.payment_method_data("visa-pan", messageExpirySeconds=-1)
    body = _error(wallet.create_account("visa-pan", pmd=pmd), 422)
    assert "expired" in body["details"]["message"]


def test_token_for_another_key_is_refused(make_wallet: Any, wallet: Wallet) -> None:
    other = make_wallet()
    pmd = other.payment_method_data("visa-pan")  # encrypted to the other session's key
    _error(wallet.create_account("visa-pan", pmd=pmd), 422)


def test_token_for_another_merchant_is_refused(wallet: Wallet) -> None:
    resp = wallet.client.post("/_sandbox/wallet/token", json={
        "cardId": "visa-pan", "gatewayMerchantId": "M-OTHER",
        "encryptionKey": wallet.keys["encryptionKey"]})
    assert resp.status_code == 200, resp.text
    _error(wallet.create_account("visa-pan", pmd=resp.json()["paymentMethodData"]), 422)


def test_missing_token_names_the_field(wallet: Wallet) -> None:
    resp = wallet.client.post("/api/v5/paymentAccounts", headers=wallet.auth, json={
        "merchantId": MERCHANT, "storeId": STORE, "clientSystemTransactionId": "x",
        "paymentData": {"paymentMethodData": {}}})
    body = _error(resp, 400)
    assert "tokenizationData.token" in body["details"]["message"]


def test_token_account_authorizes_once_with_its_cryptogram(wallet: Wallet) -> None:
    acct = wallet.account("mc-token")
    aid = acct["transactionAccountId"]
    body = _error(wallet.authorize(aid, "t-1"), 400)
    assert "cryptogram" in body["details"]["message"]
    _error(wallet.authorize(aid, "t-2", cryptogram="AAAA", eciIndicator="02"), 422)
    ok = wallet.authorize(aid, "t-3", cryptogram=acct["cryptogram"], eciIndicator="02")
    assert ok.status_code == 200, ok.text
    tx = ok.json()
    assert tx["state"] == "Approved"
    assert tx["amount"] == "1234"
    assert tx["clientSystemTransactionId"] == "t-3"
    again = wallet.authorize(aid, "t-4", cryptogram=acct["cryptogram"], eciIndicator="02")
    assert "already used" in _error(again, 422)["details"]["message"]


def test_card_account_requires_3ds(wallet: Wallet) -> None:
    aid = wallet.account("visa-pan")["transactionAccountId"]
    body = _error(wallet.authorize(aid, "c-1"), 400)
    assert body["details"]["message"].startswith("threeDSecure:")
    three = wallet.challenge(aid)
    assert three["transStatus"] == "Y"
    tds = {k: three[k] for k in ("threeDSServerTransId", "authenticationValue", "eci")}
    bad = dict(tds, authenticationValue="forged")
    _error(wallet.authorize(aid, "c-2", threeDSecure=bad), 422)
    ok = wallet.authorize(aid, "c-3", threeDSecure=tds, type="ecom.preauthorization")
    assert ok.status_code == 200, ok.text
    assert ok.json()["state"] == "Approved"
    _error(wallet.authorize(aid, "c-4", threeDSecure=tds), 422)  # 3DS result used once


def test_failed_3ds_and_decline_card_are_declined(wallet: Wallet) -> None:
    aid = wallet.account("visa-pan")["transactionAccountId"]
    three = wallet.challenge(aid, "failure")
    tds = {k: three[k] for k in ("threeDSServerTransId", "authenticationValue", "eci")}
    resp = wallet.authorize(aid, "d-1", threeDSecure=tds)
    assert resp.status_code == 200, resp.text
    assert resp.json()["state"] == "Declined", resp.text
    did = wallet.account("visa-decline", ref="wp-2")["transactionAccountId"]
    three = wallet.challenge(did)
    tds = {k: three[k] for k in ("threeDSServerTransId", "authenticationValue", "eci")}
    resp = wallet.authorize(did, "d-2", threeDSecure=tds)
    assert resp.json()["state"] == "Declined", resp.text


def test_3ds_is_refused_for_a_token_account(wallet: Wallet) -> None:
    aid = wallet.account("mc-token")["transactionAccountId"]
    resp = wallet.client.post("/_sandbox/3ds/challenge", json={
        "transactionAccountId": aid, "merchantId": MERCHANT, "storeId": STORE})
    _error(resp, 422)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"amount": "12.5"}, "amount"),
        ({"currencyCode": "EURO"}, "currencyCode"),
        ({"type": "ecom.refund"}, "type"),
        ({"clientSystemTransactionId": ""}, "clientSystemTransactionId"),
    ],
)
def test_authorization_validation_names_the_field(
    wallet: Wallet, change: dict[str, str], field: str
) -> None:
    acct = wallet.account("mc-token")
    resp = wallet.authorize(acct["transactionAccountId"], "v-1", cryptogram=acct["cryptogram"],
                            eciIndicator="02", **change)
    body = _error(resp, 400)
    assert body["details"]["message"].startswith(field), body


def test_duplicate_reference_is_a_conflict(wallet: Wallet) -> None:
    first = wallet.account("mc-token")
    second = wallet.account("visa-token", ref="wp-2")
    ok = wallet.authorize(first["transactionAccountId"], "dup", cryptogram=first["cryptogram"],
                          eciIndicator="02")
    assert ok.status_code == 200, ok.text
    resp = wallet.authorize(second["transactionAccountId"], "dup",
                            cryptogram=second["cryptogram"], eciIndicator="05")
    _error(resp, 409)


def test_mint_token_refuses_unknown_card_and_key(wallet: Wallet) -> None:
    resp = wallet.client.post("/_sandbox/wallet/token", json={
        "cardId": "nope", "gatewayMerchantId": MERCHANT, "publicKeyApi": wallet.keys["apiKey"]})
    assert "cardId" in _error(resp, 400)["details"]["message"]
    resp = wallet.client.post("/_sandbox/wallet/token", json={
        "cardId": "visa-pan", "gatewayMerchantId": MERCHANT, "publicKeyApi": "pk_forged"})
    _error(resp, 401)


def test_static_assets_are_served(client: TestClient) -> None:
    js = client.get("/walletpay.js")
    assert js.status_code == 200
    assert "function runWalletPay" in js.text
    assert js.headers["content-type"].startswith("application/javascript")
    page = client.get("/demo/merchant")
    assert page.status_code == 200
    assert '<script src="/walletpay.js"' in page.text
    assert 'id="merchant-wallet-button"' in page.text
    cards = client.get("/_sandbox/wallet/cards").json()["cards"]
    assert {c["authMethod"] for c in cards} == {"PAN_ONLY", "CRYPTOGRAM_3DS"}
    assert all("pan" not in c for c in cards)


@pytest.mark.parametrize("query", ["amount=abc", "amount=0", "currency=EURO", "amount=1.234"])
def test_demo_session_refuses_bad_amounts(client: TestClient, query: str) -> None:
    _error(client.get(f"/demo/merchant/api/session?{query}"), 400)


def test_demo_merchant_server_flow_without_browser(client: TestClient) -> None:
    """The merchant server half of the demo, driven the way the page does it."""
    session = client.get("/demo/merchant/api/session?ref=srv-1&type=preauth").json()
    assert session["publicKeyApi"].startswith("pk_")
    pmd = client.post("/_sandbox/wallet/token", json={
        "cardId": "visa-pan", "gatewayMerchantId": session["merchantId"],
        "publicKeyApi": session["publicKeyApi"]}).json()["paymentMethodData"]
    created = client.post("/api/v5/paymentAccounts", headers={
        "Authorization": f"PublicApiKey {session['publicKeyApi']}"}, json={
        "merchantId": session["merchantId"], "storeId": session["storeId"],
        "clientSystemTransactionId": "srv-1", "paymentData": {"paymentMethodData": pmd}}).json()
    detail = {"clientSystemTransactionId": "srv-1", "transactionMethod": "WalletPay",
              "transactionAccountId": created["transactionAccountId"]}
    outcome = client.post("/demo/merchant/api/result", json={"detail": detail}).json()
    assert outcome["outcome"] == "Approved", outcome
    assert outcome["account"]["cardType"] == "Card"
    assert outcome["transaction"]["type"] == "ecom.preauthorization"
    listed = client.get("/demo/merchant/api/results").json()["results"]
    assert [r["detail"]["clientSystemTransactionId"] for r in listed] == ["srv-1"]
    error = client.post("/demo/merchant/api/result", json={"detail": {
        "code": "X", "description": "Y", "details": {"message": "z"}}}).json()
    assert error["outcome"] == "error"


GARBAGE: list[Any] = [None, [], "x", 1, {"merchantId": 5, "storeId": [], "paymentData": 3},
                      {"paymentData": {"protocolVersion": "ECv2", "signedMessage": "{}",
                                       "intermediateSigningKey": {"signedKey": "{}",
                                                                  "signatures": [1]}}},
                      {"amount": "1e999", "currencyCode": None, "type": {}},
                      {"cardId": "visa-pan", "gatewayMerchantId": "M", "encryptionKey": "AAAA"},
                      {"transactionAccountId": {}, "merchantId": "M", "storeId": "S",
                       "outcome": [1]}]
POSTS = ["/api/v5/publicKeys", "/api/v5/paymentAccounts", "/api/v5/transactions",
         "/_sandbox/wallet/token", "/_sandbox/3ds/challenge", "/demo/merchant/api/result"]


@pytest.mark.parametrize("path", POSTS)
def test_garbage_bodies_get_the_error_object_never_a_500(wallet: Wallet, path: str) -> None:
    headers = dict(wallet.auth) if path.startswith("/api/v5/") else {}
    if path.endswith("publicKeys"):
        headers = {"Authorization": SERVICE_BASIC}
    for body in GARBAGE:
        resp = wallet.client.post(path, content=json.dumps(body), headers=headers)
        assert resp.status_code < 500, (body, resp.text)
        if resp.status_code >= 400:
            assert set(resp.json()) == {"code", "description", "details"}, (body, resp.text)


def test_state_reset_forgets_accounts(app: Any, wallet: Wallet) -> None:
    account_id = wallet.account("visa-pan")["transactionAccountId"]
    app.state.walletpay.reset()
    resp = wallet.client.get(f"/api/v5/paymentAccounts/{account_id}", headers=wallet.auth,
                             params={"merchantId": MERCHANT, "storeId": STORE,
                                     "encryptionKeyId": wallet.keys["encryptionKeyId"]})
    _error(resp, 404)


def test_sandbox_reset_route_forgets_accounts(wallet: Wallet) -> None:
    account_id = wallet.account("visa-pan")["transactionAccountId"]
    assert wallet.client.post("/_sandbox/reset").status_code == 200
    resp = wallet.client.get(f"/api/v5/paymentAccounts/{account_id}", headers=wallet.auth,
                             params={"merchantId": MERCHANT, "storeId": STORE,
                                     "encryptionKeyId": wallet.keys["encryptionKeyId"]})
    assert resp.status_code in (401, 404), resp.text


def test_a_token_nested_deeper_than_any_parser_is_a_400(wallet: Wallet) -> None:
    """paymentData as a string of 100,000 "[": one line naming the field, never a 500."""
    resp = wallet.client.post("/api/v5/paymentAccounts", headers=wallet.auth, json={
        "merchantId": MERCHANT, "storeId": STORE, "clientSystemTransactionId": "deep",
        "paymentData": "[" * 100_000})
    assert resp.status_code == 400, resp.text
    assert "nested too deeply" in resp.json()["details"]["message"], resp.text
