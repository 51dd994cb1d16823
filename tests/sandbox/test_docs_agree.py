"""The docs' tables and the sandbox's answers agree: error codes, browser-wallet reasons,
credentials per route, amount digits, the clock's bound, the type of ``transactionAmount`` and
the error of a bad checkout action (docs/sandbox.md, docs/gateway-api.md; real port)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from sandbox_fixtures import make_checkout_body, make_followup_body
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox
from walletctl.sandbox.walletpay import WALLET_REASONS

DOCS = Path(__file__).resolve().parents[2] / "docs"
SERVER = {"Authorization": "PublicApiKey sandbox-api-key"}
BASIC = {"Authorization": "Basic " + base64.b64encode(b"ops:sandbox-secret").decode()}


def table(doc: str, header: str) -> list[list[str]]:
    """The rows of the first table in ``doc`` whose header row starts with ``header``."""
    lines = (DOCS / doc).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([c.strip() for c in cells])
    return rows


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with EmbeddedSandbox(SandboxConfig(quiet=True, allow_clock_control=True)) as sb, \
            httpx.Client(base_url=sb.url, timeout=30) as client:
        yield client


def test_error_table_matches_the_server_answers(http: httpx.Client) -> None:
    rows: dict[int, tuple[str, str]] = {}
    for r in table("sandbox.md", "Status"):  # the first row of a status is its generic one
        if r[0].isdigit() and r[1] not in ("`GEN-404`", "`PRV-422`"):
            rows.setdefault(int(r[0]), (ticked(r[1])[0], ticked(r[2])[0]))
    key = http.post("/api/v5/publicKeys", json={"merchantId": "M-1001", "storeId": "S-01"},
                    headers=BASIC).json()["apiKey"]
    answers = {
        400: http.post("/api/v5/checkout", json={}, headers=SERVER),
        401: http.post("/api/v5/checkout", json={}),
        403: http.get("/api/v5/apmTransactions", headers={
            "Authorization": f"PublicApiKey {key}"}),
        404: http.post("/api/v5/apmTransactions", headers=SERVER, json=make_followup_body(
            "NOPE-C", "NOPE", "capture", "100")),
        405: http.put("/api/v5/checkout"),
        409: http.post("/_sandbox/checkouts/NOPE/approve"),
        413: http.post("/api/v5/checkout", content=b"{" + b" " * 1_000_001 + b"}",
                       headers={**SERVER, "content-type": "application/json"}),
        415: http.post("/api/v5/checkout", content=b"x", headers={
            **SERVER, "content-type": "text/plain"}),
    }
    http.post("/api/v5/checkout", json=make_checkout_body("DOC-1"), headers=SERVER)
    http.post("/_sandbox/checkouts/DOC-1/approve")
    answers[409] = http.post("/_sandbox/checkouts/DOC-1/approve")
    answers[422] = http.post("/api/v5/apmTransactions", headers=SERVER, json=make_followup_body(
        "DOC-1-C", "DOC-1", "capture", "100"))
    for status, resp in answers.items():
        assert resp.status_code == status, (status, resp.text)
        body = resp.json()
        code, description = rows[status]
        assert body["code"] == code, (status, body)
        if status not in (409, 422):  # these rows name several descriptions
            assert body["description"] == description, (status, body)
        else:
            assert body["description"] in ticked(
                next(r[2] for r in table("sandbox.md", "Status") if r[0] == str(status))
            ), body


def test_browser_wallet_reasons_are_the_servers() -> None:
    documented = {ticked(r[0])[0]: int(r[1]) for r in table("sandbox.md", "Reason")}
    assert documented == WALLET_REASONS
    # every reason the source raises is in the table (and so in the docs)
    src = Path(__file__).resolve().parents[2] / "src" / "walletctl" / "sandbox"
    raised = set()
    for path in src.glob("walletpay*.py"):
        raised |= set(re.findall(r'ApiError\(\d{3}, "([A-Za-z]+)"', path.read_text()))
    generic = {"InvalidJson", "MissingField", "InvalidField", "ValidationError", "Unauthorized"}
    assert raised - generic <= set(WALLET_REASONS)


def test_a_reason_is_answered_as_documented(http: httpx.Client) -> None:
    resp = http.get("/api/v5/paymentAccounts/ta_nope", headers=SERVER, params={
        "merchantId": "M-1001", "storeId": "S-01", "encryptionKeyId": "ek"})
    assert resp.status_code == WALLET_REASONS["PaymentAccountNotFound"]
    assert resp.json()["description"] == "PaymentAccountNotFound"


@pytest.mark.parametrize("doc", ["sandbox.md", "gateway-api.md"])
def test_credential_table_is_what_the_server_enforces(http: httpx.Client, doc: str) -> None:
    from walletctl.sandbox.auth import ROUTES

    rows = {ticked(r[0])[0]: r[1] for r in table(doc, "Route") if r[0].startswith("`POST /api")
            or r[0].startswith("`GET /api")}
    words = {"server key": "server", "service secret": "service",
             "server key or transaction key": "browser"}
    assert {route: words[cred] for route, cred in rows.items()} == ROUTES
    key = http.post("/api/v5/publicKeys", json={"merchantId": "M-1001", "storeId": "S-01"},
                    headers=BASIC).json()["apiKey"]
    auth = {"Authorization": f"PublicApiKey {key}"}
    for route, kind in ROUTES.items():
        method, path = route.split(" ")
        path = path.replace("{id}", "ta_x")
        resp = http.request(method, path, headers=auth, json={} if method == "POST" else None,
                            params={"merchantId": "M-1001", "storeId": "S-01",
                                    "encryptionKeyId": "ek", "clientSystemTransactionId": "R"})
        if kind == "server":
            assert resp.status_code == 403, (route, resp.text)
        elif kind == "service":
            assert resp.status_code == 401, (route, resp.text)
        else:  # the transaction key of this merchant passes the credential check
            assert resp.status_code not in (401, 403), (route, resp.text)


def test_amount_digit_limits_are_the_documented_ones(http: httpx.Client) -> None:
    text = " ".join((DOCS / "sandbox.md").read_text(encoding="utf-8").split())
    found = re.search(r"at most (\d+) digits before the decimal point as written.*?"
                      r'EUR `"(\d+)"` = [0-9 .]+ is the largest\); longer than (\d+) digits in '
                      r"all is refused while reading", text)
    assert found is not None
    major, largest, limit = int(found.group(1)), found.group(2), int(found.group(3))
    assert len(largest) == major
    ok = http.post("/api/v5/checkout", headers=SERVER,
                   json=make_checkout_body("DIG-1", largest))
    assert ok.status_code == 200, ok.text
    over = http.post("/api/v5/checkout", headers=SERVER,
                     json=make_checkout_body("DIG-2", largest + "9"))
    assert f"amount: must have at most {major} digits before the decimal point" in \
        over.json()["details"]["message"]
    long = http.post("/api/v5/checkout", headers=SERVER,
                     json=make_checkout_body("DIG-3", "9" * (limit + 1)))
    assert long.status_code == 400
    assert f"at most {limit} digits" in long.json()["details"]["message"]
    schema = http.get("/openapi.json").json()["components"]["schemas"]["CheckoutRequest"]
    # the document's pattern: at most `major` digits after any leading zeros
    assert f"[1-9][0-9]{{0,{major - 1}}}" in json.dumps(schema["properties"]["amount"])


def test_transaction_amount_is_a_json_number_as_documented(http: httpx.Client) -> None:
    assert "`transactionAmount` is a JSON number" in (DOCS / "sandbox.md").read_text()
    assert "`transactionAmount` (a JSON\nnumber" in (DOCS / "gateway-api.md").read_text()
    http.post("/api/v5/checkout", json=make_checkout_body("AMT-1", "1234"), headers=SERVER)
    resp = http.get("/api/v5/apmTransactions", headers=SERVER, params={
        "merchantId": "M-1001", "storeId": "S-01", "clientSystemTransactionId": "AMT-1"})
    [record] = json.loads(resp.text, parse_float=Decimal)
    assert isinstance(record["transactionAmount"], int | Decimal)
    assert record["transactionAmount"] == 1234
    schema = http.get("/openapi.json").json()["components"]["schemas"]["TransactionRecord"]
    assert schema["properties"]["transactionAmount"]["type"] == "number"


def test_clock_bound_and_bad_action_are_as_documented(http: httpx.Client) -> None:
    text = (DOCS / "sandbox.md").read_text(encoding="utf-8")
    bound = int(re.search(r"within (\d+) seconds", text).group(1))  # type: ignore[union-attr]
    http.post("/_sandbox/reset")
    assert http.post("/_sandbox/clock", json={"advanceSeconds": bound}).status_code == 200
    assert http.post("/_sandbox/clock", json={"advanceSeconds": 1}).status_code == 409
    http.post("/_sandbox/reset")
    assert "Any other action → 400 `action: must be approve, decline, cancel or pending`" in text
    resp = http.post("/_sandbox/checkouts/ANY/explode")
    assert resp.status_code == 400
    assert resp.json()["details"]["message"] == \
        "action: must be approve, decline, cancel or pending"
