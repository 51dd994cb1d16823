"""One rule on every route of the sandbox, over HTTP on a real port: a foreign ``Host`` is
refused (DNS rebinding), HEAD is answered wherever GET is, and the sandbox's redirects to
itself point at its configured public URL, never at the request's ``Host``."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import httpx
import pytest

from sandbox_fixtures import AUTH_HEADERS
from walletctl.sandbox.app import create_app
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

SHAPE = {"code", "description", "details"}
PUBLIC_HOST = "sandbox.example"


def _routes() -> list[tuple[str, str]]:
    """(method, path with sample parameters) of every route the app declares."""
    out = []
    for route in create_app(SandboxConfig(quiet=True)).routes:
        path = re.sub(r"\{[^}]+\}", "sample", getattr(route, "path", ""))
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD":
                out.append((method, path))
    return out


ROUTES = _routes()
GET_PATHS = sorted({path for method, path in ROUTES if method == "GET"})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    port = _free_port()
    config = SandboxConfig(quiet=True, public_url=f"http://{PUBLIC_HOST}:{port}/")
    with EmbeddedSandbox(config, port=port) as sb:
        yield sb


def test_every_route_is_listed() -> None:
    assert ("POST", "/api/v5/checkout") in ROUTES
    assert ("GET", "/api/v5/apmTransactions") in ROUTES
    assert len(ROUTES) > 25


@pytest.mark.parametrize("host", ["attacker.example:80", "sandbox.example.evil"])
@pytest.mark.parametrize(("method", "path"), [
    *ROUTES, ("GET", "/no/such/route"), ("GET", "/api/v5/checkout/"),
    ("OPTIONS", "/wallet/cards"),
])
def test_a_foreign_host_is_refused_on_every_route(sandbox: EmbeddedSandbox, method: str,
                                                  path: str, host: str) -> None:
    headers = {**AUTH_HEADERS, "host": host, "content-type": "application/json",
               "origin": "https://shop.example", "access-control-request-method": "GET"}
    resp = httpx.request(method, sandbox.url + path, headers=headers, content=b"{}")
    assert resp.status_code == 403, (method, path, resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == SHAPE
    assert body["details"]["message"].startswith("Host: ")


def test_a_missing_host_is_refused(sandbox: EmbeddedSandbox) -> None:
    with socket.create_connection(("127.0.0.1", sandbox.port), timeout=5) as sock:
        sock.sendall(b"GET /api/v5/apmTransactions HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:200]
    assert b'"Host: is required' in answer


AUTH_LINE = "".join(f"{name}: {value}\r\n" for name, value in AUTH_HEADERS.items())
LOOKUP_NONE = ("/api/v5/apmTransactions?merchantId=M-1&storeId=S-1"
               "&clientSystemTransactionId=none")


@pytest.mark.parametrize(("path", "status"), [(LOOKUP_NONE, 404), ("/_sandbox/ledger", 200)])
@pytest.mark.parametrize("second", ["evil.example", "localhost"])
def test_two_host_headers_are_a_400(sandbox: EmbeddedSandbox, path: str, status: int,
                                    second: str) -> None:
    """RFC 9112 3.2: one Host per request; the check and the work never see different ones
    (the first Host checked, a later one used), and the same Host is accepted after."""
    for _ in range(2):  # the second time, the first Host is one already accepted
        with socket.create_connection(("127.0.0.1", sandbox.port), timeout=5) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost:{sandbox.port}\r\n"
                         f"Host: {second}\r\n{AUTH_LINE}Connection: close\r\n\r\n".encode())
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
        assert b'"Host: is given more than once' in answer
    resp = httpx.get(sandbox.url + path,
                     headers={**AUTH_HEADERS, "host": f"localhost:{sandbox.port}"})
    assert resp.status_code == status, resp.text


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", PUBLIC_HOST])
def test_own_names_are_accepted_on_the_gateway(sandbox: EmbeddedSandbox, host: str) -> None:
    resp = httpx.get(sandbox.url + "/api/v5/apmTransactions", headers={
        **AUTH_HEADERS, "host": f"{host}:{sandbox.port}"},
        params={"merchantId": "M-1", "storeId": "S-1", "clientSystemTransactionId": "none"})
    assert resp.status_code == 404, resp.text  # past the guard: an unknown reference


@pytest.mark.parametrize("path", GET_PATHS)
def test_head_is_answered_wherever_get_is(sandbox: EmbeddedSandbox, path: str) -> None:
    with httpx.Client(base_url=sandbox.url, headers=AUTH_HEADERS) as client:
        get = client.get(path)
        head = client.head(path)
    assert get.status_code != 405, (path, get.text)
    assert head.status_code == get.status_code, (path, head.status_code, get.status_code)
    assert head.content == b""
    assert head.headers.get("content-type") == get.headers.get("content-type")
    skip = {"date", "content-length", "etag", "last-modified",  # may differ between answers
            "transfer-encoding"}  # a streamed GET (the ledger) is chunked; HEAD has no body
    assert {k for k in head.headers if k not in skip} == \
        {k for k in get.headers if k not in skip}, path
    names = [k.lower() for k, _ in get.headers.multi_items() if k.lower() != "set-cookie"]
    assert len(names) == len(set(names)), (path, "a header sent twice", names)
    if "content-length" in get.headers and path == "/_sandbox/health":
        assert head.headers["content-length"] == get.headers["content-length"]


def test_head_where_get_is_not_allowed_is_405(sandbox: EmbeddedSandbox) -> None:
    resp = httpx.head(sandbox.url + "/api/v5/checkout", headers=AUTH_HEADERS)
    assert resp.status_code == 405


@pytest.mark.parametrize("request_host", ["localhost", "127.0.0.1"])
def test_a_trailing_slash_redirect_uses_the_configured_url(sandbox: EmbeddedSandbox,
                                                           request_host: str) -> None:
    resp = httpx.get(sandbox.url + "/_sandbox/health/?x=1",
                     headers={"host": f"{request_host}:{sandbox.port}"})
    assert resp.is_redirect, resp.status_code
    assert resp.headers["location"] == f"http://{PUBLIC_HOST}:{sandbox.port}/_sandbox/health?x=1"
    post = httpx.post(sandbox.url + "/api/v5/checkout/", headers=AUTH_HEADERS)
    assert post.is_redirect, post.status_code
    assert post.headers["location"] == f"http://{PUBLIC_HOST}:{sandbox.port}/api/v5/checkout"
