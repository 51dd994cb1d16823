"""Hypothesis over every route listed in ``/openapi.json``, on a real port with raw HTTP:
bodies and parameters with lone surrogates, non-ASCII text, wrong types and every spelling of
the documented keys (wire name, other case, Python name, twice). Whatever is sent, no 5xx, and
every error is the one gateway error object (the hosted page's are HTML pages for people)."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from walletctl.sandbox.app import create_app
from walletctl.sandbox.config import FaultConfig, SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

_DOC: dict[str, Any] = create_app(SandboxConfig(quiet=True)).openapi()
_SCHEMAS: dict[str, Any] = _DOC["components"]["schemas"]


def _keys(schema: dict[str, Any], depth: int = 0) -> list[str]:
    """Every property name of a request schema (nested ones too), resolving ``$ref``."""
    if depth > 4:
        return []
    if "$ref" in schema:
        return _keys(_SCHEMAS[schema["$ref"].rsplit("/", 1)[1]], depth + 1)
    names: list[str] = []
    for sub in schema.get("anyOf", []) + schema.get("allOf", []):
        names += _keys(sub, depth + 1)
    for name, sub in (schema.get("properties") or {}).items():
        names.append(name)
        names += _keys(sub, depth + 1)
    return names


def _operations() -> list[tuple[str, str, list[str], list[str]]]:
    ops = []
    for path, item in _DOC["paths"].items():
        for method, op in item.items():
            body = (op.get("requestBody") or {}).get("content", {})
            schema = (body.get("application/json") or {}).get("schema") or {}
            query = [p["name"] for p in op.get("parameters", []) if p["in"] == "query"]
            ops.append((method.upper(), path, sorted(set(_keys(schema))), query))
    return ops


OPERATIONS = _operations()
# the hosted pages answer a person: form posts, and HTML message pages for errors
HOSTED_PAGES = ("/pay/{token}", "/pay/3ds/{challenge_id}")
SURROGATE = st.sampled_from(["\udcff", "\ud800", "a\udfffb", "\ud83d"])
NON_ASCII = st.text(alphabet=st.characters(min_codepoint=0x80, max_codepoint=0x2FFFF,
                                           exclude_categories=["Cs"]), max_size=12)
TEXT = st.one_of(SURROGATE, NON_ASCII, st.text(max_size=12), st.just(""), st.just("M-1001"))
SCALAR = st.one_of(TEXT, st.integers(-(10**30), 10**30), st.booleans(), st.none(),
                   st.floats(allow_nan=False, allow_infinity=False),
                   st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str))
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@st.composite
def spelled(draw: st.DrawFn, name: str) -> list[str]:
    """One documented key under one or two spellings."""
    how = draw(st.sampled_from(["wire", "upper", "lower", "snake", "twice"]))
    if how == "upper":
        return [name.upper()]
    if how == "lower":
        return [name.lower()]
    if how == "snake":
        return [_snake(name)]
    if how == "twice":
        return [name, name[:1].upper() + name[1:] if name[:1].islower() else name.lower()]
    return [name]


@st.composite
def body(draw: st.DrawFn, keys: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if keys:
        for name in draw(st.lists(st.sampled_from(keys), max_size=6, unique=True)):
            for key in draw(spelled(name)):
                out[key] = draw(VALUE)
    if draw(st.booleans()):
        out[draw(TEXT)] = draw(VALUE)
    return out


AUTH = st.sampled_from([
    {"Authorization": "PublicApiKey sandbox-api-key"},
    {"Authorization": "PublicApiKey pk_not-a-key"},
    {"Authorization": "Basic " + base64.b64encode("u:sécret-ü".encode()).decode()},
    {"Authorization": "Basic " + base64.b64encode(b"u:sandbox-secret").decode()},
    {},
])


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[EmbeddedSandbox, httpx.Client]]:
    config = SandboxConfig(quiet=True, allow_clock_control=True)
    with EmbeddedSandbox(config) as sb, httpx.Client(base_url=sb.url, timeout=30) as client:
        yield sb, client


def _path(template: str, values: list[str]) -> str:
    parts = iter(values)
    return re.sub(r"{[^}]+}", lambda _: urllib.parse.quote(
        next(parts), safe="", errors="surrogatepass"), template)


def test_every_json_route_is_in_the_document() -> None:
    with_body = {(m, p) for m, p, keys, _q in OPERATIONS if keys}
    assert {("POST", "/api/v5/checkout"), ("POST", "/api/v5/apmTransactions"),
            ("POST", "/api/v5/publicKeys"), ("POST", "/api/v5/paymentAccounts"),
            ("POST", "/api/v5/transactions"), ("POST", "/wallet/token"),
            ("POST", "/_sandbox/3ds/challenge"), ("POST", "/demo/merchant/api/quote"),
            ("POST", "/demo/merchant/api/result"), ("POST", "/_sandbox/clock")} <= with_body
    listed = {p for _m, p, _k, _q in OPERATIONS}
    assert {"/pay/{token}", "/walletpay.js", "/demo/merchant", "/demo/merchant/api/session",
            "/wallet/token", "/_sandbox/wallet/token", "/_sandbox/3ds/challenge",
            "/_sandbox/wallet/rootKey"} <= listed


@pytest.mark.parametrize(("method", "path", "keys", "query"), OPERATIONS,
                         ids=[f"{m} {p}" for m, p, _k, _q in OPERATIONS])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_input_breaks_a_route(live: tuple[EmbeddedSandbox, httpx.Client], method: str,
                                 path: str, keys: list[str], query: list[str],
                                 data: st.DataObject) -> None:
    sandbox, client = live
    names = re.findall(r"{[^}]+}", path)
    url = _path(path, [data.draw(TEXT.filter(lambda t: "/" not in t), label="path")
                       for _ in names])
    params = {name: data.draw(TEXT, label=name) for name in query
              if data.draw(st.booleans(), label=f"send {name}")}
    headers = {**data.draw(AUTH, label="auth")}
    content = None
    if method == "POST":
        sent = data.draw(body(keys), label="body")
        content = json.dumps(sent).encode()  # lone surrogates become \\udcff escapes
        headers["content-type"] = ("application/x-www-form-urlencoded"
                                   if path in HOSTED_PAGES else "application/json")
    # quote the parameters ourselves: lone surrogates cannot be UTF-8 encoded by httpx
    qs = "&".join(f"{k}={urllib.parse.quote(v, safe='', errors='surrogatepass')}"
                  for k, v in params.items())
    resp = client.request(method, url + (f"?{qs}" if qs else ""), content=content,
                          headers=headers)
    if path == "/_sandbox/faults":
        sandbox.app.state.ctx.faults = FaultConfig()  # faults are deliberate 5xx
    assert resp.status_code < 500, (method, url, resp.text[:300])
    if resp.status_code >= 400 and path not in HOSTED_PAGES:
        err = resp.json()
        assert set(err) == {"code", "description", "details"}, err
        assert isinstance(err["details"]["message"], str), err
