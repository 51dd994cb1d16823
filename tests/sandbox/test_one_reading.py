"""The sandbox reads every request once, on a real port with raw HTTP: spellings cannot steer
the credential check, the per-transaction key only pays, no input makes a 5xx, and an
identical checkout retried gets its stored answer."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox_fixtures import make_checkout_body, make_followup_body
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

SERVER_KEY = "srv-key-h20"
SERVER = {"Authorization": f"PublicApiKey {SERVER_KEY}"}
BASIC = {"Authorization": "Basic " + base64.b64encode(f"ops:{SERVER_KEY}".encode()).decode()}
JSON = {"content-type": "application/json"}
M_A, S_A, M_B, S_B = "M-A", "S-A", "M-B", "S-B"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    config = SandboxConfig(quiet=True, api_key=SERVER_KEY, allow_clock_control=True)
    with EmbeddedSandbox(config) as sb:
        yield sb


@pytest.fixture
def http(sandbox: EmbeddedSandbox) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sandbox.url, timeout=30) as client:
        assert client.post("/_sandbox/reset").status_code == 200
        yield client


def error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"code", "description", "details"}, body
    text: str = body["details"]["message"]
    return text


def transaction_key(http: httpx.Client, merchant: str = M_A,
                    store: str = S_A) -> dict[str, Any]:
    resp = http.post("/api/v5/publicKeys", json={"merchantId": merchant, "storeId": store},
                     headers=BASIC)
    assert resp.status_code == 200, resp.text
    keys: dict[str, Any] = resp.json()
    keys["auth"] = {"Authorization": f"PublicApiKey {keys['apiKey']}"}
    return keys


def approved_preauth(http: httpx.Client, ref: str, merchant: str = M_B,
                     store: str = S_B) -> None:
    body = make_checkout_body(ref, "5000", "ecom.preAuthorization", merchantId=merchant,
                              storeId=store)
    assert http.post("/api/v5/checkout", json=body, headers=SERVER).status_code == 200
    resp = http.post(f"/_sandbox/checkouts/{ref}/approve")
    assert resp.status_code == 200, resp.text


def ledger(http: httpx.Client) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = http.get("/_sandbox/ledger").json()["transactions"]
    return rows


def respell(body: dict[str, Any], how: str) -> dict[str, Any]:
    """``body`` aimed at M-B/S-B, its ids spelled ``how``."""
    out = {k: v for k, v in body.items() if k not in ("merchantId", "storeId")}
    if how == "snake":
        out.update(merchant_id=M_B, store_id=S_B)
    elif how == "mixed":  # the key's own merchant under the wire name, M-B under the Python one
        out.update(merchantId=M_A, storeId=S_A, merchant_id=M_B, store_id=S_B)
    elif how == "upper":  # a case variant IS the wire name: the scope check sees M-B
        out.update(MERCHANTID=M_B, STOREID=S_B)
    elif how == "twice":  # two spellings of one field
        out.update(merchantId=M_A, MerchantId=M_B, storeId=S_A)
    return out


SPELLINGS = ("snake", "mixed", "upper", "twice")


@pytest.mark.parametrize("how", SPELLINGS)
def test_spellings_cannot_steer_the_key_check(http: httpx.Client, how: str) -> None:
    """A key for M-A never acts for M-B, whatever the spelling; nothing is created for M-B."""
    keys = transaction_key(http)
    approved_preauth(http, "B-PRE")
    before = ledger(http)
    routes = [
        ("/api/v5/checkout", make_checkout_body("X-CO", merchantId=M_A, storeId=S_A)),
        ("/api/v5/apmTransactions", make_followup_body("B-PRE-C", "B-PRE", "capture", "100")),
        ("/api/v5/paymentAccounts", {"merchantId": M_A, "storeId": S_A,
                                     "clientSystemTransactionId": "X-PA",
                                     "paymentData": {"protocolVersion": "ECv2"}}),
        ("/api/v5/transactions", {"merchantId": M_A, "storeId": S_A, "userId": "u",
                                  "type": "ecom.sale", "amount": "100", "currencyCode": "EUR",
                                  "clientSystemTransactionId": "X-TX",
                                  "transactionAccountId": "ta_x"}),
    ]
    for path, body in routes:
        resp = http.post(path, json=respell(body, how), headers=keys["auth"])
        if path in ("/api/v5/checkout", "/api/v5/apmTransactions", "/api/v5/transactions"):
            assert "server key" in error(resp, 403)  # a transaction key never goes here
        elif how == "upper":
            assert "not issued for this merchant" in error(resp, 403)
        elif how == "twice":
            assert "MerchantId: given twice" in error(resp, 400)
        else:
            assert "merchant_id: is not a field" in error(resp, 400)
    # the server key with Python names: the same refusal, naming the key
    body = respell(make_checkout_body("X-SRV"), "snake")
    assert "merchant_id: is not a field of this request" in error(
        http.post("/api/v5/checkout", json=body, headers=SERVER), 400)
    assert ledger(http) == before


def test_an_expired_transaction_key_is_401_everywhere(http: httpx.Client) -> None:
    keys = transaction_key(http)
    approved_preauth(http, "B-EXP")
    assert http.post("/_sandbox/clock", json={"advanceSeconds": 31 * 60}).status_code == 200
    calls = [
        ("POST", "/api/v5/checkout", respell(make_checkout_body("X-E1"), "snake")),
        ("POST", "/api/v5/apmTransactions", make_followup_body("B-EXP-C", "B-EXP", "capture",
                                                               "100", merchantId=M_B)),
        ("POST", "/api/v5/transactions", {"merchant_id": M_B, "storeId": S_B}),
        ("POST", "/api/v5/paymentAccounts", {"merchantId": M_A}),
        ("GET", f"/api/v5/apmTransactions?merchantId={M_B}&storeId={S_B}"
                "&clientSystemTransactionId=B-EXP", None),
        ("GET", f"/api/v5/publicKeys/current?merchantId={M_A}&storeId={S_A}", None),
    ]
    for method, path, body in calls:
        resp = http.request(method, path, json=body, headers=keys["auth"])
        assert "expired" in error(resp, 401), path
    assert [r["state"] for r in ledger(http)] == ["Approved"]


def _token(http: httpx.Client, keys: dict[str, Any], card: str) -> dict[str, Any]:
    resp = http.post("/wallet/token", json={"cardId": card, "gatewayMerchantId": M_A,
                                            "publicKeyApi": keys["apiKey"]})
    assert resp.status_code == 200, resp.text
    pmd: dict[str, Any] = resp.json()["paymentMethodData"]
    return pmd


def _account(http: httpx.Client, keys: dict[str, Any], card: str, ref: str) -> dict[str, Any]:
    resp = http.post("/api/v5/paymentAccounts", headers=keys["auth"], json={
        "merchantId": M_A, "storeId": S_A, "clientSystemTransactionId": ref,
        "paymentData": {"apiVersion": 2, "paymentMethodData": _token(http, keys, card)}})
    assert resp.status_code == 200, resp.text
    account: dict[str, Any] = resp.json()
    return account


def _authorization(keys: dict[str, Any], account: dict[str, Any], ref: str,
                   **extra: Any) -> dict[str, Any]:
    return {"merchantId": M_A, "storeId": S_A, "userId": "shop", "type": "ecom.sale",
            "amount": "1500", "currencyCode": "EUR", "clientSystemTransactionId": ref,
            "transactionAccountId": account["transactionAccountId"],
            "encryptionKeyId": keys["encryptionKeyId"], **extra}


def test_the_transaction_key_cannot_pay_refund_or_read(http: httpx.Client) -> None:
    keys = transaction_key(http)
    # the browser-wallet flow: the page's transaction key makes and reads the account ...
    account = _account(http, keys, "visa-pan", "WP-1")
    got = http.get(f"/api/v5/paymentAccounts/{account['transactionAccountId']}",
                   params={"merchantId": M_A, "storeId": S_A,
                           "encryptionKeyId": keys["encryptionKeyId"]}, headers=keys["auth"])
    assert got.status_code == 200, got.text
    three = http.post("/_sandbox/3ds/challenge", json={
        "transactionAccountId": account["transactionAccountId"], "merchantId": M_A,
        "storeId": S_A}).json()
    body = _authorization(keys, account, "WP-1", threeDSecure={k: three[k] for k in (
        "threeDSServerTransId", "authenticationValue", "eci")})
    # ... but moves no money: the authorization is the merchant server's (server key)
    assert "server key" in error(http.post("/api/v5/transactions", headers=keys["auth"],
                                           json=body), 403)
    sale = http.post("/api/v5/transactions", headers=SERVER, json=body)
    assert sale.status_code == 200, sale.text
    assert sale.json()["state"] == "Approved"
    # ... but the same key neither refunds that sale nor reads its records
    refund = make_followup_body("WP-1-R", "WP-1", "refund", "1500", merchantId=M_A,
                                storeId=S_A)
    assert "server key" in error(http.post("/api/v5/apmTransactions", json=refund,
                                           headers=keys["auth"]), 403)
    lookup = {"merchantId": M_A, "storeId": S_A, "clientSystemTransactionId": "WP-1"}
    assert "server key" in error(http.get("/api/v5/apmTransactions", params=lookup,
                                          headers=keys["auth"]), 403)
    # the merchant's server key does both
    assert http.post("/api/v5/apmTransactions", json=refund, headers=SERVER).status_code == 200
    records = http.get("/api/v5/apmTransactions", params=lookup, headers=SERVER)
    assert [r["state"] for r in records.json()] == ["Approved", "Approved"]


def test_every_500_reproducer_is_now_a_4xx(http: httpx.Client) -> None:
    keys = transaction_key(http)
    lone = b'"\\udcff"'
    raw = [
        ("/api/v5/publicKeys", b'{"merchantId":' + lone + b',"storeId":"S"}', BASIC),
        ("/api/v5/checkout", b'{"merchantId":' + lone + b'}', SERVER),
        ("/api/v5/paymentAccounts", b'{"merchantId":"M-A","storeId":"S-A",'
                                    b'"clientSystemTransactionId":"R","paymentData":' + lone
         + b'}', keys["auth"]),
        ("/wallet/token", b'{"cardId":"visa-pan","gatewayMerchantId":' + lone
         + b',"publicKeyApi":"k"}', {}),
        ("/_sandbox/3ds/challenge", b'{"transactionAccountId":' + lone
         + b',"merchantId":"M","storeId":"S"}', {}),
        ("/demo/merchant/api/quote", b'{"reference":' + lone + b'}', {}),
        ("/demo/merchant/api/result", b'{"detail":{' + lone + b':"x"}}', {}),
        ("/_sandbox/faults", b'{' + lone + b':1}', {}),
    ]
    for path, body, headers in raw:
        resp = http.post(path, content=body, headers={**JSON, **headers})
        assert "surrogate" in error(resp, 400), path
    # a non-ASCII Basic secret
    basic = "Basic " + base64.b64encode("ops:sécret-ü".encode()).decode()
    assert error(http.post("/api/v5/publicKeys", json={"merchantId": M_A, "storeId": S_A},
                           headers={"Authorization": basic}), 401)
    # a non-ASCII cryptogram on a Token account
    account = _account(http, keys, "mc-token", "WP-TOK")
    resp = http.post("/api/v5/transactions", headers=SERVER, json=_authorization(
        keys, account, "WP-TOK", cryptogram="crypto-ü-€", eciIndicator=account["eciIndicator"]))
    assert error(resp, 422)
    # a JSON number in a demo result: refused, and the results list is still readable
    resp = http.post("/demo/merchant/api/result", json={"detail": {"code": 5,
                                                                   "email": 1.5}})
    assert "detail.code" in error(resp, 400)
    assert http.get("/demo/merchant/api/results").status_code == 200
    # the clock: a huge move is refused naming the field; everything works afterwards
    for seconds in (8e13, -8e13, 316224001, "1e999"):
        resp = http.post("/_sandbox/clock", json={"advanceSeconds": seconds})
        assert "advanceSeconds" in error(resp, 400)
    assert http.post("/api/v5/checkout", json=make_checkout_body("AFTER-1"),
                     headers=SERVER).status_code == 200
    assert http.get("/api/v5/apmTransactions", headers=SERVER, params={
        "merchantId": "M-1001", "storeId": "S-01",
        "clientSystemTransactionId": "AFTER-1"}).status_code == 200
    assert transaction_key(http)["apiKey"]


def test_clock_bound_in_total_and_reset_sets_it_back(http: httpx.Client) -> None:
    assert http.post("/_sandbox/clock", json={"advanceSeconds": 316224000}).status_code == 200
    resp = http.post("/_sandbox/clock", json={"advanceSeconds": 1})
    assert "advanceSeconds" in error(resp, 400)
    assert http.post("/_sandbox/reset").status_code == 200
    assert http.post("/_sandbox/clock", json={"advanceSeconds": 60}).status_code == 200


def test_an_identical_checkout_retried_gets_its_stored_answer(http: httpx.Client) -> None:
    body = make_checkout_body("RETRY-1")
    first = http.post("/api/v5/checkout", json=body, headers=SERVER)
    assert first.status_code == 200, first.text
    # the same request again, even in another key case: the stored answer
    recased = json.loads(json.dumps(body).replace('"merchantId"', '"MerchantID"'))
    for again_body in (body, recased):
        again = http.post("/api/v5/checkout", json=again_body, headers=SERVER)
        assert again.status_code == 200, again.text
        assert again.json()["redirectUrl"] == first.json()["redirectUrl"]
        assert again.headers["x-sandbox-replayed"] == "true"
    assert "x-sandbox-replayed" not in first.headers
    # another body under the same reference: 409
    other = http.post("/api/v5/checkout", json=make_checkout_body("RETRY-1", "999"),
                      headers=SERVER)
    assert "RETRY-1" in error(other, 409)
    assert len(ledger(http)) == 1


def test_docs_page_loads_nothing_from_the_internet(http: httpx.Client) -> None:
    page = http.get("/docs")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert urls
    assert all(u.startswith("/docs/assets/") for u in urls), urls
    assert "http://" not in page.text
    assert "https://" not in page.text
    for url in urls:
        asset = http.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 500, url
    assert "/openapi.json" in page.text
    error(http.get("/docs/assets/..%2Fapp.py"), 404)


def test_query_and_service_routes_take_wire_names_only(http: httpx.Client) -> None:
    keys = transaction_key(http)
    approved_preauth(http, "B-Q")
    snake = {"merchant_id": M_B, "store_id": S_B, "clientSystemTransactionId": "B-Q"}
    # lookups: the transaction key never reads; the server key needs the wire names
    assert "server key" in error(http.get("/api/v5/apmTransactions", params=snake,
                                          headers=keys["auth"]), 403)
    assert "merchantId: is required" in error(
        http.get("/api/v5/apmTransactions", params=snake, headers=SERVER), 400)
    # browser-wallet reads: another merchant's id is 403, a Python name is no id at all
    other = {"merchantId": M_B, "storeId": S_B, "encryptionKeyId": keys["encryptionKeyId"]}
    for path in ("/api/v5/paymentAccounts/ta_x", "/api/v5/publicKeys/current"):
        assert "not issued" in error(http.get(path, params=other, headers=keys["auth"]), 403)
        error(http.get(path, params={**snake, "encryptionKeyId": "ek"},
                       headers=keys["auth"]), 400)
    # the public key service and the 3DS step: Python names are not ids either
    assert "merchant_id: is not a field" in error(http.post(
        "/api/v5/publicKeys", json={"merchant_id": M_B, "store_id": S_B}, headers=BASIC), 400)
    assert "MerchantId: given twice" in error(http.post(
        "/api/v5/publicKeys", json={"merchantId": M_A, "MerchantId": M_B, "storeId": S_A},
        headers=BASIC), 400)
    assert "merchantId: is required" in error(http.post("/_sandbox/3ds/challenge", json={
        "transactionAccountId": "ta_x", "merchant_id": M_B, "store_id": S_B}), 400)
