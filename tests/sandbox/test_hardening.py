"""Sloppy and hostile clients over raw HTTP on a real port: every refusal is a 4xx gateway
error object naming the field and the rule; admin, demo and hosted-page routes refuse
cross-site and DNS-rebinding requests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox_fixtures import (
    AUTH_HEADERS,
    MERCHANT_ID,
    STORE_ID,
    make_checkout_body,
    make_followup_body,
)
from walletctl.sandbox.config import SandboxConfig
from walletctl.sandbox.server import EmbeddedSandbox

JSON = {**AUTH_HEADERS, "content-type": "application/json"}
DEEP = b"[" * 100_000 + b"]" * 100_000
SHAPE = {"code", "description", "details"}


@pytest.fixture(scope="module", params=["minor", "decimal"])
def live(request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    with EmbeddedSandbox(SandboxConfig(quiet=True, amount_format=request.param)) as sb, \
            httpx.Client(base_url=sb.url, headers=JSON) as client:
        client.fmt = request.param  # type: ignore[attr-defined]
        yield client


def refused(resp: httpx.Response, status: int = 400) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == SHAPE, body
    assert set(body["details"]) == {"message"}, body
    message: str = body["details"]["message"]
    return message


def checkout(client: httpx.Client, amount: Any, **overrides: Any) -> httpx.Response:
    return client.post("/api/v5/checkout",
                       content=json.dumps(make_checkout_body("H-1", amount, **overrides)))


@pytest.mark.parametrize("amount", ["99999999999999999999999999999", "1" * 5000])
def test_huge_amounts_are_a_400_naming_the_field(live: httpx.Client, amount: str) -> None:
    assert refused(checkout(live, amount)).startswith("amount: larger than any currency")
    body = make_followup_body("H-F", "H-0", "capture", amount)
    assert refused(live.post("/api/v5/apmTransactions", content=json.dumps(body)))


@pytest.mark.parametrize("raw", [b"1e309", b"1E+3", b"-1e-400", b"NaN", b"Infinity"])
def test_exotic_json_numbers_are_refused(live: httpx.Client, raw: bytes) -> None:
    body = json.dumps(make_checkout_body("H-2", "X")).encode().replace(b'"X"', raw)
    assert refused(live.post("/api/v5/checkout", content=body))


@pytest.mark.parametrize("amount", ["１２３", "١٢٣", "1_000", " 12", "0x10", True, None])
def test_amounts_are_ascii_digits_never_booleans(live: httpx.Client, amount: Any) -> None:
    assert refused(checkout(live, amount)).startswith("amount:")


def test_decimal_point_on_a_minor_units_sandbox(live: httpx.Client) -> None:
    resp = checkout(live, "1000.00")
    if live.fmt == "decimal":  # type: ignore[attr-defined]
        assert resp.status_code == 200, resp.text
        assert refused(checkout(live, "10.001")) == (
            "amount: EUR amounts have 2 decimal places (this sandbox reads decimal amounts: "
            "amount_format = decimal)")
        return
    message = refused(resp)
    assert message.startswith('amount: 1000.00 has a decimal point, but this sandbox reads '
                              'amounts in minor units ("100000" for 1000.00 EUR)')
    assert "amount_format = minor" in message
    assert refused(checkout(live, "12.5")).startswith("amount: 12.5 has a decimal point")


@pytest.mark.parametrize("field", ["redirectUrlTimeout"])
def test_booleans_are_not_integers(live: httpx.Client, field: str) -> None:
    details = {"paymentMethod": "WalletV2", field: True}
    assert refused(checkout(live, "1234", checkoutDetails=details)) == (
        f"checkoutDetails.{field}: must be an integer, not a boolean")
    cart = {"itemDetails": [{"productId": "p", "productName": "n", "productQuantity": True,
                             "unitAmount": "1234", "totalAmount": "1234"}]}
    assert refused(checkout(live, "1234", shoppingCartDetails=cart)) == (
        "shoppingCartDetails.itemDetails[0].productQuantity: must be an integer, not a boolean")


def test_duplicate_keys_are_refused(live: httpx.Client) -> None:
    body = json.dumps(make_checkout_body("H-3"))[:-1] + ', "amount": "1"}'
    assert refused(live.post("/api/v5/checkout", content=body)) == (
        "amount: given twice (each key may appear once per object)")


def test_mandatory_fields(live: httpx.Client) -> None:
    no_method = {"cardholderFirstName": "Ada"}
    assert refused(checkout(live, "1234", checkoutDetails=no_method)) == (
        "checkoutDetails.paymentMethod: is required")
    body = make_followup_body("H-4", "H-0", "capture", "100")
    body["apmDetails"] = {}
    assert refused(live.post("/api/v5/apmTransactions", content=json.dumps(body))) == (
        "apmDetails.apmProvider: is required")
    # the sample's spelling is accepted (the reference is unknown: 404, past validation)
    body["apmdetails"] = {"apmProviderName": "WalletV2"}
    del body["apmDetails"]
    assert live.post("/api/v5/apmTransactions", content=json.dumps(body)).status_code == 404


@pytest.mark.parametrize("path", ["/api/v5/checkout", "/api/v5/apmTransactions",
                                  "/api/v5/paymentAccounts", "/api/v5/transactions",
                                  "/_sandbox/wallet/token", "/_sandbox/3ds/challenge",
                                  "/demo/merchant/api/result", "/_sandbox/faults"])
def test_deep_nesting_and_bad_bytes_are_400(live: httpx.Client, path: str) -> None:
    for body in (DEEP, b'{"a": "\xff\xfe"}', b'{"a": 1'):
        resp = live.post(path, content=body)
        assert resp.status_code in (400, 401), resp.text  # 401: credentials checked first
        refused(resp, resp.status_code)


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", ""])
@pytest.mark.parametrize("path", ["/api/v5/checkout", "/api/v5/publicKeys",
                                  "/_sandbox/faults", "/demo/merchant/api/result"])
def test_json_routes_need_a_json_content_type(live: httpx.Client, path: str,
                                              ctype: str) -> None:
    resp = live.post(path, content=b"{}", headers={"content-type": ctype})
    assert refused(resp, 415) == "Content-Type: must be application/json"


def test_one_error_vocabulary(live: httpx.Client) -> None:
    unknown = live.get("/no/such/route")
    assert unknown.json()["code"] == "GEN-404"
    refused(unknown, 404)
    for path in ("/api/v5/paymentAccounts", "/api/v5/checkout"):
        resp = live.post(path, content=b"{}", headers={"authorization": "nope"})
        assert resp.json()["code"] == "AUTH-401", resp.text
        missing = live.post(path, content=b"[]")
        assert missing.json()["code"] == "GEN-400", missing.text


def test_lookup_amount_is_a_json_number(live: httpx.Client) -> None:
    amount = "12.34" if live.fmt == "decimal" else "1234"  # type: ignore[attr-defined]
    assert checkout(live, amount, clientSystemTransactionId="H-NUM").status_code == 200
    resp = live.get("/api/v5/apmTransactions", params={
        "merchantId": MERCHANT_ID, "storeId": STORE_ID, "clientSystemTransactionId": "H-NUM"})
    assert f'"transactionAmount":{amount},' in resp.text


@pytest.mark.parametrize(("headers", "status"), [
    ({"origin": "https://evil.example"}, 403),
    ({"origin": "null"}, 403),
    ({"origin": "http://localhost:1"}, 403),
    ({"sec-fetch-site": "cross-site"}, 403),
    ({"host": "attacker.example"}, 403),
    ({"host": "attacker.example:80", "origin": "http://attacker.example:80"}, 403),
])
@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/_sandbox/reset"), ("GET", "/_sandbox/ledger"), ("POST", "/_sandbox/faults"),
    ("GET", "/demo/merchant/api/results"), ("POST", "/pay/some-token"),
])
def test_cross_site_and_rebinding_requests_are_refused(live: httpx.Client, method: str,
                                                       path: str, headers: dict[str, str],
                                                       status: int) -> None:
    ctype = "application/x-www-form-urlencoded" if path.startswith("/pay/") else "text/plain"
    resp = live.request(method, path, content=b"action=approve",
                        headers={"content-type": ctype, **headers})
    message = refused(resp, status)
    assert message.split(":")[0] in ("Origin", "Host", "Sec-Fetch-Site")


def test_same_origin_and_loopback_names_are_accepted(live: httpx.Client) -> None:
    port = live.base_url.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        resp = live.get("/_sandbox/ledger", headers={"host": host,
                                                     "origin": f"http://{host}"})
        assert resp.status_code == 200, resp.text
    page = live.get("/pay/unknown", headers={"origin": "https://merchant.example"})
    assert page.status_code == 404  # a navigation from the merchant's site is fine
    assert page.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"


def test_admin_token_when_configured() -> None:
    config = SandboxConfig(quiet=True, admin_token="s3cret-token")
    with EmbeddedSandbox(config) as sb, httpx.Client(base_url=sb.url) as client:
        assert client.get("/_sandbox/health").status_code == 200  # readiness: no token
        resp = client.post("/_sandbox/reset")
        assert refused(resp, 401).startswith("X-Sandbox-Token: ")
        assert "s3cret" not in resp.text
        wrong = client.post("/_sandbox/reset", headers={"X-Sandbox-Token": "nope"})
        refused(wrong, 401)
        ok = client.post("/_sandbox/reset", headers={"X-Sandbox-Token": "s3cret-token"})
        assert ok.status_code == 200, ok.text


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "walletctl", "sandbox", "serve", "--port", "0", "-q", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline()


def test_non_loopback_bind_warns_and_requires_the_token(tmp_path: Path) -> None:
    proc = _serve("--host", "0.0.0.0")
    try:
        line = _first_line(proc)
        port = int(line.rsplit(":", 1)[1])
        assert proc.stderr is not None
        warn = [proc.stderr.readline() for _ in range(4)]
        assert warn[0].startswith("WARNING: the sandbox is bound to 0.0.0.0")
        public = re.search(r"public URL \(.*\): (\S+)", warn[1])
        assert public is not None
        assert ":0" not in public.group(1)
        token = warn[2].rsplit(": ", 1)[1].strip()
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(url + "/_sandbox/health").status_code == 200
        assert httpx.post(url + "/_sandbox/reset").status_code == 401
        # the CLI's sandbox commands send the token (option or environment)
        cli = [sys.executable, "-m", "walletctl", "sandbox", "reset", "--url", url]
        denied = subprocess.run(cli, capture_output=True, text=True, timeout=60)
        assert denied.returncode != 0
        assert "X-Sandbox-Token" in denied.stderr
        ok = subprocess.run(cli, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "WALLETCTL_SANDBOX_TOKEN": token})
        assert ok.returncode == 0, ok.stderr
        ok = subprocess.run([*cli, "--admin-token", token], capture_output=True, text=True,
                            timeout=60)
        assert ok.returncode == 0, ok.stderr
        redirect = httpx.post(url + "/api/v5/checkout", headers=JSON,
                              content=json.dumps(make_checkout_body("NL-1")))
        assert redirect.json()["redirectUrl"].startswith(public.group(1) + "/pay/")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_loopback_serve_prints_no_warning_and_needs_no_token() -> None:
    proc = _serve()
    try:
        line = _first_line(proc)
        url = line.split(" on ", 1)[1].strip()
        assert httpx.post(url + "/_sandbox/reset").status_code == 200
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=10)
    assert "WARNING" not in err


@pytest.mark.parametrize("path", ["/api/v5/checkout", "/api/v5/publicKeys", "/_sandbox/faults",
                                  "/demo/merchant/api/result", "/pay/token"])
def test_body_limit_while_reading(live: httpx.Client, path: str) -> None:
    """Announced (Content-Length) or streamed (chunked), a body over 1 MB is a 413; memory
    stays bounded (benchmarks/sandbox_memory.py measures the server's peak RSS)."""
    big = b"x" * 1_000_001
    refused(live.post(path, content=big), 413)
    refused(live.post(path, content=iter([big[:600_000], big[600_000:]])), 413)


def test_own_api_key_leaves_no_default_service_secret() -> None:
    import base64

    def basic(secret: str) -> dict[str, str]:
        token = base64.b64encode(f"shop-user:{secret}".encode()).decode()
        return {"authorization": f"Basic {token}", "content-type": "application/json"}

    body = json.dumps({"merchantId": MERCHANT_ID, "storeId": STORE_ID})
    for config, good in ((SandboxConfig(quiet=True, api_key="own-key"), "own-key"),
                         (SandboxConfig(quiet=True, api_key="own-key",
                                        service_secret="svc-secret"), "svc-secret")):
        with EmbeddedSandbox(config) as sb:
            url = sb.url + "/api/v5/publicKeys"
            refused(httpx.post(url, content=body, headers=basic("sandbox-secret")), 401)
            assert httpx.post(url, content=body, headers=basic(good)).status_code == 200
