"""Small request helpers for the sandbox tests (real HTTP API, in-process or on a port)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from sandbox_fixtures import MERCHANT_ID, STORE_ID, make_checkout_body, make_followup_body

CHECKOUT = "/api/v5/checkout"
APM = "/api/v5/apmTransactions"


def checkout(client: Any, ref: str, amount: str = "1234", type: str = "ecom.sale",
             **overrides: Any) -> str:
    """Create a checkout; return the path of its hosted page (``/pay/<token>``)."""
    resp = client.post(CHECKOUT, json=make_checkout_body(ref, amount, type, **overrides))
    assert resp.status_code == 200, resp.text
    return str(urlsplit(resp.json()["redirectUrl"]).path)


def decide(client: Any, ref: str, action: str = "approve") -> Any:
    return client.post(f"/_sandbox/checkouts/{ref}/{action}")


def approved(client: Any, ref: str, amount: str = "1234", type: str = "ecom.sale") -> None:
    checkout(client, ref, amount, type)
    resp = decide(client, ref)
    assert resp.status_code == 200, resp.text


def followup(client: Any, ref: str, invoice: str, op: str, amount: str, **kw: Any) -> Any:
    return client.post(APM, json=make_followup_body(ref, invoice, op, amount, **kw))


def lookup(client: Any, ref: str) -> Any:
    return client.get(APM, params={"merchantId": MERCHANT_ID, "storeId": STORE_ID,
                                   "clientSystemTransactionId": ref})


def records(client: Any, ref: str) -> list[dict[str, Any]]:
    resp = lookup(client, ref)
    assert resp.status_code == 200, resp.text
    # transactionAmount is a JSON number (spec 2.5): read it exactly, as Decimal
    data: list[dict[str, Any]] = json.loads(resp.text, parse_float=Decimal)
    return data


def message(resp: Any) -> str:
    body = resp.json()
    assert set(body) == {"code", "description", "details"}, body
    text: str = body["details"]["message"]
    return text


def ledger(client: Any) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = client.get("/_sandbox/ledger").json()["transactions"]
    return data
