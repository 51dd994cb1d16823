"""The sandbox's OpenAPI document: every route, request schemas from the routes' own models
(:mod:`walletctl.sandbox.requests`), response schemas from the shared models, the gateway
error object, the ``PublicApiKey`` and ``Basic`` security schemes, declared path and query
parameters. Routes that answer HTML or JavaScript (hosted page, demo page, ``/walletpay.js``)
are listed with their content type."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from walletctl.models.base import MONEY_KEYS, WireModel
from walletctl.models.checkout import CheckoutResponse
from walletctl.models.money import MAX_DIGITS as MAJOR_DIGITS
from walletctl.sandbox import replies, requests
from walletctl.sandbox.engine import ACTIONS
from walletctl.sandbox.wire import MAX_DIGITS

_SCHEMA_REF = "#/components/schemas/{model}"

_ERROR_SCHEMA = {
    "type": "object",
    "required": ["code", "description", "details"],
    "properties": {
        "code": {"type": "string"},
        "description": {"type": "string"},
        "details": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
}


def errors_doc(*statuses: int) -> dict[str, dict[str, Any]]:
    return {
        str(s): {
            "description": replies.error_body(s, "")["description"],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for s in statuses
    }


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of ``app`` (built once): routes plus the shared models' schemas,
    the error object and the ``PublicApiKey`` scheme."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, description=app.description,
                      routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    from walletctl.models.followup import FollowUpResponse
    from walletctl.models.records import TransactionRecord

    named: dict[str, type[WireModel]] = {
        **REQUEST_MODELS, "CheckoutResponse": CheckoutResponse,
        "FollowUpResponse": FollowUpResponse, "TransactionRecord": TransactionRecord}
    for name, model in named.items():
        schema = model.model_json_schema(
            by_alias=True, ref_template=_SCHEMA_REF,
            mode="validation" if name in REQUEST_MODELS else "serialization")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    schemas["Error"] = _ERROR_SCHEMA
    _money_types(schemas)
    doc["components"].setdefault("securitySchemes", {}).update({
        "PublicApiKey": {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": "`PublicApiKey <key>`: the server key (default sandbox-api-key), "
                           "or a per-transaction key for the browser-wallet calls",
        },
        "ServiceSecret": {"type": "http", "scheme": "basic",
                          "description": "`userId:<service secret>` (public key service)"},
    })
    _describe_operations(doc)
    _declare_path_parameters(doc)
    app.openapi_schema = doc
    return doc


def _declare_path_parameters(doc: dict[str, Any]) -> None:
    """Declare every ``{name}`` of a path template (routes that read ``Request`` directly
    leave them out, which makes the document invalid for tools like schemathesis)."""
    for path, item in doc.get("paths", {}).items():
        names = re.findall(r"{([^}:]+)(?::[^}]*)?}", path)
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            params = operation.setdefault("parameters", [])
            have = {(p.get("name"), p.get("in")) for p in params if isinstance(p, dict)}
            for name in names:
                if (name, "path") not in have:
                    schema: dict[str, Any] = {"type": "string"}
                    if name == "action":
                        schema["enum"] = list(ACTIONS)
                    params.append({"name": name, "in": "path", "required": True,
                                   "schema": schema})


# request body schema of each JSON route (component name -> the route's model)
REQUEST_MODELS: dict[str, type[WireModel]] = {
    "CheckoutRequest": requests.CheckoutBody,
    "FollowUpRequest": requests.FollowUpBody,
    "PublicKeysRequest": requests.PublicKeysBody,
    "PaymentAccountRequest": requests.PaymentAccountBody,
    "AuthorizationRequest": requests.AuthorizationBody,
    "WalletTokenRequest": requests.WalletTokenBody,
    "ThreeDSChallengeRequest": requests.ChallengeBody,
    "ThreeDSecureRequest": requests.ChallengeRequestBody,
    "DemoQuoteRequest": requests.DemoQuoteBody,
    "DemoResultRequest": requests.DemoResultBody,
    "ClockRequest": requests.ClockBody,
}
_FAULTS = {"type": "object", "description": "fault settings: the X-Sandbox-Fault header's "
                                            "names (snake_case or dashed); {} clears"}
_BODIES: dict[tuple[str, str], str | dict[str, Any]] = {
    ("post", "/api/v5/checkout"): "CheckoutRequest",
    ("post", "/api/v5/apmTransactions"): "FollowUpRequest",
    ("post", "/api/v5/publicKeys"): "PublicKeysRequest",
    ("post", "/api/v5/paymentAccounts"): "PaymentAccountRequest",
    ("post", "/api/v5/transactions"): "AuthorizationRequest",
    ("post", "/wallet/token"): "WalletTokenRequest",
    ("post", "/_sandbox/wallet/token"): "WalletTokenRequest",
    ("post", "/_sandbox/3ds/challenge"): "ThreeDSChallengeRequest",
    ("post", "/api/v5/threeDSecure"): "ThreeDSecureRequest",
    ("post", "/demo/merchant/api/quote"): "DemoQuoteRequest",
    ("post", "/demo/merchant/api/result"): "DemoResultRequest",
    ("post", "/_sandbox/clock"): "ClockRequest",
    ("post", "/_sandbox/faults"): _FAULTS,
}
_OPTIONAL_BODY = {("post", "/_sandbox/clock"), ("post", "/_sandbox/faults")}
_QUERIES: dict[tuple[str, str], tuple[tuple[str, bool], ...]] = {
    ("get", "/api/v5/apmTransactions"): (
        ("merchantId", True), ("storeId", True), ("clientSystemTransactionId", True)),
    ("get", "/api/v5/publicKeys/current"): (("merchantId", True), ("storeId", True)),
    ("get", "/api/v5/threeDSecure/{challenge_id}"): (("merchantId", True), ("storeId", True)),
    ("get", "/api/v5/paymentAccounts/{account_id}"): (
        ("merchantId", True), ("storeId", True), ("encryptionKeyId", True)),
    ("get", "/demo/merchant/api/session"): (
        ("ref", False), ("amount", False), ("currency", False), ("type", False),
        ("authorize", False), ("scenario", False), ("merchantId", False), ("storeId", False)),
    ("post", "/_sandbox/checkouts/{ref}/{action}"): (("merchantId", False), ("storeId", False)),
}
_SECURITY: dict[tuple[str, str], str] = {
    ("post", "/api/v5/checkout"): "PublicApiKey",
    ("post", "/api/v5/apmTransactions"): "PublicApiKey",
    ("get", "/api/v5/apmTransactions"): "PublicApiKey",
    ("post", "/api/v5/publicKeys"): "ServiceSecret",
    ("get", "/api/v5/publicKeys/current"): "PublicApiKey",
    ("post", "/api/v5/paymentAccounts"): "PublicApiKey",
    ("get", "/api/v5/paymentAccounts/{account_id}"): "PublicApiKey",
    ("post", "/api/v5/transactions"): "PublicApiKey",
    ("post", "/api/v5/threeDSecure"): "PublicApiKey",
    ("get", "/api/v5/threeDSecure/{challenge_id}"): "PublicApiKey",
}
# the 200 answer of the gateway's own routes (which may also answer 503: a fault)
_GATEWAY_ANSWERS: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("post", "/api/v5/checkout"): (
        "Checkout created", {"$ref": _SCHEMA_REF.format(model="CheckoutResponse")}),
    ("post", "/api/v5/apmTransactions"): (
        "Follow-up applied", {"$ref": _SCHEMA_REF.format(model="FollowUpResponse")}),
    ("get", "/api/v5/apmTransactions"): ("Records", {
        "type": "array", "items": {"$ref": _SCHEMA_REF.format(model="TransactionRecord")}}),
}
_NOT_JSON: dict[str, str] = {  # path -> content type of its 200 answer
    "/pay/{token}": "text/html",
    "/pay/3ds/{challenge_id}": "text/html",
    "/walletpay-testing.js": "application/javascript",
    "/walletpay.js": "application/javascript",
    "/walletpay.d.ts": "application/typescript",
    "/demo/merchant": "text/html",
    "/demo/merchant.js": "application/javascript",
}
_PAY_FORM = {"content": {"application/x-www-form-urlencoded": {"schema": {
    "type": "object", "required": ["action"],
    "properties": {"action": {"type": "string",
                              "enum": list(ACTIONS)}}}}},
    "required": True}
_CHALLENGE_FORM = {"content": {"application/x-www-form-urlencoded": {"schema": {
    "type": "object", "required": ["answer"],
    "properties": {"answer": {"type": "string", "enum": ["pass", "fail"]}}}}},
    "required": True}
# the HTML message pages of the hosted pages, by status
_PAGE_ERRORS = {"/pay/{token}": (400, 404, 410), "/pay/3ds/{challenge_id}": (400, 404, 409, 410)}


_AMOUNT_IN = {"anyOf": [
    {"type": "string", "pattern": f"^[0-9]{{1,{MAJOR_DIGITS}}}(\\.[0-9]{{1,3}})?$"},
    {"type": "number"}],
    "description": f"ASCII digits, optional decimal point, at most {MAJOR_DIGITS} digits before "
                   f"it ({MAX_DIGITS} in all), in the sandbox's amount format (minor units: no "
                   "decimal point)"}
_AMOUNT_OUT = {"type": "number", "description": "a JSON number written from the exact "
                                                "decimal (minor units or decimal, as served)"}


def _money_types(schemas: dict[str, Any]) -> None:
    """Amounts as the server reads and writes them (pydantic would say string/number)."""
    for name, schema in schemas.items():
        for prop, sub in (schema.get("properties") or {}).items():
            if prop.lower() in MONEY_KEYS and isinstance(sub, dict):
                is_record = name == "TransactionRecord"
                schema["properties"][prop] = {"title": sub.get("title", prop),
                                              **(_AMOUNT_OUT if is_record else _AMOUNT_IN)}


def _describe_operations(doc: dict[str, Any]) -> None:
    """Request bodies, query parameters, security and non-JSON answers of routes that read
    ``Request`` themselves (FastAPI cannot see what they read)."""
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict):
                continue
            key = (method, path)
            body = _BODIES.get(key)
            if body is not None:
                schema = {"$ref": _SCHEMA_REF.format(model=body)} if isinstance(body, str) \
                    else body
                op["requestBody"] = {"required": key not in _OPTIONAL_BODY,
                                     "content": {"application/json": {"schema": schema}}}
            if path == "/pay/{token}" and method == "post":
                op["requestBody"] = _PAY_FORM
            if path == "/pay/3ds/{challenge_id}" and method == "post":
                op["requestBody"] = _CHALLENGE_FORM
            params = op.setdefault("parameters", [])
            for name, required in _QUERIES.get(key, ()):
                params.append({"name": name, "in": "query", "required": required,
                               "schema": {"type": "string"}})
            if key in _SECURITY:
                op["security"] = [{_SECURITY[key]: []}]
            ctype = _NOT_JSON.get(path)
            if ctype is not None:
                answer = "303" if method == "post" else "200"
                op["responses"] = {
                    answer: {"description": "the page" if answer == "200" else
                             "redirect to the checkout's URL",
                             **({"content": {ctype: {"schema": {"type": "string"}}}}
                                if answer == "200" else {})},
                    **{str(s): {"description": "an HTML message page",
                                "content": {"text/html": {"schema": {"type": "string"}}}}
                       for s in _PAGE_ERRORS.get(path, ())},
                }
                if path == "/pay/3ds/{challenge_id}" and method == "post":
                    # answered without a returnUrl: an HTML page
                    op["responses"]["200"] = {"description": "the answer was taken",
                                              "content": {ctype: {"schema": {"type": "string"}}}}
            else:
                answers = op.setdefault("responses", {})
                if key in _GATEWAY_ANSWERS:
                    what, schema = _GATEWAY_ANSWERS[key]
                    answers["200"] = {"description": what,
                                      "content": {"application/json": {"schema": schema}}}
                    answers.update(errors_doc(503))
                answers.update({k: v for k, v in errors_doc(400, 401, 403, 404, 405, 409, 413,
                                                             415, 422, 429).items()
                                if k not in answers})
