"""The sandbox's OpenAPI document (what FastAPI cannot see, added from the tables below) and
its ``/docs`` page, Swagger UI served offline from the ``swagger-ui-bundle`` package."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, Response
from pydantic import BaseModel

from walletctl.models.base import MONEY_KEYS, WireModel
from walletctl.models.checkout import CheckoutResponse
from walletctl.models.fields import (
    NOT_BLANK_PATTERN,
    REFERENCE_MAX,
    REFERENCE_RULE,
    reference_pattern,
)
from walletctl.models.money import MAX_DIGITS as MAJOR_DIGITS
from walletctl.models.money import exponent, payable_currencies
from walletctl.sandbox import replies, requests
from walletctl.sandbox.auth import ROUTES
from walletctl.sandbox.config import MAX_LATENCY_MS, MAX_RETRY_AFTER_S
from walletctl.sandbox.engine import ACTIONS
from walletctl.sandbox.middleware import route_class
from walletctl.sandbox.replies import SandboxError
from walletctl.sandbox.requests import CLOCK_MAX_SECONDS
from walletctl.sandbox.success_models import success_schemas
from walletctl.sandbox.walletpay import CARDS_BY_ID

_SCHEMA_REF = "#/components/schemas/{model}"

_ERROR_REF = {"$ref": _SCHEMA_REF.format(model="Error")}
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


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of ``app`` (built once)."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, description=app.description,
                      routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    from walletctl.models.followup import FollowUpResponse
    from walletctl.models.records import TransactionRecord

    named: dict[str, type[BaseModel]] = {
        **REQUEST_MODELS, "CheckoutResponse": CheckoutResponse,
        "FollowUpResponse": FollowUpResponse, "TransactionRecord": TransactionRecord}
    wire_models: dict[type[WireModel], None] = {}
    for model in REQUEST_MODELS.values():
        _wire_models(model, wire_models)
    for name, model in named.items():
        schema = model.model_json_schema(
            by_alias=True, ref_template=_SCHEMA_REF,
            mode="validation" if name in REQUEST_MODELS else "serialization")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = {**schema, "title": name}  # a generated client's class name
    schemas["Error"] = _ERROR_SCHEMA
    _note_key_spellings(schemas, wire_models)
    fmt = app.state.ctx.config.amount_format
    _money_types(schemas, fmt)
    schemas.update(success_schemas())  # after the money types: answers keep theirs
    _rules_a_model_checks(schemas)
    doc["components"].setdefault("securitySchemes", {}).update({
        "PublicApiKey": {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": "`PublicApiKey <key>`: the server key (default sandbox-api-key), "
                           "or a per-transaction key for the browser-wallet calls",
        },
        "TransactionKey": {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": "`PublicApiKey <key>`: a per-transaction key from the public key "
                           "service (createPublicKey), for its merchant and store only",
        },
        "ServiceSecret": {"type": "http", "scheme": "basic",
                          "description": "`userId:<service secret>` (public key service)"},
        "AdminToken": {
            "type": "apiKey", "in": "header", "name": "X-Sandbox-Token",
            "description": "the sandbox's admin token, required on /_sandbox/* (but health "
                           "and the wallet emulator) when it has one (a non-loopback bind, "
                           "or --admin-token)"},
    })
    _describe_operations(doc)
    _declare_path_parameters(doc)
    used = json.dumps(doc["paths"])
    for unused in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422, never answered
        if _SCHEMA_REF.format(model=unused) not in used:
            schemas.pop(unused, None)
    for path, item in doc["paths"].items():
        for method, op in item.items():
            op["operationId"] = OPERATION_IDS.get((method, path), op.get("operationId"))
            if method == "head":  # GET's name, its verb replaced
                op["operationId"] = re.sub("^[a-z]+", "head", OPERATION_IDS[("get", path)])
    _link_operations(doc)
    app.openapi_schema = doc
    return doc


_KEY_CASE = ("Keys are read in any ASCII letter case (merchantId, MerchantId, MERCHANTID), "
             "each field once; this document spells them as the spec's parameter tables do.")


def _wire_models(model: type[BaseModel], found: dict[type[WireModel], None]) -> None:
    """``model`` and every wire model nested in it, into ``found``."""
    if model in found or not issubclass(model, WireModel):
        return
    found[model] = None
    for field in model.model_fields.values():
        stack: list[Any] = [field.annotation]
        while stack:
            tp = stack.pop()
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                _wire_models(tp, found)
            else:
                stack.extend(typing.get_args(tp))


def _note_key_spellings(schemas: dict[str, Any], models: dict[type[WireModel], None]) -> None:
    """State on each request schema that keys are read in any case, and the samples' variant
    names (``x-key-variants``)."""
    component = {model.__name__: name for name, model in REQUEST_MODELS.items()}
    for model in models:
        schema = schemas[component.get(model.__name__, model.__name__)]
        variants = dict(model._variants)
        note = _KEY_CASE
        if variants:
            schema["x-key-variants"] = variants
            note += " Also read: " + ", ".join(
                f"{k} for {v}" for k, v in sorted(variants.items())) + "."
        schema["description"] = f"{schema.get('description', '').strip()}\n\n{note}".strip()


_CART_RULES = {
    "ItemDetail": "totalAmount = unitAmount x productQuantity - discountAmount; taxRate > 0 "
                  "needs totalTaxAmount; discountAmount > 0 needs discountName (and "
                  "discountTaxAmount when taxRate > 0).",
    "ShippingDetails": "shippingAmount > 0 needs shippingName.",
    "ShoppingCartDetails": "totalTaxAmount = the items' totalTaxAmount + shippingTaxAmount, and "
                           "it is required when any taxRate or shippingTaxRate > 0.",
}


def _rules_a_model_checks(schemas: dict[str, Any]) -> None:
    """Rules the request models check in code, stated in their schemas."""
    token = schemas["WalletTokenRequest"]
    token["properties"]["cardId"]["enum"] = list(CARDS_BY_ID)
    for name in ("publicKeyApi", "encryptionKey"):
        token["properties"][name] = {"anyOf": [
            {"type": "string", "minLength": 1, "pattern": NOT_BLANK_PATTERN}, {"type": "null"}]}
    token["properties"]["encryptionKey"]["description"] = (
        "the recipient's public key: base64 of its DER SubjectPublicKeyInfo, EC P-256")
    token["properties"]["publicKeyApi"]["description"] = "a key the gateway issued"
    # one of the two given, not null; if/then rather than anyOf: a generator makes one class
    # of an object with if/then, and several partial ones of an anyOf
    token["if"] = {"not": _given("publicKeyApi")}
    token["then"] = _given("encryptionKey")
    schemas["ClockRequest"]["properties"]["advanceSeconds"] = {
        "type": "integer", "minimum": -CLOCK_MAX_SECONDS, "maximum": CLOCK_MAX_SECONDS,
        "default": 0, "description": "whole seconds (a JSON integer); the clock stays within "
                                     "this of real time in total (409 beyond)"}
    schemas["FollowUpRequest"]["properties"]["clientSystemTransactionId"]["description"] = (
        "the follow-up's own new reference: not its clientSystemInvoiceId (400 if equal)")
    schemas["AuthorizationRequest"]["properties"]["currencyCode"] = \
        schemas["CheckoutRequest"]["properties"]["currencyCode"]
    for name, rules in _CART_RULES.items():
        schemas[name]["description"] = f"Rules a schema cannot compute (400 naming the field "\
                                       f"when broken): {rules}"
    # the conditional fields of spec 2.1's cart tables: given (not null) -> also given
    for name, given, also in (("DiscountDetail", "discountAmount", ("discountType",
                                                                    "discountName")),
                              ("ItemDetail", "unitTaxAmount", ("taxRate",))):
        schemas[name]["if"] = _given(given)
        schemas[name]["then"] = _given(*also)


def _given(*names: str) -> dict[str, Any]:
    """The schema of an object in which each of ``names`` is present and not null."""
    return {"required": list(names),
            "properties": {name: {"not": {"type": "null"}} for name in names}}


def _declare_path_parameters(doc: dict[str, Any]) -> None:
    """Declare every ``{name}`` of a path template (routes reading ``Request`` leave them out)."""
    for path, item in doc["paths"].items():
        names = re.findall(r"{([^}:]+)(?::[^}]*)?}", path)
        for operation in item.values():
            params = operation.setdefault("parameters", [])
            have = {(p["name"], p["in"]) for p in params}
            for name in names:
                if (name, "path") not in have:
                    params.append({"name": name, "in": "path", "required": True,
                                   "schema": {"type": "string"}})
            for param in params:
                if param.get("in") == "path" and param.get("name") == "action":
                    param["schema"] = {"type": "string", "enum": list(ACTIONS)}


# the operationId of every route (HEAD: its GET's): a generated client's method names
OPERATION_IDS: dict[tuple[str, str], str] = {
    ("post", "/api/v5/checkout"): "createCheckout",
    ("post", "/api/v5/apmTransactions"): "createFollowUp",
    ("get", "/api/v5/apmTransactions"): "lookupTransactions",
    ("get", "/pay/{token}"): "showPaymentPage",
    ("post", "/pay/{token}"): "decidePayment",
    ("get", "/_sandbox/health"): "getHealth",
    ("get", "/_sandbox/values"): "getTestValues",
    ("post", "/_sandbox/reset"): "resetSandbox",
    ("post", "/_sandbox/checkouts/{ref}/{action}"): "decideCheckout",
    ("get", "/_sandbox/ledger"): "getLedger",
    ("get", "/_sandbox/faults"): "getFaults",
    ("post", "/_sandbox/faults"): "setFaults",
    ("post", "/_sandbox/seed"): "seedCheckouts",
    ("post", "/_sandbox/clock"): "advanceClock",
    ("post", "/api/v5/publicKeys"): "createPublicKey",
    ("get", "/api/v5/publicKeys/current"): "checkPublicKey",
    ("post", "/api/v5/paymentAccounts"): "createPaymentAccount",
    ("get", "/api/v5/paymentAccounts/{account_id}"): "getPaymentAccount",
    ("post", "/api/v5/transactions"): "authorizeTransaction",
    ("get", "/wallet/cards"): "listWalletCards",
    ("post", "/wallet/token"): "createWalletToken",
    ("get", "/_sandbox/wallet/cards"): "listSandboxWalletCards",
    ("post", "/_sandbox/wallet/token"): "createSandboxWalletToken",
    ("get", "/_sandbox/wallet/rootKey"): "getWalletRootKey",
    ("post", "/_sandbox/3ds/challenge"): "runThreeDSChallenge",
    ("post", "/_sandbox/testing/token"): "issueDriverToken",
    ("post", "/wallet/testing/redeem"): "redeemDriverToken",
    ("post", "/api/v5/threeDSecure"): "createThreeDSecureChallenge",
    ("get", "/api/v5/threeDSecure/{challenge_id}"): "getThreeDSecureChallenge",
    ("get", "/pay/3ds/{challenge_id}"): "showThreeDSecurePage",
    ("post", "/pay/3ds/{challenge_id}"): "answerThreeDSecure",
    ("get", "/walletpay-testing.js"): "getWalletpayTestingScript",
    ("get", "/walletpay.js"): "getWalletpayScript",
    ("get", "/walletpay.d.ts"): "getWalletpayTypes",
    ("get", "/demo/merchant"): "getDemoMerchantPage",
    ("get", "/demo/merchant.js"): "getDemoMerchantScript",
    ("get", "/demo/merchant/api/session"): "getDemoSession",
    ("post", "/demo/merchant/api/quote"): "quoteDemoOrder",
    ("post", "/demo/merchant/api/result"): "recordDemoResult",
    ("get", "/demo/merchant/api/results"): "listDemoResults",
}

_FAULT_RATE = {"type": "number", "minimum": 0, "maximum": 1}
_FAULTS = {
    "type": "object", "additionalProperties": False,
    "description": "Fault settings for the /api/v5 routes ({} clears them). Each name is also "
                   "read dashed (error-rate) and in any letter case, as in the X-Sandbox-Fault "
                   "header; latency, jitter and status are short for the _ms/error_ names.",
    "properties": {
        "latency_ms": {"type": "integer", "minimum": 0, "maximum": MAX_LATENCY_MS},
        "jitter_ms": {"type": "integer", "minimum": 0, "maximum": MAX_LATENCY_MS},
        "error_rate": _FAULT_RATE,
        "error_status": {"type": "integer", "minimum": 500, "maximum": 599},
        "throttle_rate": _FAULT_RATE,
        "retry_after": {"type": "integer", "minimum": 0, "maximum": MAX_RETRY_AFTER_S},
        "drop_rate": _FAULT_RATE,
        "error_after_rate": _FAULT_RATE,
        "seed": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
}
# the JSON body of each route: (component name, the route's model), or its schema
_BODIES: dict[tuple[str, str], tuple[str, type[BaseModel]] | dict[str, Any]] = {
    ("post", "/api/v5/checkout"): ("CheckoutRequest", requests.CheckoutBody),
    ("post", "/api/v5/apmTransactions"): ("FollowUpRequest", requests.FollowUpBody),
    ("post", "/api/v5/publicKeys"): ("PublicKeysRequest", requests.PublicKeysBody),
    ("post", "/api/v5/paymentAccounts"): ("PaymentAccountRequest", requests.PaymentAccountBody),
    ("post", "/api/v5/transactions"): ("AuthorizationRequest", requests.AuthorizationBody),
    ("post", "/wallet/token"): ("WalletTokenRequest", requests.WalletTokenBody),
    ("post", "/_sandbox/wallet/token"): ("WalletTokenRequest", requests.WalletTokenBody),
    ("post", "/_sandbox/3ds/challenge"): ("ThreeDSChallengeRequest", requests.ChallengeBody),
    ("post", "/wallet/testing/redeem"): ("DriverTokenRequest", requests.DriverTokenBody),
    ("post", "/api/v5/threeDSecure"): ("ThreeDSecureRequest", requests.ChallengeRequestBody),
    ("post", "/demo/merchant/api/quote"): ("DemoQuoteRequest", requests.DemoQuoteBody),
    ("post", "/demo/merchant/api/result"): ("DemoResultRequest", requests.DemoResultBody),
    ("post", "/_sandbox/clock"): ("ClockRequest", requests.ClockBody),
    ("post", "/_sandbox/faults"): _FAULTS,
    ("post", "/_sandbox/seed"): ("SeedRequest", requests.SeedRequest),
}
REQUEST_MODELS = dict(body for body in _BODIES.values() if isinstance(body, tuple))
_OPTIONAL_BODY = {("post", "/_sandbox/clock"), ("post", "/_sandbox/faults")}

# query parameters: (name, required, schema)
_SCOPE_ID = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NOT_BLANK_PATTERN}
_KEY_ID = {"type": "string", "minLength": 1, "pattern": NOT_BLANK_PATTERN}


def _reference() -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": REFERENCE_MAX,
            "pattern": reference_pattern(), "description": f"Merchant reference: {REFERENCE_RULE}"}


_DEMO_AMOUNT = r"^$|^([1-9][0-9]{0,8}(\.[0-9]{1,2})?|0\.([1-9][0-9]?|0[1-9]))$"
_CENT_CURRENCIES = [c for c in payable_currencies() if exponent(c) == 2]


def _queries() -> dict[tuple[str, str], tuple[tuple[str, bool, dict[str, Any]], ...]]:
    scope = (("merchantId", True, _SCOPE_ID), ("storeId", True, _SCOPE_ID))
    return {
        ("get", "/api/v5/apmTransactions"): (
            *scope, ("clientSystemTransactionId", True, _reference())),
        ("get", "/api/v5/publicKeys/current"): scope,
        ("get", "/api/v5/threeDSecure/{challenge_id}"): scope,
        ("get", "/api/v5/paymentAccounts/{account_id}"): (
            *scope, ("encryptionKeyId", True, _KEY_ID)),
        ("get", "/demo/merchant/api/session"): (
            ("ref", False, {**_reference(), "minLength": 0,  # empty: as if absent
                            "pattern": f"^$|{reference_pattern()}",
                            "description": "the order's reference; empty or absent: a new one"}),
            ("amount", False, {"type": "string", "pattern": _DEMO_AMOUNT,
                               "description": "major units above zero (default 12.34)"}),
            ("currency", False, {"type": "string", "enum": ["", *_CENT_CURRENCIES],
                                 "description": "default EUR; any ISO 4217 code is read "
                                                "(whole amounts for one without cents)"}),
            ("type", False, {"type": "string", "description": "preauth: a "
                             "pre-authorisation; any other value: a sale"}),
            ("authorize", False, {"type": "string", "description": "0, false or no: the "
                                  "demo only collects the token"}),
            ("scenario", False, {"type": "string", "description": "full: with shipping"}),
            ("merchantId", False, {"type": "string", "enum": ["", "M-1001"]}),
            ("storeId", False, {"type": "string", "enum": ["", "S-01"]})),
        ("post", "/_sandbox/checkouts/{ref}/{action}"): (
            ("merchantId", False, _SCOPE_ID), ("storeId", False, _SCOPE_ID)),
    }


_GATEWAY_ANSWERS: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("post", "/_sandbox/checkouts/{ref}/{action}"): (
        "The checkout decided, as on the hosted page",
        {"$ref": _SCHEMA_REF.format(model="DecideCheckoutResult")}),
    ("get", "/_sandbox/ledger"): (
        "Every transaction, oldest first (with Accept: application/x-ndjson: one "
        "LedgerEntry per line instead)", {"$ref": _SCHEMA_REF.format(model="Ledger")}),
    ("post", "/api/v5/checkout"): (
        "Checkout created", {"$ref": _SCHEMA_REF.format(model="CheckoutResponse")}),
    ("post", "/api/v5/apmTransactions"): (
        "Follow-up applied", {"$ref": _SCHEMA_REF.format(model="FollowUpResponse")}),
    ("get", "/api/v5/apmTransactions"): ("Records", {
        "type": "array", "items": {"$ref": _SCHEMA_REF.format(model="TransactionRecord")}}),
}
_RESULT_OF: dict[tuple[str, str], str] = {
    ("post", "/api/v5/publicKeys"): "PublicKeysResponse",
    ("get", "/api/v5/publicKeys/current"): "PublicKeyStatus",
    ("post", "/api/v5/paymentAccounts"): "PaymentAccount",
    ("get", "/api/v5/paymentAccounts/{account_id}"): "PaymentAccount",
    ("post", "/api/v5/transactions"): "AuthorizationResponse",
    ("get", "/wallet/cards"): "WalletCards",
    ("get", "/_sandbox/wallet/cards"): "WalletCards",
    ("post", "/wallet/token"): "WalletPaymentData",
    ("post", "/_sandbox/wallet/token"): "WalletPaymentData",
    ("get", "/_sandbox/wallet/rootKey"): "WalletRootKey",
    ("post", "/_sandbox/seed"): "SeedResult",
    ("post", "/_sandbox/faults"): "FaultSettings",
    ("get", "/_sandbox/faults"): "FaultSettings",
    ("get", "/_sandbox/health"): "SandboxHealth",
    ("get", "/_sandbox/values"): "SandboxValues",
    ("post", "/_sandbox/reset"): "ResetResult",
    ("post", "/_sandbox/clock"): "ClockResult",
    ("post", "/api/v5/threeDSecure"): "ThreeDSecureChallenge",
    ("get", "/api/v5/threeDSecure/{challenge_id}"): "ThreeDSecureStatus",
    ("post", "/_sandbox/3ds/challenge"): "ThreeDSecureResult",
    ("post", "/_sandbox/testing/token"): "DriverToken",
    ("post", "/wallet/testing/redeem"): "DriverTokenRedeemed",
    ("get", "/demo/merchant/api/session"): "DemoSession",
    ("post", "/demo/merchant/api/quote"): "DemoQuote",
    ("post", "/demo/merchant/api/result"): "DemoResult",
    ("get", "/demo/merchant/api/results"): "DemoResults",
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


def _form(name: str, values: list[str]) -> dict[str, Any]:
    """A hosted page's form: one required field of ``values``."""
    return {"content": {"application/x-www-form-urlencoded": {"schema": {
        "type": "object", "required": [name], "additionalProperties": False,
        "properties": {name: {"type": "string", "enum": values}}}}}, "required": True}


_FORMS = {("post", "/pay/{token}"): _form("action", list(ACTIONS)),
          ("post", "/pay/3ds/{challenge_id}"): _form("answer", ["pass", "fail"])}
_HTML_PAGE = {"content": {"text/html": {"schema": {"type": "string"}}}}
# the hosted pages' answers (303: a redirect; else an HTML page), and their HTML errors
_PAGE_ANSWERS: dict[str, dict[str, tuple[tuple[str, str], ...]]] = {
    "/pay/{token}": {
        "get": (("200", "the approval page"),
                ("303", "the link has expired: redirect to errorUrl")),
        "post": (("303", "the decision applied: redirect to the checkout's URL"),)},
    "/pay/3ds/{challenge_id}": {
        "get": (("200", "the shopper's 3-D Secure check"),),
        "post": (("303", "answered: redirect to the challenge's returnUrl with ?challengeId="),
                 ("200", "answered (no returnUrl): an HTML page"))},
}
_PAGE_ERRORS: dict[str, tuple[tuple[int, str], ...]] = {
    "/pay/{token}": ((400, "the form's action is missing or not one of four"),
                     (404, "no such payment link"), (410, "the link was used")),
    "/pay/3ds/{challenge_id}": ((400, "the form's answer is missing or not pass/fail"),
                                (404, "no such check"), (409, "the check was already answered"),
                                (410, "the check has expired")),
}
# answers any route can give before it runs: the connection layer (sandbox.server) and the
# guard, limits and CORS middleware
_ANY_ROUTE = (400, 403, 405, 408, 413, 415, 431, 503)
_JSON_ROUTE = (401, 404, 409, 422, 429)
_HEADERS = {
    "405": {"Allow": {"description": "every method of the path", "schema": {"type": "string"}}},
    "429": {"Retry-After": {"description": "seconds", "schema": {"type": "string"}}},
}


def _amount_in(fmt: str, positive: bool) -> dict[str, Any]:
    """An amount as a request states it: a string of digits (spec 2.1 types money string)."""
    digits = f"[1-9][0-9]{{0,{MAJOR_DIGITS - 1}}}" if positive else f"[0-9]{{1,{MAJOR_DIGITS}}}"
    if fmt == "minor":
        pattern = f"^0*{digits}$"
        what = "minor units (1234 = 12.34 EUR): digits, no decimal point"
    else:
        pattern = f"^0*{digits}(\\.[0-9]{{1,4}})?$"
        what = ("major units (12.34): digits and at most as many decimals as the currency has "
                "(0 JPY, 2 EUR, 3 KWD, 4 CLF)")
    return {"type": "string", "pattern": pattern,
            "description": f"Money in the sandbox's amount format, {what}; at most "
                           f"{MAJOR_DIGITS} digits after any leading zeros"
                           f"{', above zero' if positive else ''} (the sandbox reads up to "
                           f"{MAJOR_DIGITS} digits before the currency's decimal point: a "
                           "17-digit EUR amount in minor units is read too). A JSON number "
                           "with the same digits is also read (the spec's follow-up sample "
                           "sends one)."}


_AMOUNT_OUT = {"type": "number", "description": "a JSON number written from the exact "
                                                "decimal (minor units or decimal, as served)"}
_RATE = {"anyOf": [{"type": "string", "pattern": r"^[0-9]{1,15}(\.[0-9]+)?$"},
                  {"type": "number", "minimum": 0, "exclusiveMaximum": 10 ** MAJOR_DIGITS}],
         "description": "a percentage (19 or 7.5), as a decimal string or a JSON number"}
_SEED_AMOUNT = {
    "type": "string", "pattern": r"^(?:[25-9]|[1-9][0-9]|[1-9][0-9]{0,6}(?:[1-9][0-9]|0[025-9]))$",
    "description": "major units (decimals up to the currency's minor unit are also read); an "
                   "amount whose last two minor-unit digits are 01, 03 or 04 (a magic value "
                   "that decides the approval) is refused: seeded checkouts are approved"}
_RATE_KEYS = frozenset({"taxrate", "shippingtaxrate"})
_POSITIVE_MONEY = frozenset({"amount"})  # request amounts that must be above zero


def _money_types(schemas: dict[str, Any], fmt: str) -> None:
    """Amounts and rates as the server reads and writes them (not pydantic's string-or-number,
    which a generated client turns into a float)."""
    for name, schema in schemas.items():
        for prop, sub in schema.get("properties", {}).items():
            low = prop.lower()
            new: dict[str, Any]
            if name == "SeedItem" and low == "amount":  # major units, never a magic ending
                new = _SEED_AMOUNT
            elif low in MONEY_KEYS:
                new = _AMOUNT_OUT if name == "TransactionRecord" else \
                    _amount_in(fmt, positive=low in _POSITIVE_MONEY)
            elif low in _RATE_KEYS:
                new = _RATE
            else:
                continue
            if {"type": "null"} in sub.get("anyOf", ()):
                new = {"anyOf": [new, {"type": "null"}]}
            schema["properties"][prop] = {"title": sub.get("title", prop), **new}


def _describe_operations(doc: dict[str, Any]) -> None:
    """Request bodies, query parameters, security and answers FastAPI cannot see."""
    queries = _queries()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            key = (method, path)
            body = _BODIES.get(key)
            if body is not None:
                schema = {"$ref": _SCHEMA_REF.format(model=body[0])} \
                    if isinstance(body, tuple) else body
                op["requestBody"] = {"required": key not in _OPTIONAL_BODY,
                                     "content": {"application/json": {"schema": schema}}}
            if key in _FORMS:
                op["requestBody"] = _FORMS[key]
            params = op.setdefault("parameters", [])
            for name, required, schema in queries.get(key, ()):
                params.append({"name": name, "in": "query", "required": required,
                               "schema": schema})
            credential = ROUTES.get(f"{method.upper()} {re.sub(r'{[^}]+}', '{id}', path)}")
            if credential is not None:
                op["security"] = [{"ServiceSecret": []}] if credential == "service" else \
                    [{"PublicApiKey": []}] if credential == "server" else \
                    [{"PublicApiKey": []}, {"TransactionKey": []}]
            elif route_class(path) == "admin":
                op["security"] = [{"AdminToken": []}, {}]  # {}: none on a loopback sandbox
            op["responses"] = _answers(key, op.get("responses", {}))


# links between operations (what a client, or schemathesis' stateful phase, calls next):
# (from method, from path) -> {link name: (operationId, parameters, request body)}
_CHECKOUT_REF = "$request.body#/clientSystemTransactionId"
_SCOPE = {"merchantId": "$request.body#/merchantId", "storeId": "$request.body#/storeId"}
_FOLLOW_UP = {"merchantId": "$request.body#/merchantId", "storeId": "$request.body#/storeId",
              "userId": "$request.body#/userId", "amount": "$request.body#/amount",
              "currencyCode": "$request.body#/currencyCode",
              "clientSystemInvoiceId": _CHECKOUT_REF,
              "apmDetails": {"apmProvider": "$request.body#/checkoutDetails/paymentMethod"}}
_LINKS: dict[tuple[str, str], dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]]] = {
    ("post", "/api/v5/checkout"): {
        "DecideCheckout": ("decideCheckout", {"ref": _CHECKOUT_REF, "action": "approve",
                                              "query.merchantId": "$request.body#/merchantId",
                                              "query.storeId": "$request.body#/storeId"}, None),
        "Lookup": ("lookupTransactions", {"query.merchantId": "$request.body#/merchantId",
                                          "query.storeId": "$request.body#/storeId",
                                          "query.clientSystemTransactionId": _CHECKOUT_REF},
                   None),
        "Capture": ("createFollowUp", {}, {**_FOLLOW_UP, "type": "ecom.capture"}),
        "Refund": ("createFollowUp", {}, {**_FOLLOW_UP, "type": "ecom.refund"}),
        "Reversal": ("createFollowUp", {}, {**_FOLLOW_UP, "type": "ecom.reversal"}),
    },
    ("post", "/api/v5/paymentAccounts"): {
        "GetPaymentAccount": ("getPaymentAccount", {
            "account_id": "$response.body#/transactionAccountId",
            "query.merchantId": "$request.body#/merchantId",
            "query.storeId": "$request.body#/storeId"}, None),
        "Authorize": ("authorizeTransaction", {}, {
            **_SCOPE, "transactionAccountId": "$response.body#/transactionAccountId",
            "clientSystemTransactionId": "$request.body#/clientSystemTransactionId"}),
    },
    ("post", "/api/v5/publicKeys"): {
        "CheckPublicKey": ("checkPublicKey", {"query.merchantId": "$request.body#/merchantId",
                                              "query.storeId": "$request.body#/storeId"},
                           None),
    },
}


def _link_operations(doc: dict[str, Any]) -> None:
    for (method, path), links in _LINKS.items():
        ok = doc["paths"][path][method]["responses"]["200"]
        ok["links"] = {}
        for name, (operation, params, body) in links.items():
            link: dict[str, Any] = {"operationId": operation}
            if params:
                link["parameters"] = params
            if body is not None:
                link["requestBody"] = body
            ok["links"][name] = link


def _answers(key: tuple[str, str], fastapi_answers: dict[str, Any]) -> dict[str, Any]:
    """Every status the route can answer, with its content."""
    method, path = key
    answers: dict[str, Any] = {}
    ctype = _NOT_JSON.get(path)
    if path in _PAGE_ANSWERS:
        answers.update(_page_answers(method, path))
    elif ctype is not None and not ctype.startswith("text/"):
        # a script for browsers: a client has nothing to parse (no content declared, so a
        # generator has no type it cannot read)
        answers["200"] = {"description": f"the file ({ctype})", "headers": {
            "Content-Type": {"description": ctype, "schema": {"type": "string"}}}}
        answers["304"] = {"description": "If-None-Match names the current ETag"}
    elif ctype is not None:
        answers["200"] = {"description": "the file", "content": {ctype: {"schema": {
            "type": "string"}}}}
        answers["304"] = {"description": "If-None-Match names the current ETag"}
    elif key in _GATEWAY_ANSWERS:
        what, schema = _GATEWAY_ANSWERS[key]
        answers["200"] = {"description": what, "content": {"application/json": {
            "schema": schema}}}
    elif key in _RESULT_OF:
        answers["200"] = {"description": "OK", "content": {"application/json": {
            "schema": {"$ref": _SCHEMA_REF.format(model=_RESULT_OF[key])}}}}
    else:
        answers["200"] = fastapi_answers.get("200", {"description": "OK"})
    errors: dict[str, Any] = {}
    for status in _ANY_ROUTE + (() if ctype is not None else _JSON_ROUTE):
        errors[str(status)] = {"description": replies.error_body(status, "")["description"],
                               "content": {"application/json": {"schema": _ERROR_REF}}}
        if str(status) in _HEADERS:
            errors[str(status)]["headers"] = _HEADERS[str(status)]
    if path.startswith("/api/v5/"):
        errors["5XX"] = {**errors.pop("503"), "description": "an injected fault "
                         "(X-Sandbox-Fault, /_sandbox/faults: 5xx, 429 and dropped "
                         "connections), or 503 at the connection limit"}
    answers.update({k: v for k, v in errors.items() if k not in answers})
    return dict(sorted(answers.items()))


def _page_answers(method: str, path: str) -> dict[str, Any]:
    """A hosted page's answers: a redirect or a page, and its HTML error pages."""
    answers = {status: {"description": what, **({} if status == "303" else _HTML_PAGE)}
               for status, what in _PAGE_ANSWERS[path].get(method, ())
               or _PAGE_ANSWERS[path]["get"]}
    for status, what in _PAGE_ERRORS[path]:
        if method == "post" or status != 400:
            answers[str(status)] = {"description": f"an HTML message page: {what}",
                                    **_HTML_PAGE}
    return answers


# -- GET /docs ----------------------------------------------------------------------------------

ASSETS = {
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


def install_docs_page(app: FastAPI) -> None:

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title=f"{app.title} - API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise SandboxError(404, "name: not a file of the API page", description="NotFound",
                               code="GEN-404")
        from swagger_ui_bundle import swagger_ui_path  # a declared dependency

        return FileResponse(Path(str(swagger_ui_path)) / name, media_type=ASSETS[name],
                            headers={"Cache-Control": "public, max-age=86400"})
