"""Hypothesis-generated raw bodies over a real port, on every body-taking route (also those
outside the OpenAPI document: wallet emulator, demo merchant, hosted page): huge and exotic
numbers, deep nesting, duplicate keys, wrong content types, non-UTF-8 bytes. Never a 5xx,
always the one error shape, never a Python exception name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox_fixtures import AUTH_HEADERS, make_checkout_body, make_followup_body
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

from .test_schemathesis import check_answer

ROUTES = ("/api/v5/checkout", "/api/v5/apmTransactions", "/api/v5/publicKeys",
          "/api/v5/paymentAccounts", "/api/v5/transactions", "/_sandbox/wallet/token",
          "/_sandbox/3ds/challenge", "/_sandbox/clock", "/_sandbox/checkouts/R-1/approve",
          "/demo/merchant/api/result", "/pay/some-token")
CONTENT_TYPES = ("application/json", "application/json; charset=utf-8", "text/plain",
                 "application/x-www-form-urlencoded", "application/problem+json", "", "*/*")

numbers = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.sampled_from(["1e309", "-1e309", "1E+999999999", "1e-400", "0.0000000001", "NaN",
                     "Infinity", "-0", "9" * 400, "1" + "0" * 5000, "12.345678901234567890"]),
)
amount_texts = st.one_of(
    st.text(alphabet="0123456789.-+ eE١٢٣１２３_", max_size=24),
    st.sampled_from(["1000.00", "１２３", "١٢٣", "99999999999999999999999999999", "0x10"]),
)


def _leaf() -> st.SearchStrategy[bytes]:
    return st.one_of(
        numbers.map(str.encode),
        amount_texts.map(lambda t: json.dumps(t).encode()),
        st.sampled_from([b"true", b"false", b"null", b"{}", b"[]", b'"x"']),
    )


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["template", "nested", "duplicate", "bytes", "json"]))
    if kind == "template":  # a valid request with one money/int field replaced
        body = draw(st.sampled_from([make_checkout_body("FZ-1"),
                                     make_followup_body("FZ-2", "FZ-1", "capture", "100")]))
        field = draw(st.sampled_from(["amount", "currencyCode", "merchantId", "type"]))
        text = json.dumps({**body, field: "@@"}).encode()
        return text.replace(b'"@@"', draw(_leaf()))
    if kind == "nested":
        depth = draw(st.integers(min_value=1, max_value=50_000))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        closer = b"]" if opener == b"[" else b"}"
        return opener * depth + draw(_leaf()) + closer * depth
    if kind == "duplicate":
        key = draw(st.sampled_from(["amount", "merchantId", "detail", "cardId"]))
        return f'{{"{key}": "1", "{key}": "2"}}'.encode()
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    value = draw(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                              lambda c: st.lists(c, max_size=3)
                              | st.dictionaries(st.text(max_size=6), c, max_size=3),
                              max_leaves=12))
    return json.dumps(value).encode()


@pytest.fixture(scope="module")
def live() -> Iterator[httpx.Client]:
    config = SandboxConfig(quiet=True, allow_clock_control=True)
    with EmbeddedSandbox(config) as sb, httpx.Client(base_url=sb.url, timeout=30) as client:
        yield client


@given(route=st.sampled_from(ROUTES), body=bodies(), ctype=st.sampled_from(CONTENT_TYPES),
       auth=st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
def test_raw_bodies_never_break_the_sandbox(live: httpx.Client, route: str, body: bytes,
                                            ctype: str, auth: bool) -> None:
    headers: dict[str, Any] = {"content-type": ctype} if ctype else {}
    if auth:
        headers.update(AUTH_HEADERS)
    resp = live.post(route, content=body, headers=headers)
    body_json: Any = None
    if resp.headers.get("content-type", "").startswith("application/json"):
        body_json = resp.json()
    check_answer(resp.status_code, resp.text, body_json, f"POST {route}")
