"""Headers and query strings are read as strictly as JSON bodies, over raw HTTP on a real
port: a singleton header given twice is a 400 naming it, a head over 64 KiB is a 431
however it arrives (both uvicorn stacks), and lookup query parameters have one reading."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sandbox_fixtures import AUTH_HEADERS
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

SHAPE = {"code", "description", "details"}
AUTH = "".join(f"{name}: {value}\r\n" for name, value in AUTH_HEADERS.items())
LOOKUP = "/api/v5/apmTransactions?merchantId=M-1&storeId=S-1&clientSystemTransactionId=none"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    with EmbeddedSandbox(SandboxConfig(quiet=True)) as sb:
        yield sb


def exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw`` in one ``sendall``; everything the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(raw)
        chunks = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def message_of(answer: bytes, status: int) -> str:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), answer[:300]
    data = json.loads(body)
    assert set(data) == SHAPE, data
    message: str = data["details"]["message"]
    return message


def get(port: int, target: str, extra: str = "", auth: str = AUTH) -> bytes:
    return exchange(port, (f"GET {target} HTTP/1.1\r\nHost: localhost:{port}\r\n{auth}{extra}"
                           "Connection: close\r\n\r\n").encode())


# -- singleton headers ------------------------------------------------------------------------

KEY_LINE = AUTH_HEADERS["Authorization"]


@pytest.mark.parametrize("order", ["valid first", "valid second"])
def test_two_authorization_headers_are_a_400_in_either_order(sandbox: EmbeddedSandbox,
                                                             order: str) -> None:
    lines = [f"Authorization: {KEY_LINE}\r\n", "Authorization: PublicApiKey nope\r\n"]
    if order == "valid second":
        lines.reverse()
    answer = get(sandbox.port, LOOKUP, "".join(lines), auth="")
    assert message_of(answer, 400).startswith("Authorization: is given more than once")


@pytest.mark.parametrize(("path", "line"), [
    (LOOKUP, "Content-Type: application/json"),
    (LOOKUP, "Content-Length: 0"),
    (LOOKUP, "X-Sandbox-Fault: latency=0"),
    ("/_sandbox/ledger", "Origin: http://localhost:{port}"),
    ("/_sandbox/ledger", "X-Sandbox-Token: x"),
    ("/_sandbox/ledger", "Sec-Fetch-Site: same-origin"),
    ("/_sandbox/health", "Host: localhost"),
])
def test_every_singleton_header_given_twice_is_a_400_naming_it(
        sandbox: EmbeddedSandbox, path: str, line: str) -> None:
    line = line.format(port=sandbox.port)
    name = line.split(":", 1)[0]
    once = get(sandbox.port, path, "" if name == "Host" else line + "\r\n")
    assert status_of(once) in (200, 404), once[:300]  # once is fine
    twice = get(sandbox.port, path, f"{line}\r\n{line.lower()}\r\n")
    ours = f"{name}: is given more than once (one {name} header per request)"
    # the HTTP parser (llhttp) already refuses two Content-Lengths itself
    also = "(request): malformed HTTP request" if name == "Content-Length" else ours
    assert message_of(twice, 400) in (ours, also)


# -- the header-size limit, however the head arrives -------------------------------------------

@pytest.fixture(scope="module", params=["default", "h11"])
def stack(request: pytest.FixtureRequest) -> Iterator[EmbeddedSandbox]:
    kwargs: dict[str, Any] = {} if request.param == "default" else {
        "stack": ("asyncio", "h11")}
    with EmbeddedSandbox(SandboxConfig(quiet=True), **kwargs) as sb:
        yield sb


def test_a_66_kb_header_in_one_read_is_a_431(stack: EmbeddedSandbox) -> None:
    answer = get(stack.port, LOOKUP, "X-Pad: " + "a" * 66_000 + "\r\n")
    assert "larger than 65536 bytes" in message_of(answer, 431)
    assert b"connection: close" in answer.partition(b"\r\n\r\n")[0].lower()
    assert b'"description":"RequestHeaderFieldsTooLarge"' in answer


def test_a_66_kb_url_is_a_431_not_malformed(stack: EmbeddedSandbox) -> None:
    answer = get(stack.port, LOOKUP + "&pad=" + "a" * 66_000)
    assert "larger than 65536 bytes" in message_of(answer, 431)


def test_a_60_kb_header_is_accepted(stack: EmbeddedSandbox) -> None:
    answer = get(stack.port, LOOKUP, "X-Pad: " + "a" * 60_000 + "\r\n")
    assert status_of(answer) == 404, answer[:300]  # past the guard: an unknown reference
    assert httpx.get(stack.url + "/_sandbox/health").status_code == 200


# -- lookup query strings -----------------------------------------------------------------------

QUERY_ROUTES = [
    "/api/v5/apmTransactions?storeId=S-1&clientSystemTransactionId=none",
    "/api/v5/publicKeys/current?storeId=S-1",
    "/api/v5/paymentAccounts/PA-1?storeId=S-1&encryptionKeyId=K-1",
]


@pytest.mark.parametrize("route", QUERY_ROUTES)
@pytest.mark.parametrize("merchant", [
    "merchantId=M-1&merchantId=M-2", "merchantId=M-1&MerchantId=M-1",
    "MERCHANTID=M-1&merchantid=M-2",
])
def test_a_query_parameter_given_twice_is_a_400_naming_it(sandbox: EmbeddedSandbox,
                                                         route: str, merchant: str) -> None:
    answer = get(sandbox.port, f"{route}&{merchant}")
    assert message_of(answer, 400).startswith("merchantId: is given more than once")


@pytest.mark.parametrize("route", QUERY_ROUTES)
def test_a_query_value_that_is_not_utf8_is_a_400_naming_it(sandbox: EmbeddedSandbox,
                                                          route: str) -> None:
    answer = get(sandbox.port, f"{route}&merchantId=M%FF1")
    assert message_of(answer, 400).startswith("merchantId: is not UTF-8 text")


def test_a_lookup_reference_that_is_not_utf8_is_not_a_404(sandbox: EmbeddedSandbox) -> None:
    answer = get(sandbox.port, "/api/v5/apmTransactions?merchantId=M-1&storeId=S-1"
                 "&clientSystemTransactionId=P%FF")
    assert message_of(answer, 400).startswith("clientSystemTransactionId: is not UTF-8 text")


@pytest.mark.parametrize("route", QUERY_ROUTES)
def test_a_missing_parameter_reads_the_same_on_every_route(sandbox: EmbeddedSandbox,
                                                           route: str) -> None:
    answer = get(sandbox.port, route + "&unknown=ignored")
    assert message_of(answer, 400) == "merchantId: is required (query parameter)"


def test_spellings_and_unknown_parameters(sandbox: EmbeddedSandbox) -> None:
    answer = get(sandbox.port, "/api/v5/apmTransactions?MERCHANTID=M-1&storeid=S-1"
                 "&clientSystemTransactionId=none&extra=1&extra=2")
    assert message_of(answer, 404).startswith("clientSystemTransactionId none: no transaction")
    # a non-ASCII name never matches (the Kelvin sign lower-cases to "k")
    answer = get(sandbox.port, "/api/v5/apmTransactions?merchantId=M-1&storeId=S-1"
                 "&clientSystemTransactionId=none&%E2%84%AAey=1")
    assert status_of(answer) == 404


# -- JSON key folding: ASCII letters only ---------------------------------------------------------

@pytest.mark.parametrize("key", ["chec\u212aoutDetails"])
def test_a_key_folding_to_a_wire_name_only_by_unicode_rules_is_unknown(
        sandbox: EmbeddedSandbox, checkout_body: Any, key: str) -> None:
    """``"\\u212a".lower() == "k"`` (the Kelvin sign): such a key is not ``checkoutDetails``."""
    body = checkout_body("KELVIN-1")
    body[key] = body.pop("checkoutDetails")
    resp = httpx.post(sandbox.url + "/api/v5/checkout", content=json.dumps(body),
                      headers={**AUTH_HEADERS, "content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert key in resp.json()["details"]["message"]
    body["cHeCkOuTdEtAiLs"] = body.pop(key)  # ASCII case still folds
    resp = httpx.post(sandbox.url + "/api/v5/checkout", content=json.dumps(body),
                      headers={**AUTH_HEADERS, "content-type": "application/json"})
    assert resp.status_code == 200, resp.text


# -- a JSON body's charset -----------------------------------------------------------------------

@pytest.mark.parametrize(("ctype", "status"), [
    ("application/json; charset=utf-16", 415), ('application/json; charset="latin-1"', 415),
    ("application/json;charset=", 415), ("application/json; charset=UTF-8", 400),
    ('application/json; charset="utf-8"', 400), ("application/json", 400),
])
def test_a_json_charset_other_than_utf8_is_a_415(sandbox: EmbeddedSandbox, ctype: str,
                                                 status: int) -> None:
    resp = httpx.post(sandbox.url + "/api/v5/checkout", content=b'{"merchantId": 1}',
                      headers={**AUTH_HEADERS, "content-type": ctype})
    assert resp.status_code == status, resp.text  # 400: read, and refused as a checkout
    message = resp.json()["details"]["message"]
    if status == 415:
        assert message.startswith("Content-Type: charset must be utf-8"), message


# -- fault settings: one spelling, errors name the key as given ------------------------------------

@pytest.mark.parametrize(("body", "message"), [
    ({"drop-rate": 0.1, "drop_rate": 0.2}, "drop-rate: is given more than once (also as "
                                           "'drop_rate'; one spelling, once)"),
    ({"status": 503, "error-status": 502}, "status: is given more than once"),
    ({"error-rate": 7}, "error-rate: must be a rate between 0 and 1"),
    ({"Retry-After": 99}, "Retry-After: must be between 0 and 60 seconds"),
    ({"latency": "soon"}, "latency: must be a number"),
])
def test_fault_settings_have_one_spelling_and_are_named_as_given(
        sandbox: EmbeddedSandbox, body: dict[str, Any], message: str) -> None:
    resp = httpx.post(sandbox.url + "/_sandbox/faults", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["details"]["message"].startswith(message)
    assert httpx.get(sandbox.url + "/_sandbox/faults").json()["drop_rate"] == 0.0  # unchanged


def test_a_fault_header_setting_given_twice_is_a_400(sandbox: EmbeddedSandbox) -> None:
    answer = get(sandbox.port, LOOKUP, "X-Sandbox-Fault: latency=0;latency=5000\r\n")
    assert message_of(answer, 400) == ("X-Sandbox-Fault: latency: is given more than once "
                                       "(also as 'latency'; one spelling, once)")


# -- the hosted page's form: one decision ----------------------------------------------------------

@pytest.mark.parametrize("form", ["action=approve&action=decline", "action=decline&action=approve",
                                  "action=approve&action=approve"])
def test_a_hosted_page_form_with_two_actions_is_a_400_page(
        sandbox: EmbeddedSandbox, checkout_body: Any, form: str) -> None:
    ref = "TWO-" + "-".join(part.split("=")[1] for part in form.split("&"))
    created = httpx.post(sandbox.url + "/api/v5/checkout", json=checkout_body(ref),
                         headers=AUTH_HEADERS)
    assert created.status_code == 200, created.text
    link = created.json()["redirectUrl"]
    form_type = {"content-type": "application/x-www-form-urlencoded"}
    resp = httpx.post(link, content=form, headers=form_type)
    assert resp.status_code == 400
    assert resp.headers["content-type"].startswith("text/html")
    assert "action: is given more than once" in resp.text
    assert httpx.get(link).status_code == 200  # still pending: nothing was decided
    assert httpx.post(link, content="action=approve", headers=form_type).status_code == 303


@pytest.mark.parametrize("target", [
    "/demo/merchant/api/session?ref=DEMO-Q&ref=DEMO-R",
    "/demo/merchant/api/session?amount=1.00&Amount=2.00",
    "/_sandbox/checkouts/NOPE/approve?merchantId=M-1&MERCHANTID=M-2",
])
def test_demo_and_admin_query_parameters_are_read_once(sandbox: EmbeddedSandbox,
                                                       target: str) -> None:
    method = "POST" if "/approve" in target else "GET"
    answer = exchange(sandbox.port, (f"{method} {target} HTTP/1.1\r\nHost: localhost:"
                                     f"{sandbox.port}\r\nContent-Length: 0\r\n"
                                     "Connection: close\r\n\r\n").encode())
    assert "is given more than once (query parameter" in message_of(answer, 400)
