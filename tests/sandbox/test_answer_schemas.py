"""Every success answer the sandbox's document declares is a named, closed schema, and every
JSON route's real answer matches its schema exactly (no key left out of it, none more): a
client generated from ``/openapi.json`` gets a class, never a free dictionary, and parses
what the server sends."""

from __future__ import annotations

import base64
import re
from typing import Any

import jsonschema_rs

from sandbox_fixtures import MERCHANT_ID, STORE_ID, make_checkout_body
from walletctl.models.sandbox_values import DEFAULT_SERVICE_SECRET
from walletctl.sandbox.success_models import SUCCESS_MODELS

from .helpers import APM, CHECKOUT

NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


def _document(client: Any) -> dict[str, Any]:
    doc: dict[str, Any] = client.get("/openapi.json").json()
    return doc


def _problems(doc: dict[str, Any], schema: dict[str, Any], where: str,
              seen: set[str]) -> list[str]:
    """Objects reachable from ``schema`` that hold keys nobody declared."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return []
        seen.add(name)
        return _problems(doc, doc["components"]["schemas"][name], name, seen)
    found = []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, ()):
            found += _problems(doc, sub, where, seen)
    if "items" in schema:
        found += _problems(doc, schema["items"], f"{where}[]", seen)
    extra = schema.get("additionalProperties")
    if schema.get("type") == "object" or "properties" in schema:
        if not schema.get("properties") and not isinstance(extra, dict):
            found.append(f"{where}: an object of undeclared keys")
        if isinstance(extra, dict):
            if not extra:
                found.append(f"{where}: additionalProperties of any type")
            found += _problems(doc, extra, f"{where}{{}}", seen)
        for name, sub in schema.get("properties", {}).items():
            found += _problems(doc, sub, f"{where}.{name}", seen)
    elif not schema.keys() & {"type", "enum", "const", "anyOf", "oneOf", "allOf", "not"}:
        found.append(f"{where}: untyped {schema}")
    return found


def test_every_success_answer_is_a_named_closed_schema(sandbox_client: Any) -> None:
    doc = _document(sandbox_client)
    schemas = doc["components"]["schemas"]
    json_answers = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, answer in op["responses"].items():
                if not status.startswith("2"):
                    continue
                schema = answer.get("content", {}).get("application/json", {}).get("schema")
                if schema is None:
                    continue
                json_answers += 1
                where = f"{method.upper()} {path} {status}"
                top = schema.get("items", schema)
                assert "$ref" in top, (where, schema)  # a named class, not an inline object
                assert not _problems(doc, schema, where, set()), _problems(
                    doc, schema, where, set())
    assert json_answers >= 30
    assert all(NAME.fullmatch(name) for name in schemas), sorted(schemas)
    for name in SUCCESS_MODELS:  # the sandbox's own answers: exactly their keys
        assert schemas[name]["additionalProperties"] is False, name


def _check(doc: dict[str, Any], method: str, path: str, resp: Any) -> Any:
    assert resp.status_code == 200, (method, path, resp.text)
    answer = doc["paths"][path][method]["responses"]["200"]
    schema = answer["content"]["application/json"]["schema"]
    body = resp.json()
    errors = [e.message for e in jsonschema_rs.Draft202012Validator(
        {**schema, "components": doc["components"]}).iter_errors(body)]
    assert not errors, (method, path, errors[:3])
    return body


def test_every_json_route_answers_its_declared_schema(sandbox_client: Any) -> None:
    """One call of each JSON route (and both kinds of payment account and demo result)."""
    doc, client, seen = _document(sandbox_client), sandbox_client, set()

    def call(method: str, path: str, url: str | None = None, **kw: Any) -> Any:
        seen.add((method, path))
        return _check(doc, method, path, client.request(method.upper(), url or path, **kw))

    call("get", "/_sandbox/health")
    call("get", "/_sandbox/values")
    call("post", "/_sandbox/clock", json={"advanceSeconds": 0})
    call("get", "/_sandbox/faults")
    call("post", "/_sandbox/faults", json={"latency_ms": 0})
    call("post", "/_sandbox/seed", json={"merchantId": MERCHANT_ID, "storeId": STORE_ID,
                                         "currency": "EUR", "kind": "sale", "transactions": [
                                             {"reference": "SEED-1", "amount": "12"}]})
    ref = "ANS-1"
    call("post", CHECKOUT, json=make_checkout_body(ref, "4000", "ecom.preauthorization"))
    call("post", "/_sandbox/checkouts/{ref}/{action}", f"/_sandbox/checkouts/{ref}/approve")
    call("post", APM, json={
        "merchantId": MERCHANT_ID, "storeId": STORE_ID, "userId": "ops-bot",
        "type": "ecom.capture", "amount": "4000", "currencyCode": "EUR",
        "clientSystemTransactionId": f"{ref}-CAP", "clientSystemInvoiceId": ref,
        "apmDetails": {"apmProvider": "WalletV2"}})
    call("get", APM, params={"merchantId": MERCHANT_ID, "storeId": STORE_ID,
                             "clientSystemTransactionId": ref})
    call("get", "/_sandbox/ledger")

    basic = base64.b64encode(f"ops-bot:{DEFAULT_SERVICE_SECRET}".encode()).decode()
    keys = call("post", "/api/v5/publicKeys", headers={"Authorization": f"Basic {basic}"},
                json={"merchantId": MERCHANT_ID, "storeId": STORE_ID})
    browser = {"Authorization": f"PublicApiKey {keys['apiKey']}"}
    scope = {"merchantId": MERCHANT_ID, "storeId": STORE_ID}
    call("get", "/api/v5/publicKeys/current", headers=browser, params=scope)
    call("get", "/wallet/cards")
    call("get", "/_sandbox/wallet/cards")
    call("get", "/_sandbox/wallet/rootKey")
    accounts = {}
    for card, path in (("mc-token", "/wallet/token"), ("visa-pan", "/_sandbox/wallet/token")):
        token = call("post", path, json={"cardId": card, "gatewayMerchantId": MERCHANT_ID,
                                         "publicKeyApi": keys["apiKey"]})
        accounts[card] = call("post", "/api/v5/paymentAccounts", headers=browser, json={
            **scope, "clientSystemTransactionId": f"ANS-{card}",
            "paymentData": token["paymentMethodData"]["tokenizationData"]["token"]})
    pan_id = accounts["visa-pan"]["transactionAccountId"]
    call("get", "/api/v5/paymentAccounts/{account_id}", f"/api/v5/paymentAccounts/{pan_id}",
         headers=browser, params={**scope, "encryptionKeyId": keys["encryptionKeyId"]})
    challenge = call("post", "/api/v5/threeDSecure", json={
        **scope, "transactionAccountId": pan_id, "amount": "1234", "currencyCode": "EUR",
        "clientSystemTransactionId": "ANS-visa-pan"})
    call("get", "/api/v5/threeDSecure/{challenge_id}",
         f"/api/v5/threeDSecure/{challenge['challengeId']}", params=scope)
    call("post", "/_sandbox/3ds/challenge", json={**scope, "transactionAccountId": pan_id,
                                                   "outcome": "success"})
    token_account = accounts["mc-token"]
    call("post", "/api/v5/transactions", json={
        **scope, "userId": "ops-bot", "type": "ecom.sale", "amount": "1234",
        "currencyCode": "EUR", "clientSystemTransactionId": "ANS-mc-token",
        "transactionAccountId": token_account["transactionAccountId"],
        "encryptionKeyId": keys["encryptionKeyId"], "cryptogram": token_account["cryptogram"],
        "eciIndicator": token_account["eciIndicator"]})
    driver = call("post", "/_sandbox/testing/token")
    call("post", "/wallet/testing/redeem", json={"token": driver["token"]})

    session = call("get", "/demo/merchant/api/session", params={"scenario": "full"})
    order = session["clientSystemTransactionId"]
    call("post", "/demo/merchant/api/quote", json={"reference": order, "offerCode": "NOPE"})
    sealed = call("post", "/wallet/token", json={
        "cardId": "visa-token", "gatewayMerchantId": "M-1001",
        "publicKeyApi": session["publicKeyApi"]})
    account = call("post", "/api/v5/paymentAccounts", json={
        "merchantId": "M-1001", "storeId": "S-01", "clientSystemTransactionId": order,
        "paymentData": sealed["paymentMethodData"]["tokenizationData"]["token"]},
        headers={"Authorization": f"PublicApiKey {session['publicKeyApi']}"})
    result = call("post", "/demo/merchant/api/result", json={"detail": {
        "clientSystemTransactionId": order, "transactionMethod": "WalletPay",
        "transactionAccountId": account["transactionAccountId"],
        "cryptogram": account["cryptogram"], "eciIndicator": account["eciIndicator"]}})
    assert result["outcome"] == "Approved", result
    call("post", "/demo/merchant/api/result", json={"detail": {"code": "X", "description": "Y"}})
    call("get", "/demo/merchant/api/results")
    call("post", "/_sandbox/reset")

    declared = {(method, path) for path, item in doc["paths"].items()
                for method, op in item.items()
                if "application/json" in op["responses"].get("200", {}).get("content", {})}
    assert declared == seen, declared ^ seen

